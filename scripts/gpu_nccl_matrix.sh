#!/usr/bin/env bash
# Device session: builds symmcomm against the system NCCL and against a second NCCL (default
# .nccl-2.30.7, a copy of ../shared/nccl-2.30.7 carried to the device), runs CTest on each (the
# multi-rank tier included: ranks share the GPU, see tests/multi_rank/main.cpp) and keeps one
# NCCL tuning log of a multi-rank run on the second NCCL. Logs under ${OUT:-./gpu-out}.
# Usage: scripts/gpu_nccl_matrix.sh [ctest args...]   (e.g. -L multi_rank)
# SYMMCOMM_BUILD_ONLY=1 stops after the builds (a later call on the warm machine reuses them);
# SYMMCOMM_SUITES="system second" (default both) picks the suites; SYMMCOMM_NO_TUNING_LOG=1 skips
# the tuning log. Builds carry this GPU's architecture alone (symmcomm_dev_architectures).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
out="${OUT:-$SYMMCOMM_ROOT/gpu-out}"
second="${SYMMCOMM_SECOND_NCCL:-$SYMMCOMM_ROOT/.nccl-2.30.7}"
symmcomm_repair_nccl_links "$second"
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 SYMMCOMM_REQUIRE_GPU=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv;
  nvcc --version | tail -1; mpirun --version | head -1; } >"$out/machine.txt" 2>&1
cat "$out/machine.txt"

# Build the suites' trees in parallel, the cores shared.
suites=" ${SYMMCOMM_SUITES:-system second} "
jobs=$(nproc)
[[ "$suites" == *" system "* && "$suites" == *" second "* ]] && jobs=$(( jobs / 2 ))
build() {  # build <dir> <tag> [cmake args...]
  local dir="$1" tag="$2"; shift 2
  local generator=(-G Ninja)
  cmake -S "$SYMMCOMM_ROOT" -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DSYMMCOMM_WARNINGS_AS_ERRORS=ON -DSYMMCOMM_WITH_MPI=ON -DSYMMCOMM_TORCH_OPS=OFF \
    -DCMAKE_CUDA_ARCHITECTURES="$(symmcomm_dev_architectures)" "$@" >"$out/build-$tag.log" 2>&1 &&
    cmake --build "$dir" --parallel "$jobs" >>"$out/build-$tag.log" 2>&1
}
p1="" p2=""
[[ "$suites" != *" system "* ]] || { build "$SYMMCOMM_ROOT/build-dev" system & p1=$!; }
[[ "$suites" != *" second "* ]] || { build "$SYMMCOMM_ROOT/build-nccl2" second -DNCCL_ROOT="$second" & p2=$!; }
ok=1
[ -z "$p1" ] || wait $p1 || { echo "build against the system NCCL failed"; tail -40 "$out/build-system.log"; ok=0; }
[ -z "$p2" ] || wait $p2 || { echo "build against $second failed"; tail -40 "$out/build-second.log"; ok=0; }
[ $ok = 1 ] || exit 1
grep -h "Found NCCL" "$out"/build-*.log
echo "builds OK"
[ "${SYMMCOMM_BUILD_ONLY:-0}" = 1 ] && exit 0

if [ -n "${SYMMCOMM_DIAG_FILTER:-}" ]; then
  # Where a multi-rank case stops: blocking launches, so the last logged call is the last that
  # completed its launch.
  LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}" CUDA_LAUNCH_BLOCKING=1 SYMMCOMM_LOG=debug \
    SYMMCOMM_WAIT_TIMEOUT_S=10 timeout -s INT 40 mpirun --allow-run-as-root --oversubscribe \
    --bind-to none -n 2 "$SYMMCOMM_ROOT/build-nccl2/tests/symmcomm_multi_rank_tests" \
    --gtest_filter="$SYMMCOMM_DIAG_FILTER" >"$out/diag.log" 2>&1
  grep -vE "^\[symmcomm:debug\] (all_gather|quantize)" "$out/diag.log" | cut -c1-220 | tail -25
fi

# NCCL's own account of what it launched, ranks sharing the GPU on the second NCCL.
[ "${SYMMCOMM_NO_TUNING_LOG:-0}" = 1 ] || LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING \
  SYMMCOMM_EXPECT_SYMMETRIC=1 timeout 300 mpirun --allow-run-as-root --oversubscribe \
  --bind-to none -n 2 "$SYMMCOMM_ROOT/build-nccl2/tests/symmcomm_multi_rank_tests" \
  --gtest_filter='MultiRankAllGather.Nvfp4*:MultiRankReduceScatter.Bf16*' >"$out/nccl-tuning-n2.log" 2>&1
[ -f "$out/nccl-tuning-n2.log" ] && grep -E "Symmetric|symmetric|isAllDirectP2p|PASSED|FAILED" "$out/nccl-tuning-n2.log" | sort | uniq -c | sort -rn | head -12
rc=0
run_suite() {  # run_suite <dir> <tag> [env...]
  local dir="$1" tag="$2"; shift 2
  (cd "$dir" && env "$@" timeout "${SYMMCOMM_SUITE_TIMEOUT_S:-1800}" ctest --output-on-failure \
     --timeout 900 "${ctest_args[@]}" \
     >"$out/ctest-$tag.log" 2>&1) || rc=1
  echo "== $tag: $(grep -E 'tests passed|tests failed' "$out/ctest-$tag.log")"
  grep -E "^\s+[0-9]+ - .*(Failed|Timeout|Not Run)" "$out/ctest-$tag.log" | head -20
  grep -h "symmcomm multi-rank tests:" "$out/ctest-$tag.log" | sort -u
  # The skipped tests and why; a skip no reason allows fails the run.
  (export "$@"; symmcomm_ctest_verdict "$dir" "$out/ctest-$tag.log") | tee "$out/skips-$tag.txt" ||
    rc=1
}
ctest_args=("$@")
[[ "$suites" != *" system "* ]] || run_suite "$SYMMCOMM_ROOT/build-dev" system \
  SYMMCOMM_ALLOWED_SKIPS="$SYMMCOMM_SKIPS_BY_DESIGN|$SYMMCOMM_SKIPS_WITHOUT_LSA"
[[ "$suites" != *" second "* ]] || run_suite "$SYMMCOMM_ROOT/build-nccl2" second LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}" \
  SYMMCOMM_EXPECT_SYMMETRIC=1 SYMMCOMM_ALLOWED_SKIPS="$SYMMCOMM_SKIPS_BY_DESIGN"

exit $rc
