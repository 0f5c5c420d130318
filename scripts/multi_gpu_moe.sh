#!/usr/bin/env bash
# One call (<= 10 minutes) on a machine with several GPUs, one rank per GPU, for the MoE paths and
# the decode step, where ranks sharing one GPU cannot show them (they share its HBM, and processes
# are time-sliced): symmcomm and PyTorch on one NCCL (default .nccl-2.30.7, a copy of
# ../shared/nccl-2.30.7, carried; SYMMCOMM_SECOND_NCCL names another), then
#   1. the multi-rank MoE, replay and device-count tests at every rank count the GPUs allow;
#   2. symmcomm-bench --scenario moe-a2a per wire (nvfp4, fp8e4m3, bf16) in CUDA graphs, 5 cycles,
#      1-256 tokens per rank (symmcomm's MoE group beside its all-gather/reduce-scatter layer and
#      ncclAlltoAll padded);
#   3. --scenario moe-dp in CUDA graphs and eager, 5 cycles (device-count and padded layers);
#   4. bench/python/moe_step.py (one DeepSeek-R1 MoE layer's decode step against
#      torch.distributed) and bench/python/moe_a2a.py (against all_to_all_single) via torchrun.
# Each part gets its share of the time left and says when it ran out; everything lands in
# ${OUT}/multi_gpu_moe.tgz with the GPUs' topology.
# Usage: OUT=... scripts/multi_gpu_moe.sh [seconds, default 570]
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
limit="${1:-570}"
out="${OUT:-$SYMMCOMM_ROOT/gpu-out}"
second="${SYMMCOMM_SECOND_NCCL:-$SYMMCOMM_ROOT/.nccl-2.30.7}"
work="$(mktemp -d)"
mkdir -p "$out"
archive="$out/multi_gpu_moe.tgz"
trap 'tar czf "$archive" -C "$work" . ; echo "== $SECONDS s, logs in $archive"' EXIT
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
left() { echo $((limit - SECONDS)); }
gpus=$(nvidia-smi -L | wc -l)
if [ "$gpus" -lt 2 ]; then
  echo "multi_gpu_moe: $gpus GPU(s) here; this script needs 2 or more (one rank per GPU)" >&2
  exit 1
fi
symmcomm_repair_nccl_links "$second"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvidia-smi topo -m
  date -u; git -C "$SYMMCOMM_ROOT" log -1 --format=%h; } >"$work/machine.txt" 2>&1
head -3 "$work/machine.txt"
echo "== $gpus GPUs, one rank each, NCCL from $second"

build="$SYMMCOMM_ROOT/build-nccl2"
{ cmake -S "$SYMMCOMM_ROOT" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSYMMCOMM_WITH_MPI=ON \
    -DSYMMCOMM_TORCH_OPS=OFF -DNCCL_ROOT="$second" \
    -DCMAKE_CUDA_ARCHITECTURES="$(symmcomm_dev_architectures)" &&
  cmake --build "$build" --parallel "$(nproc)" \
    --target symmcomm_c symmcomm-bench symmcomm_multi_rank_tests; } >"$work/build.log" 2>&1 ||
  { tail -30 "$work/build.log"; exit 1; }
echo "== built ($SECONDS s)"
nccl_env=(env LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}")

# 1. The tests, one rank per GPU (the multi-rank tier's main shares GPUs only where ranks
#    outnumber them).
ranks_run=()
for n in 2 4 8; do [ "$n" -le "$gpus" ] && ranks_run+=("$n"); done
for n in "${ranks_run[@]}"; do
  "${nccl_env[@]}" SYMMCOMM_WAIT_TIMEOUT_S=60 timeout "$(( $(left) / 8 ))" \
    mpiexec --allow-run-as-root --oversubscribe --bind-to none -n "$n" \
    "$build/tests/symmcomm_multi_rank_tests" \
    --gtest_filter='MultiRankMoe.*:MultiRankReplay.*:MultiRankDeviceCounts.*' \
    >"$work/tests-n$n.log" 2>&1
  echo "== MoE, replay and device-count tests, $n ranks on $n GPUs: exit $?;" \
    "$(grep -cE '^\[  PASSED  \]' "$work/tests-n$n.log") rank(s) passed;" \
    "$(grep -hE '^\[  (FAILED|SKIPPED) ' "$work/tests-n$n.log" | sort -u | head -5 | tr '\n' ' ')"
done

# 2-3. symmcomm-bench, every GPU one rank.
bench="$build/bench/symmcomm-bench"
run_bench() {  # tag seconds args...
  local tag="$1" seconds="$2"
  shift 2
  "${nccl_env[@]}" timeout "$seconds" "$bench" -T 30 "$@" --json "$work/$tag.json" \
    >"$work/$tag.txt" 2>"$work/$tag.err"
  echo "== $tag: exit $?"
}
for wire in nvfp4 fp8e4m3 bf16; do
  run_bench "moe-a2a-graph-$wire" "$(( $(left) / 8 ))" --scenario moe-a2a --moe-wire "$wire" \
    --moe-max-tokens 256 -N 5 -G 10
  grep -E "^ +(1|16|64|256) " "$work/moe-a2a-graph-$wire.txt" | head -24
done
run_bench moe-dp-graph "$(( $(left) / 6 ))" --scenario moe-dp --moe-max-tokens 1024 -N 5 -G 10
run_bench moe-dp-eager "$(( $(left) / 5 ))" --scenario moe-dp --moe-max-tokens 1024 -N 5

# 4. The decode step and the all-to-all against PyTorch, symmcomm and PyTorch on the same NCCL.
py="$(symmcomm_torch_python)"
parts=2
for script in moe_step moe_a2a; do
  f="$work/${script//_/-}-n$gpus"
  extra=(); [ "$script" = moe_a2a ] || extra=(--trace 1)  # the step traced at 1 token, rank 0
  "${nccl_env[@]}" LD_PRELOAD="$second/lib/libnccl.so.2" \
    SYMMCOMM_LIBRARY="$build/src/libsymmcomm_c.so" \
    "$py" -m torch.distributed.run --nproc-per-node "$gpus" \
    "$SYMMCOMM_ROOT/bench/python/$script.py" "$f" "${extra[@]}" >"$f.txt" 2>&1 &
  pid=$!
  # A silent run (150 s) or its limit stops it with every rank's stacks (symmcomm_watch_ranks).
  if symmcomm_watch_ranks "$pid" "$(( ($(left) - 10) / parts ))" 150 "$f.txt" "$f" \
    "bench/python/$script.py"; then
    wait "$pid"
    echo "== $script, $gpus ranks on $gpus GPUs: exit $?"
  else
    echo "== $script, $gpus ranks on $gpus GPUs: stopped (stacks in $f.txt, backtraces in $f-*.bt)"
  fi
  grep -E "^\||Error|error|not measured|no trace" "$f.txt" | cut -c1-230 | head -40
  [ "$script" = moe_step ] && symmcomm_step_traces "$f" "$py"
  parts=1
done
