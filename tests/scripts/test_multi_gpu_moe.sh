#!/usr/bin/env bash
# scripts/multi_gpu_moe.sh where fewer than 2 GPUs are listed (a stand-in nvidia-smi listing one):
# it names the count and what it needs, exits 1, and builds nothing.
# Usage: test_multi_gpu_moe.sh
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/out"
cat >"$work/bin/nvidia-smi" <<'STUB'
#!/bin/sh
[ "$1" = -L ] && echo "GPU 0: stand-in (UUID: GPU-0)"
exit 0
STUB
chmod +x "$work/bin/nvidia-smi"
out=$(PATH="$work/bin:$PATH" OUT="$work/out" bash "$root/scripts/multi_gpu_moe.sh" 60 2>&1)
rc=$?
failures=0
if [ "$rc" != 1 ]; then
  echo "FAIL: exit $rc (wanted 1): $out"
  failures=$((failures + 1))
fi
if ! grep -q "1 GPU(s) here; this script needs 2 or more (one rank per GPU)" <<<"$out"; then
  echo "FAIL: no reason naming the GPU count: $out"
  failures=$((failures + 1))
fi
if grep -q "== built" <<<"$out"; then
  echo "FAIL: it built with one GPU: $out"
  failures=$((failures + 1))
fi
[ "$failures" = 0 ] && echo "ok: one GPU refused by name, nothing built"
exit "$failures"
