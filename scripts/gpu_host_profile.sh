#!/usr/bin/env bash
# Device session: where the host time of an eager call goes. Samples symmcomm_micro_bench's
# one-rank NVFP4 all-gather host-cost case (BM_HostCostNvfp4AllGather, 1 KiB, Auto) with perf
# (call graphs) and writes the hottest symbols, self and with children, to $OUT/host-profile*.txt.
# Needs a built build-nccl2 (scripts/gpu_round.sh builds it) and perf on the machine; says so
# and exits 1 without.
# Usage: OUT=/tmp/o scripts/gpu_host_profile.sh [benchmark filter]
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
out="${OUT:-$SYMMCOMM_ROOT/gpu-out}"
second="${SYMMCOMM_SECOND_NCCL:-$SYMMCOMM_ROOT/.nccl-2.30.7}"
filter="${1:-BM_HostCostNvfp4AllGather/ranks:1/bytes:1024/path:0/}"
mkdir -p "$out"
command -v perf >/dev/null || { echo "no perf on this machine: no profile"; exit 1; }
export LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}" NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_NVLS_ENABLE=0
timeout 120 perf record -F 20000 -g -o "$out/perf.data" \
  "$SYMMCOMM_ROOT"/build-nccl2/bench/symmcomm_micro_bench --benchmark_filter="$filter" \
  --benchmark_repetitions=3 >"$out/host-profile-run.txt" 2>&1
echo "== perf record: exit $?"
perf report -i "$out/perf.data" --no-children --stdio --percent-limit 0.5 -g none \
  --sort dso,symbol >"$out/host-profile-self.txt" 2>&1
perf report -i "$out/perf.data" --children --stdio --percent-limit 2 -g none \
  --sort symbol >"$out/host-profile-children.txt" 2>&1
rm -f "$out/perf.data"
grep -v "^#" "$out/host-profile-self.txt" | grep -v "^$" | head -40
