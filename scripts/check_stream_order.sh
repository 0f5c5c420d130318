#!/usr/bin/env bash
# Refuses host<->device copies and fills that are not ordered with the stream using the memory:
# cudaMemcpy( / cudaMemset( (and their 2D forms) in bench/, tests/ and examples/. They run on the
# legacy stream, which does not order work on a cudaStreamNonBlocking stream, and a pageable
# host-to-device cudaMemcpy may return before its DMA lands (an in-place check read
# its input before the restore landed, 1 run in 6-20). Use cudaMemcpyAsync / cudaMemsetAsync on
# the stream that uses the memory (tests/support/ordered_copy.hpp), or mark a line that is right
# on purpose with `stream-order-ok: <why>` on it or on the line above.
# Usage: scripts/check_stream_order.sh [root]   (exit 1 and a list when something is found)
set -euo pipefail
root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
cd "$root"
mapfile -t files < <(find bench tests examples -type f \
  \( -name '*.cpp' -o -name '*.cu' -o -name '*.hpp' -o -name '*.cuh' -o -name '*.h' -o -name '*.c' \) \
  -not -path 'bench/results/*' | sort)
found=$(awk '
  FNR == 1 { prev = "" }
  {
    code = $0
    sub(/\/\/.*/, "", code)
    if (code ~ /(^|[^A-Za-z0-9_])cudaMem(cpy|set)(2D)?[ \t]*\(/ &&
        $0 !~ /stream-order-ok:/ && prev !~ /stream-order-ok:/) {
      printf "%s:%d: %s\n", FILENAME, FNR, $0
    }
    prev = $0
  }' "${files[@]}")
if [ -n "$found" ]; then
  echo "check_stream_order: copies or fills not ordered with a stream (use cudaMemcpyAsync /" >&2
  echo "cudaMemsetAsync on the stream that uses the memory, or mark 'stream-order-ok: why'):" >&2
  echo "$found" >&2
  exit 1
fi
echo "check_stream_order: ${#files[@]} files in bench/ tests/ examples/, every copy and fill ordered with a stream"
