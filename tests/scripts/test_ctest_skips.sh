#!/usr/bin/env bash
# scripts/ctest_skips.sh on a made-up CTest run: a skipped program's reason, skips inside a
# program CTest counts as passed (printed once per MPI rank, listed once, each test under its own
# reason), and the
# SYMMCOMM_ALLOWED_SKIPS verdict on the skipped program. Usage: test_ctest_skips.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/build/Testing/Temporary"
cat >"$work/build/Testing/Temporary/LastTest.log" <<'LOG'
Start testing: Dec 05 12:00 UTC
----------------------------------------------------------
1/3 Testing: multi_rank.MultiRankAllGather.n2
1/3 Test: multi_rank.MultiRankAllGather.n2
Output:
----------------------------------------------------------
[  SKIPPED ] MultiRankAllGather.LsaKernelOfEveryFormat
Skipped tests (2):
  MultiRankAllGather.LsaKernelOfEveryFormat: no LSA team spans the communicator
  MultiRankAllGather.SmallGather: no small-message all-gather here
[  SKIPPED ] MultiRankAllGather.LsaKernelOfEveryFormat
Skipped tests (2):
  MultiRankAllGather.LsaKernelOfEveryFormat: no LSA team spans the communicator
  MultiRankAllGather.SmallGather: no small-message all-gather here
<end of output>
Test time =   1.00 sec
----------------------------------------------------------
Test Passed.
----------------------------------------------------------

2/3 Testing: multi_rank.MultiRankLifecycle.n2
2/3 Test: multi_rank.MultiRankLifecycle.n2
Output:
----------------------------------------------------------
SYMMCOMM_SKIP: the multi-rank tests need a GPU: no usable CUDA device
<end of output>
Test time =   0.10 sec
----------------------------------------------------------
Test Skipped.
----------------------------------------------------------

3/3 Testing: Planner.Works
3/3 Test: Planner.Works
Output:
----------------------------------------------------------
[       OK ] Planner.Works (0 ms)
<end of output>
Test time =   0.01 sec
----------------------------------------------------------
Test Passed.
----------------------------------------------------------
LOG
printf '%s\n' "The following tests did not run:" \
  "	  2 - multi_rank.MultiRankLifecycle.n2 (Skipped)" >"$work/ctest.txt"
fail() { echo "test_ctest_skips: FAILED: $1"; echo "$out"; exit 1; }
out=$(SYMMCOMM_ALLOWED_SKIPS="need a GPU" "$root/scripts/ctest_skips.sh" "$work/build" \
  "$work/ctest.txt") || fail "an allowed skip failed the run"
grep -q "^Skipped inside programs CTest counts as passed, by reason:" <<<"$out" ||
  fail "no list of the skips inside passed programs"
grep -q "^  1 no LSA team spans the communicator$" <<<"$out" ||
  fail "the inner skip is not counted once (two ranks printed it)"
grep -q "^    multi_rank.MultiRankAllGather.n2: MultiRankAllGather.LsaKernelOfEveryFormat$" <<<"$out" ||
  fail "the inner skip does not name its program and test"
[ "$(grep -A1 "^  1 no LSA team spans the communicator$" <<<"$out" | tail -1)" = \
  "    multi_rank.MultiRankAllGather.n2: MultiRankAllGather.LsaKernelOfEveryFormat" ] ||
  fail "the inner skip's test is not listed under its own reason"
grep -q "^  1 the multi-rank tests need a GPU: no usable CUDA device$" <<<"$out" ||
  fail "the skipped program's reason is missing"
if out=$(SYMMCOMM_ALLOWED_SKIPS="something else" "$root/scripts/ctest_skips.sh" "$work/build" \
  "$work/ctest.txt"); then
  fail "a skip SYMMCOMM_ALLOWED_SKIPS does not allow passed"
fi
grep -q "^UNEXPECTED SKIP multi_rank.MultiRankLifecycle.n2: the multi-rank tests need a GPU" \
  <<<"$out" || fail "the unexpected skip is not named"
echo "test_ctest_skips: all passed"
