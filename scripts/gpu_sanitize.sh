#!/usr/bin/env bash
# compute-sanitizer over symmcomm's GPU tests (device machine; build with scripts/gpu_session.sh
# first). memcheck runs every GPU test except the long leak-cycle and device-exhaustion ones
# (those measure memory, which the sanitizer's own allocations distort); racecheck, synccheck
# and initcheck run the tests of every kernel of symmcomm's own (codecs, local reduce, LSA
# loopback gathers, reduces and fused quantize + gather, scale swizzling and the swizzled-scale
# gathers), since NCCL's kernels are not ours to fix. Writes ${OUT:-./gpu-out}/sanitize_<tool>.log and
# prints one summary line per tool. Exit status: non-zero if any tool reports an error.
# With SYMMCOMM_SANITIZE_RANKS_BUILD (a build against NCCL >= 2.30, e.g. build-nccl2) every tool
# also runs over the production-only kernels (the small-message gather, the push-model
# reduce-scatter, the one-launch device-count kernels) in 2 ranks sharing the GPU, each under
# the sanitizer (NCCL from SYMMCOMM_SECOND_NCCL, default .nccl-2.30.7).
# Usage: [SANITIZE_TIMEOUT=seconds per tool] scripts/gpu_sanitize.sh [build-dir]
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
build="${1:-$SYMMCOMM_ROOT/build-dev}"
out="${OUT:-$SYMMCOMM_ROOT/gpu-out}"
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
if ! command -v compute-sanitizer >/dev/null 2>&1; then
  echo "compute-sanitizer not found (it ships with the CUDA toolkit)" >&2
  exit 2
fi
gpu_tests="$build/tests/symmcomm_gpu_tests"
[ -x "$gpu_tests" ] || { echo "$gpu_tests missing: build first" >&2; exit 2; }
kernels='Nvfp4Kernels*:Fp8Kernels*:CodecKernels*:*LoopbackReduce*:*LsaLoopback*:*Swizzl*'
long='*ThousandCycles*:*ThousandArenaCycles*:*RealDeviceExhaustion*:*ThreadSafe*'
rc=0
run() {  # tool filter
  local tool="$1" filter="$2" log="$out/sanitize_$1.log"
  # memcheck: memory errors only; the CUDA API errors NCCL makes internally during init
  # (cudaFuncGetAttributes probing, cuMemCreate handle-type fallbacks) are not ours to fix.
  local extra=()
  [ "$tool" = memcheck ] && extra=(--report-api-errors no)
  timeout "${SANITIZE_TIMEOUT:-540}" compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 \
    "$gpu_tests" --gtest_filter="$filter" >"$log" 2>&1
  local status=$?
  local summary tests
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
  tests=$(grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$log" | tr '\n' ' ')
  echo "$tool: exit $status; ${summary:-no summary}; $tests"
  [ "$status" -eq 0 ] || rc=1
}
run memcheck "-$long"
run racecheck "$kernels"
run synccheck "$kernels"
run initcheck "$kernels"
ranks_build="${SYMMCOMM_SANITIZE_RANKS_BUILD:-}"
if [ -n "$ranks_build" ]; then
  second="${SYMMCOMM_SECOND_NCCL:-$SYMMCOMM_ROOT/.nccl-2.30.7}"
  symmcomm_repair_nccl_links "$second"
  production='MultiRankSmallGather.ChangingSizes*:MultiRankSmallReduceScatter.*Shards*:MultiRankDeviceCounts.*'
  for tool in memcheck racecheck synccheck initcheck; do
    log="$out/sanitize_ranks_$tool.log"
    extra=()
    [ "$tool" = memcheck ] && extra=(--report-api-errors no)
    env LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}" NCCL_MULTI_RANK_GPU_ENABLE=1 \
      SYMMCOMM_WAIT_TIMEOUT_S=120 timeout "${SANITIZE_TIMEOUT:-540}" \
      mpiexec --allow-run-as-root --oversubscribe --bind-to none -n 2 \
      compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 \
      "$ranks_build/tests/symmcomm_multi_rank_tests" --gtest_filter="$production" >"$log" 2>&1
    status=$?
    echo "$tool over 2 ranks: exit $status; $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" |
      sort | uniq -c | tr '\n' ' ')$(grep -cE "^\[  PASSED  \]" "$log") rank(s) passed"
    [ "$status" -eq 0 ] || rc=1
  done
fi
exit $rc
