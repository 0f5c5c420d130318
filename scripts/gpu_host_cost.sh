#!/usr/bin/env bash
# Device session for the host cost of a call (docs/architecture.md's call path): builds against
# NCCL 2.30.7 (carried in .nccl-2.30.7), runs BM_HostCost* (eager NVFP4 all-gathers, 1 KiB and
# 1 MiB per rank, one rank and 2 ranks sharing the GPU, beside an empty kernel launch; 7
# repetitions: medians with min-max) and the Python operator's overhead table
# (bench/python/ops_overhead.py). Logs and JSON under ${OUT:-./gpu-out}.
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
{ cmake -S "$SYMMCOMM_ROOT" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSYMMCOMM_WITH_MPI=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$(symmcomm_dev_architectures)" -DNCCL_ROOT="$second" &&
  cmake --build "$build" --parallel "$(nproc)" --target symmcomm_micro_bench symmcomm_c; } \
  >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
env LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}" NCCL_MULTI_RANK_GPU_ENABLE=1 \
  timeout 300 "$build/bench/symmcomm_micro_bench" --benchmark_filter='BM_HostCost' \
  --benchmark_repetitions=7 --benchmark_report_aggregates_only=false \
  --benchmark_out="$out/host-cost.json" --benchmark_out_format=json >"$out/host-cost.txt" 2>&1
echo "== host cost: exit $?"; grep -E "median|HostCost" "$out/host-cost.txt" | grep -v "_mean\|_stddev\|_cv" | tail -12
py=$(command -v python3)
(cd "$SYMMCOMM_ROOT" && env LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}" \
   LD_PRELOAD="$second/lib/libnccl.so.2" SYMMCOMM_LIBRARY="$build/src/libsymmcomm_c.so" \
   timeout 200 "$py" bench/python/ops_overhead.py "$out/ops-overhead") >"$out/ops-overhead.txt" 2>&1
echo "== ops_overhead: exit $?"; tail -8 "$out/ops-overhead.txt"
