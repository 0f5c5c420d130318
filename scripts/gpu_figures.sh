#!/usr/bin/env bash
# Device session for README's figures: builds what is needed against the system
# NCCL, then (each stage bounded) the micro-benchmarks with 3 repetitions (every repetition
# kept: mean and min-max), the one-rank NVFP4 all-gather against plain NCCL three times, and
# scripts/broken_build_demo.sh. Outputs under ${OUT:-./gpu-out}; SYMMCOMM_SNAPSHOT=<file.tgz>
# archives them after every stage (a run cut short still returns what it measured). Tables:
# scripts/figures_table.py.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
out="${OUT:-$SYMMCOMM_ROOT/gpu-out}"
build="$SYMMCOMM_ROOT/build-dev"
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } >"$out/machine.txt" 2>&1
cat "$out/machine.txt"
cmake -S "$SYMMCOMM_ROOT" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSYMMCOMM_WITH_MPI=ON \
  >"$out/build.log" 2>&1 &&
  cmake --build "$build" --parallel "$(nproc)" --target symmcomm_micro_bench symmcomm-bench \
    symmcomm_gpu_tests symmcomm_multi_rank_tests >>"$out/build.log" 2>&1 ||
  { echo "build failed"; tail -30 "$out/build.log"; exit 1; }
echo "build OK ($SECONDS s)"
snapshot() { [ -z "${SYMMCOMM_SNAPSHOT:-}" ] || tar czf "$SYMMCOMM_SNAPSHOT" -C "$out" .; }

timeout "${SYMMCOMM_MICRO_TIMEOUT_S:-200}" "$build/bench/symmcomm_micro_bench" \
  --benchmark_filter='BM_DeviceCopy|BM_Quantize(Nvfp4|Fp8)|BM_Dequantize|BM_PoolAllocateFree|BM_ProvenanceLookupPool|BM_Loopback|BM_PlanNvfp4' \
  --benchmark_repetitions=3 --benchmark_min_time="${SYMMCOMM_MICRO_MIN_TIME:-0.2}" \
  --benchmark_out="$out/micro.json" --benchmark_out_format=json >"$out/micro.txt" 2>&1
echo "micro rc=$? ($SECONDS s)"
snapshot

for rep in 1 2 3; do
  timeout 60 "$build/bench/symmcomm-bench" --op allgather -d nvfp4 -b 1K -e 1G -f 1024 -n 20 -w 5 \
    -c 1 --json "$out/allgather_nvfp4_rep$rep.json" >"$out/allgather_nvfp4_rep$rep.txt" 2>&1
  echo "bench rep $rep rc=$?"
done
echo "bench done ($SECONDS s)"
snapshot

OUT="$out" timeout "${SYMMCOMM_DEMO_TIMEOUT_S:-300}" "$SYMMCOMM_ROOT/scripts/broken_build_demo.sh" \
  "$build" 2>&1 | tee "$out/broken_build_demo.txt"
echo "broken_build_demo rc=${PIPESTATUS[0]} ($SECONDS s)"
snapshot
