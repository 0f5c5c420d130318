#!/usr/bin/env bash
# Device session for the host cost of a call (docs/architecture.md's call path): builds against
# NCCL 2.30.7 (carried in .nccl-2.30.7), runs BM_HostCost* (eager NVFP4 all-gathers, 1 KiB and
# 1 MiB per rank, one rank and 2 ranks sharing the GPU, Auto's path and symmcomm's LSA kernel
# forced, beside an empty kernel launch; 7 repetitions: medians with min-max) and the Python
# operator's overhead table (bench/python/ops_overhead.py). Where .host-cost-before exists (the
# earlier tree with the same benchmark: scripts/host_cost_before.sh <commit>, carried), it is
# built the same way and measured in the same call, before then after, and
# scripts/host_cost_table.py puts both side by side. Logs, JSON and host-cost.md under
# ${OUT:-./gpu-out}.
# Usage: OUT=/tmp/o scripts/gpu_host_cost.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
out="${OUT:-$SYMMCOMM_ROOT/gpu-out}"
second="${SYMMCOMM_SECOND_NCCL:-$SYMMCOMM_ROOT/.nccl-2.30.7}"
symmcomm_repair_nccl_links "$second"
build="$SYMMCOMM_ROOT/build-nccl2"
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u;
  git -C "$SYMMCOMM_ROOT" log -1 --format=%h 2>/dev/null; } >"$out/machine.txt" 2>&1
before="$SYMMCOMM_ROOT/.host-cost-before"
# build TREE BUILD_DIR LOG [cmake args]: the micro-benchmarks and the C ABI library of TREE on
# 2.30.7.
build() {
  { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSYMMCOMM_WITH_MPI=ON \
      -DCMAKE_CUDA_ARCHITECTURES="$(symmcomm_dev_architectures)" -DNCCL_ROOT="$second" "${@:4}" &&
    cmake --build "$2" --parallel "$(nproc)" --target symmcomm_micro_bench symmcomm_c; } \
    >"$3" 2>&1 || { tail -30 "$3"; return 1; }
}
# measure TREE BUILD_DIR NAME: BM_HostCost* and the operator table of TREE, files NAME-*.
measure() {
  env LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}" NCCL_MULTI_RANK_GPU_ENABLE=1 \
    timeout 240 "$2/bench/symmcomm_micro_bench" --benchmark_filter='BM_HostCost' \
    --benchmark_repetitions=7 --benchmark_report_aggregates_only=false \
    --benchmark_out="$out/$3.json" --benchmark_out_format=json >"$out/$3.txt" 2>&1
  echo "== $3: exit $?"
  grep -E "median" "$out/$3.txt" | tail -14
  (cd "$1" && env LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}" \
     LD_PRELOAD="$second/lib/libnccl.so.2" SYMMCOMM_LIBRARY="$2/src/libsymmcomm_c.so" \
     timeout 150 "$(symmcomm_torch_python)" bench/python/ops_overhead.py "$out/$3-ops") \
    >"$out/$3-ops.txt" 2>&1
  echo "== $3 ops_overhead: exit $?"; tail -6 "$out/$3-ops.txt"
}
build "$SYMMCOMM_ROOT" "$build" "$out/build.log" -DSYMMCOMM_TORCH_OPS=OFF || exit 1
symmcomm_build_torch_ops "$build" "$out/build-torch.log"
table=(--ops "$out/host-cost-ops/ops_overhead.json")
if [[ -d "$before" ]]; then
  cat "$before/BEFORE_COMMIT" >>"$out/machine.txt"
  # The carried tree holds what the benchmark needs, not the tests or the examples.
  if build "$before" "$SYMMCOMM_ROOT/build-before" "$out/build-before.log" \
      -DSYMMCOMM_BUILD_TESTS=OFF -DSYMMCOMM_BUILD_EXAMPLES=OFF; then
    measure "$before" "$SYMMCOMM_ROOT/build-before" host-cost-before
    table+=(--before "$out/host-cost-before.json"
            --ops-before "$out/host-cost-before-ops/ops_overhead.json")
  fi
fi
measure "$SYMMCOMM_ROOT" "$build" host-cost
python3 "$SYMMCOMM_ROOT/scripts/host_cost_table.py" "$out/host-cost.md" "$out/host-cost.json" \
  "${table[@]}"
