#!/usr/bin/env bash
# `pip install .` from the repository root, offline, as a user would, then the Python package's
# CPU tests against what was installed (no SYMMCOMM_LIBRARY, no PYTHONPATH): Debian's python3
# (setuptools 66, wheel 0.38) in a venv with its system site packages, no package index.
# Also checks that python/ is left without build/ or egg-info. Run by .ci/run.
# Usage: scripts/python_wheel.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
symmcomm_install_missing
python=/usr/bin/python3
[ -x "$python" ] || { echo "python_wheel: $python is missing (Debian: python3)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A plain venv has no `wheel`: `pip install .` there must stop and name the fix.
"$python" -m venv "$work/plain"
if ! "$work/plain/bin/python" -c "import wheel" 2>/dev/null; then
  if plain=$(env -u SYMMCOMM_LIBRARY -u PYTHONPATH "$work/plain/bin/pip" install \
       --no-build-isolation --no-deps --no-index -q "$SYMMCOMM_ROOT" 2>&1); then
    echo "python_wheel: pip install . in a venv without wheel succeeded?" >&2
    exit 1
  fi
  grep -q "symmcomm: building needs the Python package 'wheel'" <<<"$plain" || {
    echo "python_wheel: pip install . in a venv without wheel did not name the fix:" >&2
    tail -20 <<<"$plain" >&2
    exit 1
  }
  echo "python_wheel: a venv without wheel stops with the fix named"
fi
"$python" -m venv --system-site-packages "$work/env"
echo "python_wheel: pip install . (offline; builds libsymmcomm_c.so with CMake) ..."
env -u SYMMCOMM_LIBRARY -u PYTHONPATH "$work/env/bin/python" -m pip install --no-build-isolation \
  --no-deps --no-index -q "$SYMMCOMM_ROOT"
cd "$work"
env -u SYMMCOMM_LIBRARY -u PYTHONPATH "$work/env/bin/python" -c '
import os, symmcomm
pkg = os.path.dirname(symmcomm.__file__)
assert "site-packages" in pkg, pkg
assert symmcomm.library_path() == os.path.join(pkg, "libsymmcomm_c.so"), symmcomm.library_path()
print("python_wheel: symmcomm", symmcomm.__version__, "installed at", pkg, "with its library")'
env -u SYMMCOMM_LIBRARY -u PYTHONPATH SYMMCOMM_EXPECT_WHEEL=1 "$work/env/bin/python" -m pytest -q \
  -p no:cacheprovider "$SYMMCOMM_ROOT/python/tests/test_package.py" \
  "$SYMMCOMM_ROOT/python/tests/test_shapes.py" "$SYMMCOMM_ROOT/python/tests/test_ops_fakes.py" \
  "$SYMMCOMM_ROOT/python/tests/test_moe.py"
# The shipped builds carry SASS for every default architecture (no architecture was given to
# the wheel's CMake build): its C++ library, its C ABI library and the wheel's copy of it.
wheel_lib=$(env -u SYMMCOMM_LIBRARY -u PYTHONPATH "$work/env/bin/python" -c \
  'import symmcomm; print(symmcomm.library_path())')
built="$SYMMCOMM_ROOT/build/python-wheel/cmake/src"
python3 "$SYMMCOMM_ROOT/scripts/fatbin_archs.py" --require-sass 90,100,120 --require-ptx 120 \
  "$built/libsymmcomm.a" "$built/libsymmcomm_c.so" "$wheel_lib"
# ... and the check can fail: no build here carries sm_89.
if python3 "$SYMMCOMM_ROOT/scripts/fatbin_archs.py" --require-sass 89 "$wheel_lib" 2>/dev/null \
  >/dev/null; then
  echo "python_wheel: fatbin_archs.py found sm_89 SASS in $wheel_lib: the check cannot fail" >&2
  exit 1
fi
left=$(cd "$SYMMCOMM_ROOT" && git status --porcelain --ignored python | grep -E "egg-info|/build/" || true)
if [ -n "$left" ]; then
  echo "python_wheel: the build left files in python/:" >&2
  echo "$left" >&2
  exit 1
fi
echo "python_wheel: OK"
