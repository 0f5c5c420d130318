#!/usr/bin/env bash
# The main job: symmcomm-bench over all visible GPUs (one rank each). Installs missing Debian
# packages (apt-get), configures, builds, runs the sweep of every op x format against plain
# NCCL, then the moe-dp scenario. Results (text + JSON) go to ${OUT:-bench/results/latest}.
# On a machine without a GPU it says so and exits non-zero.
# Usage: scripts/bench.sh [build-dir] [extra symmcomm-bench flags...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
build_dir="${1:-$SYMMCOMM_ROOT/build-bench}"
shift || true
extra=("$@")
export NCCL_NVLS_ENABLE=0
# A GPU first: without one there is nothing to measure, and no reason to build for minutes.
if ! { nvidia-smi -L 2>/dev/null | grep -q "^GPU "; } && ! symmcomm_gpu_node_exists; then
  echo "symmcomm-bench: no NVIDIA GPU on this machine (nvidia-smi lists none, no /dev/nvidia*)." \
       "The benchmark measures collectives on GPUs and needs at least one." >&2
  exit 2
fi
symmcomm_install_missing
echo "symmcomm: configuring and building in $build_dir ..." >&2
nccl_args=()
if [ -n "${SYMMCOMM_NCCL_ROOT:-}" ]; then
  nccl_args=(-DNCCL_ROOT="$SYMMCOMM_NCCL_ROOT")
  export LD_LIBRARY_PATH="$SYMMCOMM_NCCL_ROOT/lib:${LD_LIBRARY_PATH:-}"
fi
symmcomm_configure_build "$build_dir" -DSYMMCOMM_BUILD_TESTS=OFF "${nccl_args[@]}"
bench="$build_dir/bench/symmcomm-bench"
"$bench" -b 1K -e 1K -n 1 -w 0 >/dev/null || exit $?  # a driver that fails says why here
out="${OUT:-$SYMMCOMM_ROOT/bench/results/latest}"
mkdir -p "$out"
"$build_dir/bench/symmcomm_micro_bench" --benchmark_filter=-BM_Latency \
  --benchmark_out="$out/micro.json" --benchmark_out_format=json \
  --benchmark_counters_tabular=true | tee "$out/micro.txt"
# Decode-size latency (1 KiB-4 MiB per rank) of our LSA kernels beside NCCL's symmetric kernels
# and plain NCCL, eager and in CUDA graphs, over 2/4/8 NCCL ranks sharing GPU 0 in one process:
# needs NCCL >= 2.30 (NCCL_MULTI_RANK_GPU_ENABLE); with an older NCCL every case skips and says
# so. Build against another NCCL with SYMMCOMM_NCCL_ROOT=<its prefix>.
NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_P2P_LL_THRESHOLD=1073741824 \
  "$build_dir/bench/symmcomm_micro_bench" --benchmark_filter=BM_Latency \
  --benchmark_repetitions=3 --benchmark_min_time=0.05s \
  --benchmark_out="$out/latency.json" --benchmark_out_format=json | tee "$out/latency.txt"
python3 "$SYMMCOMM_ROOT/bench/plot.py" --latency "$out/latency" "$out/latency.json" ||
  echo "(no latency plot: bench/plot.py needs python3-matplotlib)"
for case in "allgather nvfp4" "allgather fp8e4m3" "allgather bf16" "reducescatter bf16" \
            "reducescatter nvfp4" "reducescatter fp8e4m3"; do
  set -- $case
  for path in auto fallback nccl; do
    if [ "$2" = nvfp4 ] && [ "$1" = reducescatter ] && [ "$path" = nccl ]; then continue; fi
    "$bench" --op "$1" -d "$2" --path "$path" -b 1K -e 1G -f 4 -n 20 -w 5 -c 1 \
      --json "$out/$1_$2_$path.json" "${extra[@]}" | tee "$out/$1_$2_$path.txt"
  done
done
"$bench" --scenario moe-dp -n 20 -w 5 --json "$out/moe_dp.json" | tee "$out/moe_dp.txt"
"$bench" --scenario moe-dp --moe-combine nvfp4 -n 20 -w 5 --json "$out/moe_dp_nvfp4.json" | tee "$out/moe_dp_nvfp4.txt"
echo "results in $out"
