#!/usr/bin/env bash
# Prints why each skipped test of the last ctest run in <build-dir> skipped, grouped by reason
# (read from CTest's LastTest.log: the GTEST_SKIP message, a SYMMCOMM_SKIP line, or the last
# line a program printed). With SYMMCOMM_ALLOWED_SKIPS set ('|'-separated texts; see
# tests/support/skip_policy.hpp) every skip whose reason contains none of them is listed as
# UNEXPECTED and the script exits 1: the GPU scripts use it so that a skip of something a run is
# meant to cover fails the run (CTest itself counts a skip as a pass).
# A program CTest counts as passed may still have skipped tests inside it (the multi-rank tier
# runs a gtest suite per CTest test): those are listed too, from the skip policy's list the
# program prints, so that "passed" is known to mean "ran" (the program itself fails on one that
# SYMMCOMM_ALLOWED_SKIPS does not allow).
# Usage: scripts/ctest_skips.sh <build-dir> <ctest-output-file>
set -euo pipefail
build="$1" output="$2"
log="$build/Testing/Temporary/LastTest.log"
skipped=$(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (Skipped)$/\1/p' "$output")
[ -f "$log" ] || { [ -z "$skipped" ] || echo "(no $log to read reasons from)"; exit 0; }
# Skips inside passed programs: "reason<TAB>ctest test: gtest test", each once (every rank of an
# MPI program prints the same list).
inner=$(awk '
  /^[0-9]+\/[0-9]+ Testing: / { name = $0; sub(/^[0-9]+\/[0-9]+ Testing: /, "", name);
                                in_list = 0; n = 0; next }
  /^Skipped tests \(/ { in_list = 1; next }
  in_list && /^  (UNEXPECTED SKIP )?[A-Za-z0-9_\/]+\.[A-Za-z0-9_\/]+: / {
    line = $0; sub(/^  (UNEXPECTED SKIP )?/, "", line)
    test = line; sub(/: .*$/, "", test); reason = line; sub(/^[^:]*: /, "", reason)
    found[++n] = reason "\t" name ": " test; next }
  { in_list = 0 }
  /^Test Passed\.$/ { for (i = 1; i <= n; ++i) if (!(found[i] in seen)) { seen[found[i]] = 1;
                                                                           print found[i] }
                      n = 0 }
' "$log")
if [ -n "$inner" ]; then
  echo "Skipped inside programs CTest counts as passed, by reason:"
  # Each reason with its count, then the tests that skipped for it.
  printf '%s\n' "$inner" | awk -F'\t' '
    { if (!($1 in count)) order[++n] = $1; count[$1]++; tests[$1] = tests[$1] "    " $2 "\n" }
    END { for (i = 1; i <= n; ++i) printf "  %d %s\n%s", count[order[i]], order[i], tests[order[i]] }'
fi
[ -n "$skipped" ] || exit 0
# One "reason<TAB>test" line per skipped test.
pairs=$(awk -v names="$skipped" '
  BEGIN { n = split(names, list, "\n"); for (i = 1; i <= n; ++i) wanted[list[i]] = 1 }
  /^[0-9]+\/[0-9]+ Testing: / { name = $0; sub(/^[0-9]+\/[0-9]+ Testing: /, "", name);
                                reason = ""; last = ""; next_is_reason = 0; next }
  next_is_reason { reason = $0; next_is_reason = 0 }
  /: Skipped$/ { next_is_reason = 1 }
  /^SYMMCOMM_SKIP: / && reason == "" { reason = $0; sub(/^SYMMCOMM_SKIP: /, "", reason) }
  /^<end of output>$/ { if (name in wanted) { if (reason == "") reason = last;
                                              printf "%s\t%s\n", reason, name }
                        name = "" }
  # mpiexec'"'"'s closing report ("Exit code: 2", "Process name: ...") is not a reason, nor is
  # the skip policy'"'"'s own list.
  /^[[:space:]]*(Exit code:|Process name:)|mpiexec|Primary job|non-zero (exit code|status)|the job to be terminated|first process to do so|Per user-direction|^Skipped tests \(|^  (UNEXPECTED SKIP )?[A-Za-z0-9_\/]+\.[A-Za-z0-9_\/]+: / { next }
  { if ($0 != "" && $0 !~ /^<end of output>$/ && $0 !~ /^-+$/) last = $0 }
' "$log")
echo "Skipped tests, by reason:"
printf '%s\n' "$pairs" | cut -f1 | sort | uniq -c | sort -k1,1nr | sed 's/^ */  /'
[ -n "${SYMMCOMM_ALLOWED_SKIPS+set}" ] || exit 0
IFS='|' read -r -a allowed <<<"$SYMMCOMM_ALLOWED_SKIPS"
unexpected=0
while IFS=$'\t' read -r reason name; do
  ok=0
  for a in "${allowed[@]}"; do
    [ -n "$a" ] && [[ "$reason" == *"$a"* ]] && ok=1
  done
  if [ "$ok" = 0 ]; then
    echo "UNEXPECTED SKIP $name: $reason"
    unexpected=$((unexpected + 1))
  fi
done <<<"$pairs"
if [ "$unexpected" -gt 0 ]; then
  echo "$unexpected skip(s) not allowed by SYMMCOMM_ALLOWED_SKIPS=$SYMMCOMM_ALLOWED_SKIPS"
  exit 1
fi
echo "every skip is allowed by SYMMCOMM_ALLOWED_SKIPS"
