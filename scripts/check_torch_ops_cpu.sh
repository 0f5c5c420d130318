#!/usr/bin/env bash
# Checks libsymmcomm_torch.so's operators on a machine without a GPU: builds ops.cpp against the
# PyTorch of $SYMMCOMM_TORCH_PYTHON (default /usr/bin/python3; a CPU-only PyTorch such as
# Debian's python3-torch does) with tests/torch_ops/cpu_check_support.cpp in place of
# libc10_cuda, then runs tests/torch_ops/check_registration.py (the signatures against the
# schemas, and the operators' own argument checks on CPU tensors). The device runs the real
# library (python/tests/test_ops.py). Then tests/torch_ops/fuzz_operators.py calls every
# operator with random arguments: exceptions only, never a crash; and, unsanitized, the decode
# step's expert stand-in (tests/unit/bench/test_expert_standin.py). SYMMCOMM_TORCH_CHECK_SANITIZE=1
# builds and runs it all under ASan+UBSan; SYMMCOMM_TORCH_CHECK_CXXFLAGS adds compiler flags.
# Usage: [BUILD=build-test] [SYMMCOMM_TORCH_CHECK_SANITIZE=1] scripts/check_torch_ops_cpu.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$SYMMCOMM_ROOT"
py="${SYMMCOMM_TORCH_PYTHON:-/usr/bin/python3}"
# Debian's CPU-only PyTorch and its headers, for the default interpreter.
if [ "$py" = /usr/bin/python3 ]; then
  SYMMCOMM_PACKAGES=(python3-torch libtorch-dev)
  symmcomm_install_missing
fi
build="${BUILD:-build-test}"
paths=$("$py" cmake/torch_paths.py)
if [[ "$paths" != ok\;* ]]; then
  echo "check_torch_ops_cpu: no PyTorch for $py (${paths#missing;}): nothing checked" >&2
  exit 2
fi
IFS=';' read -r _ version abi libdir inc1 inc2 <<<"$paths"
[ -f "$build/src/libsymmcomm_c.so" ] || cmake --build "$build" --target symmcomm_c
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Debian's headers name a CMake-generated header of c10_cuda's that a CPU build does not ship.
mkdir -p "$out/shim/c10/cuda/impl"
echo '#pragma once' >"$out/shim/c10/cuda/impl/cuda_cmake_macros.h"
# c10/cuda's headers include the CUDA runtime's: the toolkit the build found, else the usual places.
cuda_inc=""
found=$(sed -n 's/^FIND_PACKAGE_MESSAGE_DETAILS_CUDAToolkit:INTERNAL=\[\([^]]*\)\].*/\1/p' \
  "$build/CMakeCache.txt" 2>/dev/null || true)
nvcc_dir=$(dirname "${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}")
for dir in ${found//;/ } ${CUDA_HOME:+"$CUDA_HOME/include"} ${CUDA_PATH:+"$CUDA_PATH/include"} \
  "$nvcc_dir/../include" "$nvcc_dir/../targets/$(uname -m)-linux/include" /usr/local/cuda/include \
  /usr/local/cuda-*/targets/"$(uname -m)"-linux/include /usr/include; do
  if [ -n "$dir" ] && [ -f "$dir/cuda_runtime_api.h" ]; then
    cuda_inc=$dir
    break
  fi
done
if [ -z "$cuda_inc" ]; then
  header=$(find /usr/local /opt /usr/include -maxdepth 6 -name cuda_runtime_api.h 2>/dev/null | head -1)
  [ -z "$header" ] || cuda_inc=$(dirname "$header")
fi
if [ -z "$cuda_inc" ]; then
  echo "check_torch_ops_cpu: no cuda_runtime_api.h (looked in the CUDA toolkit of $build," \
    "\$CUDA_HOME, \$CUDA_PATH, beside nvcc, under /usr/local, /opt, /usr/include);" \
    "c10/cuda's headers need it" >&2
  exit 1
fi
echo "check_torch_ops_cpu: CUDA headers from $cuda_inc"
# SYMMCOMM_TORCH_CHECK_SANITIZE=1: the library built with ASan+UBSan, their runtimes preloaded
# into Python (PyTorch itself is not instrumented).
sanitize=""
if [ "${SYMMCOMM_TORCH_CHECK_SANITIZE:-0}" = 1 ]; then
  sanitize="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
  preload="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libubsan.so)"
fi
g++ -std=c++17 -shared -fPIC -O1 -D_GLIBCXX_USE_CXX11_ABI="$abi" -DSYMMCOMM_TORCH_CPU_CHECK \
  $sanitize ${SYMMCOMM_TORCH_CHECK_CXXFLAGS:-} -Wall -Wextra -Wconversion -Wno-sign-conversion \
  -isystem "$inc1" -isystem "$inc2" -isystem "$out/shim" -isystem "$cuda_inc" \
  -Iinclude -I"$build/include" -Isrc/torch_ops src/torch_ops/library.cpp src/torch_ops/ops.cpp \
  src/torch_ops/moe_ops.cpp \
  src/torch_ops/tensors.cpp src/torch_ops/communicators.cpp \
  tests/torch_ops/cpu_check_support.cpp -o "$out/libsymmcomm_torch.so" -L"$build/src" -lsymmcomm_c \
  -L"$libdir" -lc10 -ltorch_cpu -Wl,-rpath,"$libdir"
echo "check_torch_ops_cpu: built against PyTorch $version${sanitize:+ (ASan+UBSan)}"
run_py() {
  env PYTHONPATH=python SYMMCOMM_LIBRARY="$PWD/$build/src/libsymmcomm_c.so" \
    SYMMCOMM_TORCH_LIBRARY="$out/libsymmcomm_torch.so" ${sanitize:+LD_PRELOAD="$preload"} \
    ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 "$py" "$@"
}
"$py" scripts/check_runtime_copies.py "$out/libsymmcomm_torch.so"
run_py tests/torch_ops/check_registration.py
run_py tests/torch_ops/fuzz_operators.py "${SYMMCOMM_FUZZ_SEED:-${sanitize:+1}0}" 3000
# The decode step's expert stand-in (bench/python/expert_standin.py), which CTest skips where its
# python3 has no PyTorch: once, with this PyTorch (no library of ours involved).
[ -n "$sanitize" ] || "$py" tests/unit/bench/test_expert_standin.py
