#!/usr/bin/env bash
# Runs symmcomm's tests: installs missing Debian packages (apt-get), configures, builds, runs CTest.
# GPU tests skip with their reason on machines without a GPU (listed, by reason, at the end);
# SYMMCOMM_REQUIRE_GPU=1 makes a missing GPU a failure instead, and SYMMCOMM_ALLOWED_SKIPS
# ('|'-separated reasons) makes any other skip one (tests/support/skip_policy.hpp).
# Usage: scripts/test.sh [build-dir] [extra ctest args...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
build_dir="${1:-$SYMMCOMM_ROOT/build-test}"
shift || true
export NCCL_NVLS_ENABLE=0
echo "symmcomm tests: install missing Debian packages, configure and build into $build_dir" \
  "(about 3-4 minutes from scratch on 2 cores), then run CTest (about 1 minute; GPU tests" \
  "skip with their reason on a machine without a GPU) and list every skip by reason."
symmcomm_install_missing
symmcomm_configure_build "$build_dir"
out="$build_dir/ctest-output.txt"
rc=0
(cd "$build_dir" && ctest --output-on-failure --parallel "$(nproc)" --timeout 1800 "$@") 2>&1 |
  tee "$out" || rc=$?
# Skips by reason; with SYMMCOMM_ALLOWED_SKIPS (the GPU scripts) an unexpected one fails the run.
"$SYMMCOMM_ROOT/scripts/ctest_skips.sh" "$build_dir" "$out" || rc=1
# The verdict last, where a newcomer looks: CTest's summary line and any failures.
echo
grep -E "tests passed|tests failed" "$out" | tail -1 || echo "ctest printed no summary (exit $rc)"
if [ "$rc" -ne 0 ]; then
  sed -n '/The following tests FAILED:/,$p' "$out" | grep -E "^[[:space:]]+[0-9]+ - " || true
fi
exit "$rc"
