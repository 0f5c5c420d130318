#!/usr/bin/env bash
# The shipped libraries carry no testing or benchmark code: no symbol of symmcomm's test aids
# (symmcomm::loopback, symmcomm::fault_injection), of the LSA kernels' loopback instantiations
# (LoopbackPolicy, LoopbackPeers) or of the latency benchmark's probe kernels (barriers_only,
# flag_ping_pong and their kernels) is defined in libsymmcomm or libsymmcomm_c, while the testing
# library defines the test aids and the loopback instantiations (so that the check can see them
# when they are there).
# Usage: check_no_testing_code.sh <testing library> <shipped library>...
set -euo pipefail
aids='symmcomm::(loopback|fault_injection)::'
loopback='LoopbackPolicy|LoopbackPeers'
probes='barriers_only|flag_ping_pong|barriers_kernel|ping_pong_kernel'
pattern="$aids|$loopback|$probes"
testing="$1"
shift
defined() { nm -C --defined-only "$1" 2>/dev/null | grep -E " [TtWwDdBbRr] " | grep -E "$2" || true; }
for must in "$aids" "$loopback"; do
  if [ -z "$(defined "$testing" "$must")" ]; then
    echo "FAIL: $testing defines no symbol matching $must: the check would see nothing"
    exit 1
  fi
done
status=0
for lib in "$@"; do
  found=$(defined "$lib" "$pattern")
  if [ -n "$found" ]; then
    echo "FAIL: $lib carries testing or benchmark code ($(echo "$found" | wc -l) symbols):"
    echo "$found" | cut -c1-240 | head -5
    status=1
  else
    echo "OK: $lib defines no symbol matching $pattern"
  fi
done
exit "$status"
