#!/usr/bin/env bash
# Device session for the small-message all-gather (src/kernels/lsa_ll.hpp) and moe-dp with ranks
# sharing the GPU (NCCL 2.30.7 carried in .nccl-2.30.7): builds build-nccl2, runs the
# multi-rank all-gather tests at 2/4/8 ranks (and with PDL at 4), the single-GPU collectives,
# the all-gather latency sweep (before/after in one run: variant 4 is the barrier kernel) and
# symmcomm-bench --scenario moe-dp --ranks-per-gpu 2/4/8. Logs in ${OUT:-./gpu-out}.
# Usage: [SYMMCOMM_SKIP="tests latency moe_dp"] [SYMMCOMM_MOE_MAX_TOKENS=1024]
#        [SYMMCOMM_MOE_LIMIT_S=150 (seconds per moe-dp run)]
#        [SYMMCOMM_MOE_ARGS="-G 10" (more symmcomm-bench flags)] scripts/gpu_small_gather.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
out="${OUT:-$SYMMCOMM_ROOT/gpu-out}"
second="${SYMMCOMM_SECOND_NCCL:-$SYMMCOMM_ROOT/.nccl-2.30.7}"
symmcomm_repair_nccl_links "$second"
mkdir -p "$out"
want() { [[ " ${SYMMCOMM_SKIP:-} " != *" $1 "* ]]; }
export NCCL_NVLS_ENABLE=0 GTEST_COLOR=no
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u;
  git -C "$SYMMCOMM_ROOT" log -1 --format=%h 2>/dev/null; } >"$out/machine.txt" 2>&1
build="$SYMMCOMM_ROOT/build-nccl2"
{ cmake -S "$SYMMCOMM_ROOT" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSYMMCOMM_WITH_MPI=ON \
    -DNCCL_ROOT="$second" &&
  cmake --build "$build" --parallel "$(nproc)" --target symmcomm_multi_rank_tests \
    symmcomm_micro_bench symmcomm_gpu_tests symmcomm-bench; } >"$out/build.log" 2>&1 ||
  { tail -30 "$out/build.log"; exit 1; }
echo "built ($(date -u +%T))"
shared=(LD_LIBRARY_PATH="$second/lib" NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_P2P_LL_THRESHOLD=1073741824)
ranks() {  # ranks <n> <filter> <log> [env...]
  local n="$1" filter="$2" log="$3"; shift 3
  env "${shared[@]}" SYMMCOMM_EXPECT_SYMMETRIC=1 SYMMCOMM_WAIT_TIMEOUT_S=20 "$@" timeout 120 \
    mpiexec --allow-run-as-root --oversubscribe --bind-to none -n "$n" \
    "$build/tests/symmcomm_multi_rank_tests" --gtest_filter="$filter" >"$log" 2>&1
  echo "== $(basename "$log" .txt): exit $?"
  grep -E "PASSED|FAILED|Failure" "$log" | sort | uniq -c | head -6
  # Every skip with its reason (tests/support/skip_policy.hpp); an unexpected one made it fail.
  sed -n '/^Skipped tests (/,/^[^ ]/p' "$log" | sort -u | head -20
}
# NCCL 2.30.7, ranks sharing the GPU with symmetric windows: only the by-design skips.
symmcomm_allow_skips
if want tests; then
  for n in 2 4 8; do
    ranks "$n" 'MultiRankSmallGather.*:MultiRankAllGather.*:MultiRank.*:MultiRankAbort.*:MultiRankSmallReduceScatter.*' "$out/gather-n$n.txt"
  done
  ranks 4 'MultiRankSmallGather.*' "$out/gather-pdl-n4.txt" SYMMCOMM_LSA_PDL=1
  env LD_LIBRARY_PATH="$second/lib" timeout 150 "$build/tests/symmcomm_gpu_tests" \
    --gtest_filter='Collectives*:*AllGather*' >"$out/gpu-collectives.txt" 2>&1
  echo "== single-GPU collectives: exit $?"; grep -E "PASSED|FAILED" "$out/gpu-collectives.txt" | head -4
fi
if want latency; then
  SYMMCOMM_LATENCY_OPS=AllGather SYMMCOMM_LATENCY_LIMIT_S=60 SYMMCOMM_LATENCY_BACKTRACE=0 \
    OUT="$out/latency" timeout 240 "$SYMMCOMM_ROOT/scripts/gpu_latency.sh" "$build" \
    >"$out/latency.txt" 2>&1
  echo "== latency: exit $?"
  grep -E "^\| AllGather \| [248] \| (1024|4096|16384|65536) " \
    "$out/latency/latency_decode_latency.md" | cut -d'|' -f2-6,11-14
fi
# moe-dp; a run that overruns gets every thread's host backtrace (cuda-gdb) beside its output
# (8 threaded ranks stopped in their first uneven row with no -T message: a rank
# blocked in a host call).
want moe_dp && for n in 2 4 8; do
  f="$out/moe-dp-n$n"
  env "${shared[@]}" "$build/bench/symmcomm-bench" --scenario moe-dp --ranks-per-gpu "$n" \
    --moe-max-tokens "${SYMMCOMM_MOE_MAX_TOKENS:-1024}" -T 30 ${SYMMCOMM_MOE_ARGS:-} \
    --json "$f.json" >"$f.txt" 2>"$f.err" &
  pid=$!
  symmcomm_watch "$pid" "${SYMMCOMM_MOE_LIMIT_S:-150}" "$f.bt" ||
    echo "== moe-dp, $n ranks: overran; host backtraces in $f.bt"
  wait "$pid"
  echo "== moe-dp, $n ranks in one process: exit $?"
  grep -E "^ +(64|256|1024) " "$f.txt"
  [ -s "$f.err" ] && grep -v "^\[symmcomm-bench\] moe-dp" "$f.err" | tail -3
done
