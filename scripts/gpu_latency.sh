#!/usr/bin/env bash
# Device session: the decode-size latency sweep (bench/micro/latency_ranks_bench.cu) over N NCCL
# ranks sharing GPU 0 on the second NCCL (>= 2.30, NCCL_MULTI_RANK_GPU_ENABLE=1), one rank count
# and collective at a time under a time limit each. A part that runs past its limit gets every
# thread's native backtrace (cuda-gdb) beside its output, then is stopped; the parts' JSON are
# merged into latency.json and tabulated (bench/plot.py --latency). Outputs in ${OUT:-./gpu-out}.
# Usage: [SYMMCOMM_LATENCY_RANKS="2 4 8"] [SYMMCOMM_LATENCY_OPS="Floor AllGather ReduceScatter LsaBarriers"]
#        [SYMMCOMM_LATENCY_BYTES="1024|4096|16384|65536" (sizes per rank; default all)]
#        [SYMMCOMM_LATENCY_LIMIT_S=150] [SYMMCOMM_LATENCY_BACKTRACE=0 (no cuda-gdb on overrun)]
#        scripts/gpu_latency.sh [build dir (build-nccl2)]
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
out="${OUT:-$SYMMCOMM_ROOT/gpu-out}"
second="${SYMMCOMM_SECOND_NCCL:-$SYMMCOMM_ROOT/.nccl-2.30.7}"
symmcomm_repair_nccl_links "$second"
build="${1:-$SYMMCOMM_ROOT/build-nccl2}"
limit="${SYMMCOMM_LATENCY_LIMIT_S:-150}"
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_P2P_LL_THRESHOLD=1073741824
export LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}"
rc=0
parts=()
for n in ${SYMMCOMM_LATENCY_RANKS:-2 4 8}; do
  for op in ${SYMMCOMM_LATENCY_OPS:-Floor AllGather ReduceScatter LsaBarriers}; do
    f="$out/latency_${op}_n$n"
    sizes=""
    [ -n "${SYMMCOMM_LATENCY_BYTES:-}" ] && [ "$op" != Floor ] && [ "$op" != LsaBarriers ] &&
      sizes="bytes:(${SYMMCOMM_LATENCY_BYTES})/"
    "$build/bench/symmcomm_micro_bench" --benchmark_filter="BM_Latency$op/ranks:$n/$sizes" \
      --benchmark_repetitions=5 --benchmark_min_time=0.02s \
      --benchmark_display_aggregates_only=true --benchmark_out="$f.json" \
      --benchmark_out_format=json >"$f.txt" 2>"$f.err" &
    pid=$!
    bt="$f.bt"
    [ "${SYMMCOMM_LATENCY_BACKTRACE:-1}" = 1 ] || bt=""
    symmcomm_watch "$pid" "$limit" "$bt" || { echo "== $op at $n ranks: overran (cases done: $f.txt)"; rc=1; }
    wait "$pid"; prc=$?
    echo "== $op at $n ranks: exit $prc, $(grep -c '_mean' "$f.txt") cases; last progress: $(tail -1 "$f.err")"
    [ "$prc" = 0 ] || { rc=1; grep -v "^\[symmcomm:debug\]" "$f.err" | tail -5; }
    [ -s "$f.json" ] && parts+=("$f.json")
  done
done
[ ${#parts[@]} -gt 0 ] || exit 1
python3 "$SYMMCOMM_ROOT/scripts/merge_benchmark_json.py" "$out/latency.json" "${parts[@]}"
python3 "$SYMMCOMM_ROOT/bench/plot.py" --latency "$out/latency" "$out/latency.json" >/dev/null 2>&1 ||
  echo "(no plot: python3-matplotlib missing; the table follows)"
[ -f "$out/latency_decode_latency.md" ] && cat "$out/latency_decode_latency.md"
exit $rc
