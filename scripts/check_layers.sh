#!/usr/bin/env bash
# Checks the include graph of the library against its layers (README, "Layout"):
#   core < formats < comm < memory < kernels < collectives < tools (C ABI, umbrella header)
#   < bindings (the C++ PyTorch operators, over the C ABI)
# A file may include its own layer and the layers below it, never one above. Prints each
# upward include and exits 1 if there is any. Usage: scripts/check_layers.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
layer_of() {  # layer_of <repo path> -> rank and name, or nothing for files outside the library
  case "$1" in
    include/symmcomm/formats/*|src/formats/*) echo "1 formats" ;;
    include/symmcomm/comm/*|src/comm/*) echo "2 comm" ;;
    include/symmcomm/memory/*|src/memory/*) echo "3 memory" ;;
    src/kernels/*) echo "4 kernels" ;;
    src/testing/symmcomm/testing/fault_injection.hpp) echo "3 memory" ;;
    src/testing/symmcomm/testing/loopback.hpp) echo "5 collectives" ;;
    include/symmcomm/collectives/*|src/collectives/*) echo "5 collectives" ;;
    include/symmcomm/c_api.h|src/c_api/*|src/tools/*|include/symmcomm/symmcomm.hpp) echo "6 tools" ;;
    src/torch_ops/*) echo "7 bindings" ;;
    include/symmcomm/*|src/core/*) echo "0 core" ;;
  esac
}
resolve() {  # resolve <including file> <included name> -> repo path of the included file
  local from="$1" name="$2"
  for candidate in "$(dirname "$from")/$name" "include/$name" "src/$name" "src/testing/$name"; do
    if [ -f "$candidate" ]; then realpath --relative-to=. "$candidate"; return; fi
  done
}
bad=0
while IFS= read -r file; do
  read -r from_rank from_name <<<"$(layer_of "$file")"
  [ -n "${from_rank:-}" ] || continue
  while IFS= read -r name; do
    target=$(resolve "$file" "$name")
    [ -n "$target" ] || continue  # generated (version.hpp) or a system header
    read -r to_rank to_name <<<"$(layer_of "$target")"
    [ -n "${to_rank:-}" ] || continue
    if [ "$to_rank" -gt "$from_rank" ]; then
      echo "upward include: $file ($from_name) includes $target ($to_name)"
      bad=1
    fi
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file")
done < <(git ls-files include src | grep -E '\.(h|hpp|cuh|cpp|cu)$')
if [ "$bad" = 0 ]; then
  echo "check_layers: no include points to a higher layer"
fi
exit "$bad"
