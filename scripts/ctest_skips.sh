#!/usr/bin/env bash
# Prints why each skipped test of the last ctest run in <build-dir> skipped, grouped by reason
# (read from CTest's LastTest.log: the GTEST_SKIP message, a SYMMCOMM_SKIP line, or the last
# line a program printed). Usage: scripts/ctest_skips.sh <build-dir> <ctest-output-file>
set -euo pipefail
build="$1" output="$2"
log="$build/Testing/Temporary/LastTest.log"
skipped=$(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (Skipped)$/\1/p' "$output")
[ -n "$skipped" ] || exit 0
[ -f "$log" ] || { echo "(no $log to read reasons from)"; exit 0; }
echo "Skipped tests, by reason:"
awk -v names="$skipped" '
  BEGIN { n = split(names, list, "\n"); for (i = 1; i <= n; ++i) wanted[list[i]] = 1 }
  /^[0-9]+\/[0-9]+ Testing: / { name = $0; sub(/^[0-9]+\/[0-9]+ Testing: /, "", name);
                                reason = ""; last = ""; next_is_reason = 0; next }
  next_is_reason { reason = $0; next_is_reason = 0 }
  /: Skipped$/ { next_is_reason = 1 }
  /^SYMMCOMM_SKIP: / && reason == "" { reason = $0; sub(/^SYMMCOMM_SKIP: /, "", reason) }
  /^<end of output>$/ { if (name in wanted) { if (reason == "") reason = last; count[reason]++ }
                        name = "" }
  # mpiexec'"'"'s closing report ("Exit code: 2", "Process name: ...") is not a reason.
  /^[[:space:]]*(Exit code:|Process name:)|mpiexec|Primary job|non-zero (exit code|status)|the job to be terminated|first process to do so|Per user-direction/ { next }
  { if ($0 != "" && $0 !~ /^<end of output>$/ && $0 !~ /^-+$/) last = $0 }
  END { for (r in count) printf "  %4d  %s\n", count[r], r }
' "$log" | sort -k1,1nr
