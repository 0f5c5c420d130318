#!/usr/bin/env bash
# One call on a multi-GPU machine (issue: multi-GPU validation): build, run the whole GPU test
# suite with NCCL's tuning log (to see which [Symmetric] kernels ran), then every op x format x
# path of symmcomm-bench from 1 KiB to 1 GiB beside plain NCCL, the moe-dp scenario (bf16 and
# NVFP4 combine) and an MPI run; everything lands in ${OUT}/multi_gpu.tgz (one file: the device
# tool returns at most 8).
# Usage: OUT=... scripts/multi_gpu_session.sh [max-bytes]
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
max="${1:-1G}"
out="${OUT:-$SYMMCOMM_ROOT/gpu-out}"
work=/tmp/symmcomm-multi
rm -rf "$work" && mkdir -p "$work" "$out"
build="$SYMMCOMM_ROOT/build-dev"
gpus=$(nvidia-smi -L | wc -l)
{ nvidia-smi; nvidia-smi topo -m; nvcc --version | tail -1; } >"$work/machine.txt" 2>&1
symmcomm_configure_build "$build" >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; exit 1; }
(cd "$build" && NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING ctest --output-on-failure --timeout 900 \
   >"$work/ctest.log" 2>&1)
grep -E "tests passed|tests failed|\(Failed" "$work/ctest.log"
grep -o "\[Symmetric\][^,]*" "$work/ctest.log" | sort | uniq -c | sort -rn >"$work/symmetric_kernels.txt"
head -20 "$work/symmetric_kernels.txt"
bench="$build/bench/symmcomm-bench"
for case in "allgather nvfp4" "allgather fp8e4m3" "allgather bf16" "reducescatter bf16" \
            "reducescatter nvfp4" "reducescatter fp8e4m3"; do
  set -- $case
  for path in auto nccl-symmetric fallback nccl; do
    [ "$1" = reducescatter ] && [ "$2" != bf16 ] && [ "$path" = nccl-symmetric ] && continue
    [ "$1" = reducescatter ] && [ "$2" = nvfp4 ] && [ "$path" = nccl ] && continue
    "$bench" --op "$1" -d "$2" --path "$path" -b 1K -e "$max" -f 4 -n 20 -w 5 -c 1 \
      --json "$work/$1_$2_$path.json" >"$work/$1_$2_$path.txt" 2>"$work/$1_$2_$path.err"
    echo "$1 $2 $path: rc=$?"
  done
done
"$bench" --scenario moe-dp -n 20 -w 5 --json "$work/moe_dp.json" >"$work/moe_dp.txt" 2>&1
"$bench" --scenario moe-dp --moe-combine nvfp4 -n 20 -w 5 --json "$work/moe_dp_nvfp4.json" \
  >"$work/moe_dp_nvfp4.txt" 2>&1
if command -v mpirun >/dev/null 2>&1; then
  mpirun --allow-run-as-root --oversubscribe -x NCCL_NVLS_ENABLE -n "$gpus" "$bench" --op allgather \
    -d nvfp4 -b 1K -e 64M -f 8 -c 1 >"$work/mpi_allgather_nvfp4.txt" 2>&1
  echo "mpirun: rc=$?"
fi
tar czf "$out/multi_gpu.tgz" -C "$work" .
echo "results: $out/multi_gpu.tgz"
