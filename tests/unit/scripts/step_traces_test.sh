#!/usr/bin/env bash
# scripts/common.sh's symmcomm_step_traces on the CPU: from a step's traces as moe_step.py writes
# them (<prefix>-trace-<way>.json, other ranks' with -r<rank>), each way but the base gets its
# kernel-by-kernel table against torch.distributed padded (-kernels-<way>.md) and its summary
# line printed, a way with other ranks' traces gets the overlap table (-overlap-<way>.md, printed),
# the base and the ranks' own traces get no table of their own, and a folder without traces
# prints nothing.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/common.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*"; exit 1; }
py="${PYTHON:-python3}"

# Two replays each of a sigmoid (the base's shorter than symmcomm's) and, on rank 1, a GEMM beside it.
trace() {  # trace <file> <sigmoid us> [gemm start]
  "$py" - "$@" <<'PY'
import json, sys
path, dur = sys.argv[1], float(sys.argv[2])
events = []
for r in range(2):
    events.append({"ph": "X", "cat": "kernel", "name": "void at::native::sigmoid_kernel",
                   "ts": 100.0 * r, "dur": dur})
    if len(sys.argv) > 3:
        events.append({"ph": "X", "cat": "kernel", "name": "cutlass_gemm",
                       "ts": 100.0 * r + float(sys.argv[3]), "dur": 50.0})
json.dump({"traceEvents": events, "symmcomm_replays": 2, "baseTimeNanoseconds": 0}, open(path, "w"))
PY
}
p="$work/moe-step-n2"
trace "$p-trace-torchdistributed-padded.json" 2
trace "$p-trace-symmcomm-padded.json" 4
trace "$p-trace-symmcomm-padded-r1.json" 4 0

out=$(symmcomm_step_traces "$p" "$py") || fail "exit status $?"
echo "$out"
[ -f "$p-kernels-symmcomm-padded.md" ] || fail "no kernel table for symmcomm-padded"
[ ! -e "$p-kernels-torchdistributed-padded.md" ] || fail "the base compared with itself"
[ ! -e "$p-kernels-symmcomm-padded-r1.md" ] || fail "rank 1's trace taken for a way"
grep -q "their time per replay 4.0 us in moe-step-n2-trace-symmcomm-padded.json, 2.0 in" \
  <<<"$out" || fail "the summary line is not the kernels' totals"
[ -f "$p-overlap-symmcomm-padded.md" ] || fail "no overlap table with rank 1's trace"
grep -q "| other | 4.0 | 4.0 |" <<<"$out" || fail "rank 0's sigmoid not seen beside rank 1's GEMM"
[ ! -e "$p-overlap-torchdistributed-padded.md" ] || fail "an overlap table without other ranks"

empty=$(symmcomm_step_traces "$work/none" "$py") || fail "no traces: exit status $?"
[ -z "$empty" ] || fail "no traces, yet printed: $empty"
echo "step_traces: OK"
