#!/usr/bin/env bash
# scripts/common.sh's symmcomm_watch_ranks on the CPU: a launcher whose two ranks go silent is
# stopped once its log has been quiet for the given time, each rank's Python stacks land in the
# log (SIGUSR1, faulthandler) and a backtrace file per rank is written (a stand-in cuda-gdb), and
# every process is gone after; a launcher that ends is waited for, its exit status kept.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/common.sh"
work=$(mktemp -d)
trap 'pkill -9 -f "$work/rank.py" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

mkdir "$work/bin"
printf '#!/bin/sh\necho "#0  0x1 in stand_in_frame_of_pid_$3 ()"\n' >"$work/bin/cuda-gdb"
chmod +x "$work/bin/cuda-gdb"
export PATH="$work/bin:$PATH"
cat >"$work/rank.py" <<'PY'
import faulthandler, signal, sys, time
faulthandler.register(signal.SIGUSR1, all_threads=True)
print("rank up", flush=True)
def waiting_for_a_peer():
    time.sleep(600)
waiting_for_a_peer()
PY

# 1. Two silent ranks: stopped after 3 quiet seconds, well before the limit.
log="$work/hung.txt"
bash -c "python3 $work/rank.py & python3 $work/rank.py & wait" >"$log" 2>&1 &
launcher=$!
begin=$(date +%s)
symmcomm_watch_ranks "$launcher" 300 3 "$log" "$work/hung" "$work/rank.py" >"$work/watch.txt"
rc=$?
took=$(( $(date +%s) - begin ))
cat "$work/watch.txt"
[ "$rc" = 1 ] || fail "a hung launcher returned $rc, not 1"
[ "$took" -lt 30 ] || fail "stopping took $took s with 3 quiet seconds asked"
grep -q "silent for 3 s" "$work/watch.txt" || fail "the reason is not given"
[ "$(grep -c 'waiting_for_a_peer' "$log")" -ge 2 ] || fail "not every rank's Python stack is in the log"
[ "$(ls "$work"/hung-*.bt | wc -l)" = 2 ] || fail "not one backtrace file per rank"
grep -q "stand_in_frame" "$work/watch.txt" || fail "the backtraces' frames are not printed"
sleep 1
! pgrep -f "$work/rank.py" >/dev/null || fail "ranks still running"
! kill -0 "$launcher" 2>/dev/null || fail "the launcher still runs"

# 2. A launcher that ends: 0, and its own status from wait.
bash -c "sleep 1; exit 3" >"$work/quick.txt" 2>&1 &
launcher=$!
symmcomm_watch_ranks "$launcher" 300 60 "$work/quick.txt" "$work/quick" "$work/none.py" ||
  fail "an ended launcher returned non-zero"
wait "$launcher"
[ "$?" = 3 ] || fail "the launcher's exit status is lost"
ls "$work"/quick-*.bt >/dev/null 2>&1 && fail "backtraces taken of a launcher that ended"
echo "watch_ranks: passed"
