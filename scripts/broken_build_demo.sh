#!/usr/bin/env bash
# Shows that each GPU check family fails on a deliberately broken build: applies one
# mutation at a time to the source, rebuilds what the check needs, runs the check (which must
# FAIL), restores the file. Then rebuilds the unmodified tree and runs the same checks (which
# must pass). Needs a GPU and a configured build (default build-dev, system NCCL). Prints one
# verdict line per mutation; exits 1 if a check passed on a broken build or failed on the
# restored one. SYMMCOMM_DEMO_SKIP_RESTORED=1 skips the restored run (when the full suites of the
# same tree ran in the session); SYMMCOMM_DEMO_NCCL230_LIB=<NCCL 2.30 lib dir> (with a build
# against it) adds the multi-rank abort check. Usage: scripts/broken_build_demo.sh [build-dir]
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
build="${1:-$SYMMCOMM_ROOT/build-dev}"
out="${OUT:-$SYMMCOMM_ROOT/gpu-out}"
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
targets=(symmcomm_gpu_tests symmcomm_multi_rank_tests symmcomm-bench)
rc=0
checks=()

# run_check <name> <command...>: the command's exit status, its output in $out/demo-<name>.log
run_check() {
  local name="$1"; shift
  (cd "$build" && timeout 300 "$@") >"$out/demo-$name.log" 2>&1
}

# mutate <name> <file> <perl substitution> <check command...>
mutate() {
  local name="$1" file="$SYMMCOMM_ROOT/$2" expr="$3"; shift 3
  if [ -n "${SYMMCOMM_DEMO_ONLY:-}" ] && ! [[ "$name" =~ ${SYMMCOMM_DEMO_ONLY} ]]; then return; fi
  checks+=("$name|$*")
  cp "$file" "$file.demo-orig"
  perl -0pi -e "$expr" "$file"
  if cmp -s "$file" "$file.demo-orig"; then
    echo "$name: the mutation did not apply to $2 (script out of date)"; rc=1
  elif ! cmake --build "$build" --target "${targets[@]}" >"$out/demo-$name-build.log" 2>&1; then
    echo "$name: the broken build did not compile"; tail -5 "$out/demo-$name-build.log"; rc=1
  elif run_check "$name" "$@"; then
    if grep -qE "Running 0 tests|No tests were found" "$out/demo-$name.log"; then
      echo "$name: the check selected no test (script out of date)"
    else
      echo "$name: check PASSED on a broken build: it cannot see this bug"
    fi
    rc=1
  else
    echo "$name: check FAILED on the broken build, as it must:"
    grep -E "Failure|Expected|Which is|Actual|wrong|FAILED|differ" "$out/demo-$name.log" |
      grep -v "^\[  FAILED  \] [0-9]* test" | head -4 | cut -c1-200 | sed 's/^/    /'
  fi
  mv "$file.demo-orig" "$file"
  touch "$file"  # newer than the broken objects: the next build recompiles it
}

gpu_tests=(./tests/symmcomm_gpu_tests)
mutate codecs-amax-one-cta src/formats/codecs.cu \
  's/if \(\(threadIdx\.x & 31\) == 0\) atomicMax\(/if ((threadIdx.x & 31) == 0 \&\& blockIdx.x == 0) atomicMax(/' \
  "${gpu_tests[@]}" --gtest_filter='*Nvfp4Kernels.*:*Fp8Kernels.*'
mutate collectives-requantize-short src/collectives/reduce_scatter.cpp \
  's/out\.scale, out\.count\},\n(\s+)ScaleMode::Compute/out.scale, out.count - 16},\n$1ScaleMode::Compute/' \
  "${gpu_tests[@]}" --gtest_filter='Collectives.OneRankReduceScatterOfEveryFormat'
mutate bench-gather-half-the-scales src/collectives/all_gather.cpp \
  's/scales\[r\] = counts\[r\] \/ kNvfp4BlockSize;/scales[r] = counts[r] \/ (2 * kNvfp4BlockSize);/' \
  ./bench/symmcomm-bench --op allgather -d nvfp4 -b 1M -e 1M -n 2 -w 1 -c 1
mutate pool-stream-ordered-free-no-wait src/memory/symm_allocator.cpp \
  's/SYMMCOMM_CUDA_TRY\(cudaStreamWaitEvent\(stream, f\.event, 0\)\);/(void)0;/' \
  "${gpu_tests[@]}" --gtest_filter='SymmAllocator.StreamOrdered*'
# The abort word not polled: a kernel waiting for a flag that never comes is not ended by it
# (one GPU, any NCCL line); with a 2.30 build (build-nccl2) the multi-rank abort tests too.
mutate abort-word-not-polled src/kernels/lsa_policy.cuh \
  's/return word != nullptr && \*static_cast<const volatile std::uint32_t\*>\(word\) != 0;/return false;/' \
  "${gpu_tests[@]}" --gtest_filter='AbortWord.*'
if [ -n "${SYMMCOMM_DEMO_NCCL230_LIB:-}" ]; then
  mutate abort-word-not-polled-ranks src/kernels/lsa_policy.cuh \
    's/return word != nullptr && \*static_cast<const volatile std::uint32_t\*>\(word\) != 0;/return false;/' \
    env LD_LIBRARY_PATH="$SYMMCOMM_DEMO_NCCL230_LIB" NCCL_MULTI_RANK_GPU_ENABLE=1 \
    SYMMCOMM_WAIT_TIMEOUT_S=20 mpiexec --allow-run-as-root --oversubscribe --bind-to none -n 2 \
    ./tests/symmcomm_multi_rank_tests --gtest_filter='MultiRankAbort.*'
fi
mutate multi-rank-reduce-shard-scales src/collectives/reduce_scatter.cpp \
  's/ws_scales \+ r \* \(my_count \/ kNvfp4BlockSize\)/ws_scales/' \
  ctest --output-on-failure -R 'bench\.multi_rank\.reducescatter\.nvfp4\.n2|multi_rank\.MultiRankReduceScatter\.n2'

if [ "${SYMMCOMM_DEMO_SKIP_RESTORED:-0}" = 1 ]; then
  echo "restored tree: not re-run here (SYMMCOMM_DEMO_SKIP_RESTORED=1: the suites of the same tree ran)"
  exit "$rc"
fi
echo "restored tree: rebuilding and running the same checks"
if ! cmake --build "$build" --target "${targets[@]}" >"$out/demo-restored-build.log" 2>&1; then
  echo "the restored tree did not build"; exit 1
fi
for entry in "${checks[@]}"; do
  name="${entry%%|*}"
  read -r -a cmd <<<"${entry#*|}"
  if run_check "restored-$name" "${cmd[@]}"; then
    echo "restored $name: passes"
  else
    echo "restored $name: FAILS on the unmodified tree"; rc=1
  fi
done
exit "$rc"
