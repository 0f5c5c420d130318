#!/usr/bin/env bash
# tests/support/mpi_gpu_test.sh in a made-up device directory: no node skips with the given code
# and a SYMMCOMM_SKIP reason without running the command, SYMMCOMM_REQUIRE_GPU=1 makes that a
# failure, and a node (nvidia0 or WSL's dxg) runs the command with its own exit status.
# Usage: test_mpi_gpu_test.sh
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
wrapper="$root/tests/support/mpi_gpu_test.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
expect() {  # expect <what> <wanted exit> <wanted output pattern> <dev dir> [env...] -- <cmd...>
  local what="$1" want_rc="$2" want_out="$3" dir="$4"
  shift 4
  local env=()
  while [ "$1" != "--" ]; do env+=("$1"); shift; done
  shift
  local out rc
  out=$(env "${env[@]}" SYMMCOMM_DEV_DIR="$dir" "$wrapper" 2 "$@" 2>&1)
  rc=$?
  if [ "$rc" != "$want_rc" ] || ! grep -qE "$want_out" <<<"$out"; then
    echo "FAIL: $what: exit $rc (wanted $want_rc), output: $out (wanted /$want_out/)"
    failures=$((failures + 1))
  else
    echo "ok: $what"
  fi
}
mkdir -p "$work/none" "$work/nvidia" "$work/wsl"
touch "$work/nvidia/nvidia0" "$work/nvidia/nvidiactl" "$work/wsl/dxg"
touch "$work/none/nvidiactl"  # the control node alone is no GPU
expect "no node: skipped with a reason, command not run" 2 \
  "^SYMMCOMM_SKIP: needs a GPU: no NVIDIA device node" "$work/none" -- echo RAN
expect "no node: the command's output is absent" 2 "^[^R]*$" "$work/none" -- echo RAN
expect "no node under SYMMCOMM_REQUIRE_GPU=1: a failure" 1 "SYMMCOMM_REQUIRE_GPU=1" \
  "$work/none" SYMMCOMM_REQUIRE_GPU=1 -- echo RAN
expect "nvidia0: the command runs" 0 "^RAN$" "$work/nvidia" -- echo RAN
expect "nvidia0: the command's exit status is kept" 7 "" "$work/nvidia" -- sh -c "exit 7"
expect "dxg (WSL): the command runs" 0 "^RAN$" "$work/wsl" -- echo RAN
[ "$failures" = 0 ] || exit 1
echo "test_mpi_gpu_test: all cases passed"
