#!/usr/bin/env bash
# Checks that every public name of include/symmcomm/ is documented: runs doxygen over the public
# headers with docs/Doxyfile (undocumented members, bad doc commands) and fails on any warning,
# printing each. Installs doxygen where missing (Debian's package).
# Usage: scripts/check_api_docs.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$SYMMCOMM_ROOT"
SYMMCOMM_PACKAGES=(doxygen)
symmcomm_install_missing
if ! command -v doxygen >/dev/null 2>&1; then
  echo "check_api_docs: doxygen is not installed and could not be installed" >&2
  exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
warnings=$({ cat docs/Doxyfile; echo "GENERATE_HTML = NO"; echo "OUTPUT_DIRECTORY = $out"; } |
  doxygen - 2>&1 | grep -v "No output formats selected" || true)
if [ -n "$warnings" ]; then
  echo "$warnings" | sed "s|$SYMMCOMM_ROOT/||"
  echo "check_api_docs: $(grep -c 'warning:' <<<"$warnings") warning(s): document each public name" >&2
  exit 1
fi
headers=$(find include/symmcomm -name '*.h*' | wc -l)
echo "check_api_docs: every public name of the $headers headers is documented ($(doxygen --version))"
