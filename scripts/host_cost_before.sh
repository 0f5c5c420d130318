#!/usr/bin/env bash
# Prepares the "before" side of the host-cost comparison (docs/architecture.md's call path): the
# source tree as it was before the one-descriptor call path landed (BEFORE_COMMIT, the parent of
# the commit that introduced CollectiveCall), with this tree's host-cost benchmark
# (bench/micro/host_cost_bench.cu, with the one-rank world it includes, micro/one_rank.hpp)
# and operator-overhead script (bench/python/ops_overhead.py) copied in, so that
# scripts/gpu_host_cost.sh builds and runs both trees in one device call and the figures stand
# side by side. The benchmark did not exist before; it uses only APIs that
# both trees share (all_gather on views, PoolNvfp4, RankWorld), so the same code times both.
# Writes .host-cost-before/ (ignored through .git/info/exclude; carry it to the device). Needs
# git (run it here, not on the device machine).
# Usage: scripts/host_cost_before.sh [commit, default: BEFORE_COMMIT]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
BEFORE_COMMIT=76294b7  # parent of fe85f33, "One call descriptor: ..."
commit="${1:-$BEFORE_COMMIT}"
dest="$SYMMCOMM_ROOT/.host-cost-before"
cd "$SYMMCOMM_ROOT"
git rev-parse --verify -q "$commit^{commit}" >/dev/null ||
  { echo "host_cost_before.sh: commit '$commit' is not in this repository" >&2; exit 2; }
exclude="$(git rev-parse --git-path info/exclude)"
grep -qx '/.host-cost-before/' "$exclude" 2>/dev/null || echo '/.host-cost-before/' >>"$exclude"
rm -rf "$dest" && mkdir -p "$dest"
# What the tree's CMake reads, of the paths that commit has (examples and bench/accuracy came later
# than some commits compared against).
paths=()
for p in CMakeLists.txt cmake include src bench/CMakeLists.txt bench/micro bench/symmcomm_bench \
         bench/python bench/accuracy tests python scripts examples LICENSE; do
  git cat-file -e "$commit:$p" 2>/dev/null && paths+=("$p")
done
git archive "$commit" -- "${paths[@]}" | tar -x -C "$dest"
cp bench/micro/host_cost_bench.cu bench/micro/one_rank.hpp "$dest/bench/micro/"
cp bench/python/ops_overhead.py "$dest/bench/python/"
# Add the benchmark to the old tree's micro-benchmark target (one source list in bench/) where
# that tree did not have it yet.
grep -q host_cost_bench.cu "$dest/bench/CMakeLists.txt" ||
  sed -i 's|micro/latency_ranks_bench.cu|micro/latency_ranks_bench.cu micro/host_cost_bench.cu|' \
    "$dest/bench/CMakeLists.txt"
grep -q host_cost_bench.cu "$dest/bench/CMakeLists.txt" ||
  { echo "host_cost_before.sh: could not add the benchmark to $commit's bench/CMakeLists.txt" >&2
    exit 1; }
echo "$commit $(git log -1 --format='%h %s' "$commit")" >"$dest/BEFORE_COMMIT"
echo "host_cost_before.sh: $dest ($(du -sh "$dest" | cut -f1)) holds $(cat "$dest/BEFORE_COMMIT")"
