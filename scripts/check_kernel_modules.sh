#!/usr/bin/env bash
# Every library source compiled with kernels registers its module for preloading
# (src/core/kernel_preload.hpp): a .cu file that defines a __global__ function, or includes a
# header that does, must call register_kernel_module. Without it that module's kernels load
# lazily at their first launch, which may wait for the whole device while a peer's collective
# kernel spins (several ranks in one process). Prints each such file; exits 1 if any.
# Usage: scripts/check_kernel_modules.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
has_kernel() { grep -qE '__global__' "$1"; }
bad=0
checked=0
while IFS= read -r file; do
  kernels=0
  has_kernel "$file" && kernels=1
  while IFS= read -r name; do
    for candidate in "$(dirname "$file")/$name" "src/$name"; do
      if [ -f "$candidate" ] && has_kernel "$candidate"; then kernels=1; fi
    done
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file")
  [ "$kernels" = 1 ] || continue
  checked=$((checked + 1))
  if ! grep -q 'register_kernel_module(' "$file"; then
    echo "unregistered kernels: $file has kernels but no register_kernel_module(...) " \
         "(src/core/kernel_preload.hpp)"
    bad=1
  fi
done < <(git ls-files 'src/*.cu')
if [ "$bad" = 0 ]; then
  echo "check_kernel_modules: all $checked source files with kernels register their module"
fi
exit "$bad"
