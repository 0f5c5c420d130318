#!/usr/bin/env bash
# Compiles symmcomm (the library and the multi-rank tests' objects, warnings as errors) against
# another NCCL's headers, so that neither supported NCCL line can break unnoticed on a machine
# without a GPU. Nothing is linked against that NCCL (a copy may hold its .so links as plain
# files). Default: ../shared/nccl-2.30.7 beside the checkout.
# Usage: scripts/check_nccl_headers.sh [nccl-root]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
root="${1:-$SYMMCOMM_ROOT/../shared/nccl-2.30.7}"
if [ ! -f "$root/include/nccl.h" ]; then
  echo "check_nccl_headers: SKIPPED: no NCCL at $root (include/nccl.h missing)" >&2
  # A checkout without ../shared beside it cannot run this check; say so, and fail only where
  # the caller insists.
  [ "${SYMMCOMM_REQUIRE_NCCL_HEADERS:-0}" = 1 ] && exit 1
  exit 0
fi
version=$(awk '/^#define NCCL_(MAJOR|MINOR|PATCH) /{printf "%s%s", sep, $3; sep="."}' \
  "$root/include/nccl.h")
echo "check_nccl_headers: compiling symmcomm against NCCL $version headers at $root"
dir="$SYMMCOMM_ROOT/build-nccl-headers"
cmake -S "$SYMMCOMM_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSYMMCOMM_WARNINGS_AS_ERRORS=ON -DSYMMCOMM_WITH_MPI=ON -DNCCL_ROOT="$root" \
  -DSYMMCOMM_BUILD_BENCH=OFF -DSYMMCOMM_BUILD_EXAMPLES=OFF -DCMAKE_CUDA_ARCHITECTURES=90 \
  >"$dir.log" 2>&1 ||
  { tail -30 "$dir.log"; exit 1; }
picked=$(sed -n 's/^NCCL_INCLUDE_DIR:PATH=//p' "$dir/CMakeCache.txt")
[ "$(realpath "$picked")" = "$(realpath "$root/include")" ] ||
  { echo "check_nccl_headers: CMake picked NCCL headers at '$picked', not $root/include"; exit 1; }
if grep -q "does not compile with this CUDA" "$dir.log"; then
  echo "check_nccl_headers: nccl_device.h of NCCL $version does not compile:"; tail -30 "$dir.log"
  exit 1
fi
objects=$(cd "$dir" && ninja -t targets all | grep -oE '^tests/CMakeFiles/symmcomm_multi_rank_tests\.dir/[^:]+\.o' || true)
(cd "$dir" && ninja symmcomm $objects)
echo "check_nccl_headers: NCCL $version headers OK"
