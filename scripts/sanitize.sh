#!/usr/bin/env bash
# CPU sanitizers over the CPU test suite: AddressSanitizer + UndefinedBehaviorSanitizer, then
# ThreadSanitizer (the registry, the pool's bookkeeping and logging are hammered from several
# threads there). GPU tests skip without a GPU; on a GPU machine use compute-sanitizer instead.
# Usage: scripts/sanitize.sh [asan|tsan|all]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
what="${1:-all}"
run() {
  local name="$1" flags="$2"
  local dir="$SYMMCOMM_ROOT/build-$name"
  # The sanitizers interpose the C++ runtime: keep libsymmcomm_c on the shared one here.
  cmake -S "$SYMMCOMM_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSYMMCOMM_BUILD_BENCH=OFF \
    -DSYMMCOMM_BUILD_EXAMPLES=OFF -DCMAKE_CXX_FLAGS="$flags -fno-omit-frame-pointer" \
    -DSYMMCOMM_C_STATIC_RUNTIME=OFF -DCMAKE_CUDA_ARCHITECTURES="$(symmcomm_dev_architectures)" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" >/dev/null
  cmake --build "$dir" --parallel "$(nproc)" >/dev/null
  (cd "$dir" && ctest --output-on-failure -L cpu -E '^package\.' --parallel "$(nproc)")
}
export NCCL_NVLS_ENABLE=0
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1
if [ "$what" = asan ] || [ "$what" = all ]; then run asan "-fsanitize=address,undefined"; fi
if [ "$what" = tsan ] || [ "$what" = all ]; then run tsan "-fsanitize=thread"; fi
