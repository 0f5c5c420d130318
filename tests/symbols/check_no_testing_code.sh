#!/usr/bin/env bash
# The shipped libraries carry no testing code: no symbol of symmcomm's test aids
# (symmcomm::loopback, symmcomm::fault_injection) is defined in libsymmcomm or libsymmcomm_c,
# while the testing library defines them (so that the check can see them when they are there).
# Usage: check_no_testing_code.sh <testing library> <shipped library>...
set -euo pipefail
pattern='symmcomm::(loopback|fault_injection)::'
testing="$1"
shift
defined() { nm -C --defined-only "$1" 2>/dev/null | grep -E " [TtWwDdBbRr] " | grep -E "$pattern" || true; }
if [ -z "$(defined "$testing")" ]; then
  echo "FAIL: $testing defines no $pattern symbol: the check would see nothing"
  exit 1
fi
status=0
for lib in "$@"; do
  found=$(defined "$lib")
  if [ -n "$found" ]; then
    echo "FAIL: $lib carries testing code:"
    echo "$found" | head -5
    status=1
  else
    echo "OK: $lib defines no $pattern symbol"
  fi
done
exit "$status"
