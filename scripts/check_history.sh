#!/usr/bin/env bash
# Checks that code comments say what and why, never history: no session or issue numbers, no
# numbered findings, no benchmark figures (ratios like 0.53x, times, bandwidths) and no citations
# of bench/results/ in the code of src/, include/, bench/ (results excluded), python/, tests/,
# examples/ and scripts/. Figures belong in bench/results/ and docs/; history in commits.
set -euo pipefail
cd "$(dirname "$0")/.."
comment='(//|#|/\*|^ *\*|""")'
history='([Ss]ession ?[0-9]+|[Ii]ssue #?[0-9]+|\(#[0-9]+\)|finding [0-9]+ of)'
figure='(\b[0-9]+\.[0-9]+x\b|\b[0-9]+(\.[0-9]+)?-[0-9]+(\.[0-9]+)?x\b|\b[0-9]+(\.[0-9]+)? ?(us|µs|ms|GB/s|TB/s)\b|bench/results/20|\b20[0-9]{2}-[0-9]{2}-[0-9]{2}-[a-z0-9]+|[0-9]+% (off|of copy|faster|slower)|vs [0-9.]+%)'
hits=$(git grep -nE "${comment}.*(${history}|${figure})" -- src include python tests bench examples scripts \
         ':!bench/results' ':!*.md' ':!scripts/check_history.sh' || true)
if [ -n "$hits" ]; then
  echo "check_history: comments that carry history or figures (move them to the commit message,"
  echo "bench/results/ or docs/):"
  echo "$hits"
  exit 1
fi
echo "check_history: OK (no history or figures in code comments)"
