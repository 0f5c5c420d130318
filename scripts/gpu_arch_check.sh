#!/usr/bin/env bash
# Device check of what a build says about the GPU it runs on (src/core/kernel_preload.cpp):
# a PTX-only build (90-virtual) must warn once that every kernel is JIT-compiled and still make
# and probe a communicator; a build with no code for this GPU (100-real on a Hopper) must fail
# making one, naming the architectures it was built for. Both through `symmcomm-info --ranks 1`
# (which makes one communicator); also symmcomm-info's report of the machine on this build.
# Outputs under ${OUT:-./gpu-out}. Usage: OUT=/tmp/o scripts/gpu_arch_check.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
out="${OUT:-$SYMMCOMM_ROOT/gpu-out}"
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
rc=0
build_info() {  # build_info <tag> <architectures>: a build of symmcomm-info for them
  local dir="$SYMMCOMM_ROOT/build-arch-$1"
  cmake -S "$SYMMCOMM_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DSYMMCOMM_BUILD_TESTS=OFF -DSYMMCOMM_BUILD_BENCH=OFF -DSYMMCOMM_BUILD_EXAMPLES=OFF \
    -DCMAKE_CUDA_ARCHITECTURES="$2" >"$out/arch-$1-build.log" 2>&1 &&
    cmake --build "$dir" --parallel "$(nproc)" --target symmcomm_info >>"$out/arch-$1-build.log" 2>&1 ||
    { tail -20 "$out/arch-$1-build.log"; return 1; }
  python3 "$SYMMCOMM_ROOT/scripts/fatbin_archs.py" "$dir/src/libsymmcomm.a" | tee -a "$out/arch-$1.txt"
}
build_info ptx 90-virtual || exit 1
build_info none 100-real || exit 1
info=src/symmcomm-info
"$SYMMCOMM_ROOT/build-arch-ptx/$info" --ranks 1 >"$out/arch-ptx.txt" 2>"$out/arch-ptx.err"
warnings=$(grep -c "carries no SASS for it" "$out/arch-ptx.err")
echo "== PTX-only build: $warnings JIT warning(s); $(grep -E '^  rank 0:' "$out/arch-ptx.txt")"
[ "$warnings" = 1 ] || { echo "expected exactly one JIT warning"; rc=1; }
grep -q "^  rank 0: symmetric memory" "$out/arch-ptx.txt" || { echo "the PTX-only build made no communicator"; rc=1; }
"$SYMMCOMM_ROOT/build-arch-none/$info" --ranks 1 >"$out/arch-none.txt" 2>"$out/arch-none.err"
echo "== no code for this GPU: $(grep -E 'could not run' "$out/arch-none.txt")"
grep -q "none of which this GPU can run" "$out/arch-none.txt" ||
  { echo "the build without code for this GPU did not say so"; rc=1; }
exit "$rc"
