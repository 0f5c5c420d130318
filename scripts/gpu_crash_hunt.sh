#!/usr/bin/env bash
# The Python suite's segmentation fault on NCCL 2.28.3 (python/tests/test_ops.py, the
# refusal test of both implementations): the whole suite under gdb without -x (a native
# backtrace where it faults), then the refusal test alone and test_ops.py in suite order, each
# with PyTorch imported before symmcomm and after (which libnccl and libstdc++ each run maps is
# printed), SYMMCOMM_HUNT_TRIES times. Needs build-dev (system NCCL) with libsymmcomm_c.so and
# libsymmcomm_torch.so (scripts/gpu_python.sh builds them). Logs in ${OUT:-./gpu-out}/hunt-*.
# Usage: scripts/gpu_crash_hunt.sh [seconds, default 300]
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
limit="${1:-300}"
out="${OUT:-$SYMMCOMM_ROOT/gpu-out}"
py="$(symmcomm_torch_python)"
lib="$SYMMCOMM_ROOT/build-dev/src/libsymmcomm_c.so"
mkdir -p "$out"
left() { echo $((limit - SECONDS)); }
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 SYMMCOMM_LIBRARY="$lib"
cd "$SYMMCOMM_ROOT/python" || exit 1
faulted() { grep -q -E "SIGSEGV|SIGABRT|Segmentation fault|Fatal Python error" "$1"; }

# 0. Private copies of libstdc++ members in the C++ operators (scripts/check_runtime_copies.py).
for lib in "$SYMMCOMM_ROOT"/build-dev/src/libsymmcomm_torch.so "$SYMMCOMM_ROOT"/build-nccl2/src/libsymmcomm_torch.so; do
  [ -f "$lib" ] && python3 "$SYMMCOMM_ROOT/scripts/check_runtime_copies.py" "$lib"
done

# 1. The whole suite, as CI's device step runs it, under gdb: a fault stops there with a
# native backtrace; without one gdb prints "No stack." and the suite's summary stands.
debugger="$(command -v gdb || command -v cuda-gdb)"
if [ "$(left)" -gt 100 ]; then
  timeout "$(( $(left) - ${SYMMCOMM_HUNT_AFTER_S:-100} ))" "$debugger" -q -batch -ex run -ex bt -ex "info sharedlibrary" \
    --args "$py" -X faulthandler -m pytest -q -rfs -p no:cacheprovider tests \
    >"$out/hunt-suite-gdb.txt" 2>&1
  echo "== 2.28.3 suite under $debugger: $(grep -E '[0-9]+ (passed|failed)' "$out/hunt-suite-gdb.txt" | tail -1)"
  grep -E "^Libraries in this process" "$out/hunt-suite-gdb.txt" | cut -c1-400
  if faulted "$out/hunt-suite-gdb.txt"; then
    grep -E -A40 "SIGSEGV|SIGABRT" "$out/hunt-suite-gdb.txt" | grep -E "SIGSEGV|SIGABRT|^#[0-9]+ " |
      cut -c1-220 | head -30
  fi
fi

# 2. The suspect alone and in its file's order, PyTorch first or symmcomm first (the suite's
# summary names the libnccl and libstdc++ files the run mapped: python/tests/conftest.py).
wrapper='
import sys
__import__(sys.argv[1])
import pytest
sys.exit(pytest.main(sys.argv[2:]))'
faults=0
runs=0
for try in $(seq "${SYMMCOMM_HUNT_TRIES:-3}"); do
  for first in torch symmcomm; do
    for what in alone order; do
      [ "$(left)" -gt 40 ] || break 3
      if [ $what = alone ]; then sel=(tests/test_ops.py -k refuse_the_same); else sel=(tests/test_ops.py); fi
      f="$out/hunt-$what-$first-$try.txt"
      timeout "$(( $(left) - 20 ))" "$py" -X faulthandler -c "$wrapper" "$first" -q -p no:cacheprovider \
        "${sel[@]}" >"$f" 2>&1
      rc=$?
      runs=$((runs + 1))
      faulted "$f" && faults=$((faults + 1))
      echo "== $what, $first imported first, try $try: exit $rc, $(grep -E '[0-9]+ (passed|failed)' "$f" | tail -1)"
      faulted "$f" && grep -E -A6 "Fatal Python error|Current thread" "$f" | head -8
      [ "$try" = 1 ] && grep -E "^Libraries in this process" "$f" | cut -c1-400
    done
  done
done
echo "== crash hunt: $faults faults in $runs runs (plus the suite under gdb)"
