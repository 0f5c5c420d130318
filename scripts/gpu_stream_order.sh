#!/usr/bin/env bash
# Device check of stream ordering: after scripts/gpu_nccl_matrix.sh has built
# build-dev (system NCCL) and build-nccl2 (NCCL 2.30.7), runs symmcomm-bench's stress check
# (`-c 200`: 200 checks per size and column, fresh inputs each) at 2, 4 and 8 ranks sharing the
# GPU, 5 times each on 2.30.7 and once on the system NCCL, the multi-rank tier's
# MultiRankStreamOrder suite on both, and the same stress check with a symmcomm-bench rebuilt
# with the old unordered upload (SYMMCOMM_BENCH_LEGACY_UPLOAD), which must fail.
# Logs under ${OUT:-./gpu-out}; one line per run on stdout.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
out="${OUT:-$SYMMCOMM_ROOT/gpu-out}"
second="${SYMMCOMM_SECOND_NCCL:-$SYMMCOMM_ROOT/.nccl-2.30.7}"
symmcomm_repair_nccl_links "$second"
repeats="${SYMMCOMM_STRESS_REPEATS:-5}"
parts="${SYMMCOMM_STRESS_PARTS:-legacy bench tier}"   # which parts to run
tier_ranks="${SYMMCOMM_STRESS_TIER_RANKS:-2 4 8}"
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 SYMMCOMM_WAIT_TIMEOUT_S=30
log="$out/stream_order.log"
: >"$log"
stress() {  # stress <tag> <bench> <ranks> <op> <dtype> [env...]
  local tag="$1" bench="$2" n="$3" op="$4" dtype="$5"; shift 5
  local status
  env "$@" timeout 170 mpirun --allow-run-as-root --oversubscribe --bind-to none -n "$n" \
    "$bench" --op "$op" -d "$dtype" -b 64K -e 64K -n 3 -w 1 -c 200 >"$out/stress.tmp" 2>&1
  status=$?
  local row verdict
  row=$(grep -E "^ +[0-9]+ +[0-9]+ " "$out/stress.tmp" | head -1 | tr -s ' ')
  verdict=$(grep -E "Out of bounds values" "$out/stress.tmp" | tr -s ' ')
  echo "$tag n=$n $op $dtype: exit $status |$row |$verdict" | tee -a "$log"
  { echo "=== $tag n=$n $op $dtype"; cat "$out/stress.tmp"; } >>"$out/stress_full.log"
}
second_env=(LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}")
bench2="$SYMMCOMM_ROOT/build-nccl2/bench/symmcomm-bench"
bench1="$SYMMCOMM_ROOT/build-dev/bench/symmcomm-bench"

# The old upload, rebuilt: the stress check must catch it.
if [[ " $parts " == *" legacy "* ]]; then
legacy="$SYMMCOMM_ROOT/build-nccl2/legacy-symmcomm-bench"
if cmake -S "$SYMMCOMM_ROOT" -B "$SYMMCOMM_ROOT/build-nccl2" -DSYMMCOMM_BENCH_LEGACY_UPLOAD=ON >/dev/null 2>&1 &&
   cmake --build "$SYMMCOMM_ROOT/build-nccl2" --target symmcomm-bench >"$out/legacy-build.log" 2>&1; then
  cp "$bench2" "$legacy"
else
  echo "legacy build failed"; tail -20 "$out/legacy-build.log"
fi
cmake -S "$SYMMCOMM_ROOT" -B "$SYMMCOMM_ROOT/build-nccl2" -DSYMMCOMM_BENCH_LEGACY_UPLOAD=OFF >/dev/null 2>&1
cmake --build "$SYMMCOMM_ROOT/build-nccl2" --target symmcomm-bench >>"$out/legacy-build.log" 2>&1 ||
  { echo "rebuild of the fixed bench failed"; exit 1; }
for n in 2 4 8; do
  [ -x "$legacy" ] && stress "legacy-upload 2.30.7" "$legacy" "$n" reducescatter bf16 "${second_env[@]}"
done
fi
[[ " $parts " == *" bench "* ]] && for n in 2 4 8; do
  for i in $(seq "$repeats"); do
    stress "fixed 2.30.7 #$i" "$bench2" "$n" reducescatter bf16 "${second_env[@]}"
    stress "fixed 2.30.7 #$i" "$bench2" "$n" allgather nvfp4 "${second_env[@]}"
  done
  stress "fixed system" "$bench1" "$n" reducescatter bf16
  stress "fixed system" "$bench1" "$n" allgather nvfp4
done
[[ " $parts " == *" tier "* ]] && for n in $tier_ranks; do
  for tag in second system; do
    dir="$SYMMCOMM_ROOT/build-dev"; envs=()
    [ "$tag" = second ] && { dir="$SYMMCOMM_ROOT/build-nccl2"; envs=("${second_env[@]}" SYMMCOMM_EXPECT_SYMMETRIC=1); }
    env "${envs[@]}" timeout 170 mpirun --allow-run-as-root --oversubscribe --bind-to none -n "$n" \
      "$dir/tests/symmcomm_multi_rank_tests" --gtest_filter='MultiRankStreamOrder.*' --gtest_color=no \
      >"$out/stress.tmp" 2>&1
    status=$?
    echo "MultiRankStreamOrder $tag n=$n: exit $status; $(grep -E '^\[  (PASSED|FAILED) ' "$out/stress.tmp" | sort -u | tr '\n' ' ')" | tee -a "$log"
    { echo "=== MultiRankStreamOrder $tag n=$n"; cat "$out/stress.tmp"; } >>"$out/stress_full.log"
  done
done
rm -f "$out/stress.tmp"
