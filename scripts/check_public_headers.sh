#!/usr/bin/env bash
# Checks that include/symmcomm/ holds the API and nothing else: no `detail`
# namespace or `detail::` name (internals live in src/), no mutable global (a non-const
# variable at namespace or class-static scope: the library's state is reached through its
# functions, never written directly), no testing aid. Prints each finding and exits 1 if any.
# Usage: scripts/check_public_headers.sh [root]
set -euo pipefail
root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
cd "$root"
mapfile -t headers < <(find include/symmcomm -type f \( -name '*.hpp' -o -name '*.h' \) | sort)
bad=0
report() { echo "check_public_headers: $1"; bad=1; }
for h in "${headers[@]}"; do
  # Comments are not code: drop // and /* */ text before looking.
  code=$(sed -e 's://.*$::' -e 's:/\*.*\*/::g' "$h")
  if grep -nE '(^|[^A-Za-z0-9_])(namespace[[:space:]]+detail|detail::)' <<<"$code" >/dev/null; then
    report "$h: a detail namespace or name ($(grep -nE '(namespace[[:space:]]+detail|detail::)' <<<"$code" | head -1))"
  fi
  # A variable declared inline/static/extern without const or constexpr (functions have '(').
  while IFS= read -r line; do
    report "$h: a mutable global: $line"
  done < <(grep -nE '^[[:space:]]*(inline|static|extern)[[:space:]]' <<<"$code" |
             grep -vE 'constexpr|[[:space:]]const[[:space:]]|extern "C"|\(' || true)
  if [[ "$h" == include/symmcomm/testing/* ]]; then report "$h: a testing aid in the public headers"; fi
done
[ "$bad" = 0 ] || exit 1
echo "check_public_headers: ${#headers[@]} public headers, no detail namespace, no mutable global"
