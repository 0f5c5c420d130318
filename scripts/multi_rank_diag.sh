#!/usr/bin/env bash
# Runs part of the multi-rank tier once, under extra environment, with a hard time limit, and
# prints how it ended (PASSED, FAILED or TIMEOUT) and the lines that matter. For hangs: which
# NCCL settings make a case pass tells where it stops.
# Usage: scripts/multi_rank_diag.sh <build dir> <ranks> <gtest filter> <seconds> [VAR=value...]
# The build's NCCL library: LD_LIBRARY_PATH as the caller sets it.
set -uo pipefail
if [ $# -lt 4 ]; then
  echo "usage: $0 <build dir> <ranks> <gtest filter> <seconds> [VAR=value...]" >&2
  exit 2
fi
dir="$1" ranks="$2" filter="$3" seconds="$4"
shift 4
log=$(mktemp)
start=$(date +%s)
env NCCL_NVLS_ENABLE=0 SYMMCOMM_WAIT_TIMEOUT_S="$seconds" "$@" \
  timeout -k 5 "$((seconds + 10))" mpirun --allow-run-as-root --oversubscribe --bind-to none \
  -n "$ranks" "$dir/tests/symmcomm_multi_rank_tests" --gtest_filter="$filter" >"$log" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
# Ranks that outlived mpirun would keep spinning on the GPU and skew what runs next.
pkill -9 -f symmcomm_multi_rank_tests 2>/dev/null && sleep 1
if [ $rc = 124 ] || [ $rc = 137 ]; then verdict=TIMEOUT
elif [ $rc = 0 ]; then verdict=PASSED
else verdict="FAILED (rc $rc)"; fi
echo "== $verdict in ${took}s: -n $ranks '$filter' $*"
grep -E "^\[  (FAILED|PASSED) |Failure|TimeoutError|waited|NCCL WARN|error" "$log" | sort | uniq -c |
  sort -rn | cut -c1-240 | head -8
rm -f "$log"
[ "$verdict" = PASSED ]
