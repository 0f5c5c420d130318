#!/usr/bin/env bash
# Device session, short: the Python package's tests (torch operators included), the torch
# examples, the operator-overhead table, PyTorch's symmetric-memory probe, the newest GPU code's
# tests and the one-launch quantize benchmark. Builds only libsymmcomm_c (both NCCL lines), the
# micro benchmark and two test binaries (second line); a next call on the warm machine can use
# them: scripts/gpu_latency.sh. Logs in ${OUT:-./gpu-out}.
# Usage: [SYMMCOMM_PYTHON=/path/python3] scripts/gpu_python.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
out="${OUT:-$SYMMCOMM_ROOT/gpu-out}"
second="${SYMMCOMM_SECOND_NCCL:-$SYMMCOMM_ROOT/.nccl-2.30.7}"
py="${SYMMCOMM_PYTHON:-/opt/torch/.venv/bin/python3}"
[ -x "$py" ] || py=python3
mkdir -p "$out"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; date -u; git -C "$SYMMCOMM_ROOT" log -1 --format=%h 2>/dev/null; } >"$out/machine.txt" 2>&1
export NCCL_NVLS_ENABLE=0
jobs=$(( $(nproc) / 2 ))
build() {  # build <dir> <tag> <targets> [cmake args...]
  local dir="$1" tag="$2" targets="$3"; shift 3
  cmake -S "$SYMMCOMM_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSYMMCOMM_WITH_MPI=ON \
    "$@" >"$out/build-$tag.log" 2>&1 &&
    cmake --build "$dir" --parallel "$jobs" --target $targets >>"$out/build-$tag.log" 2>&1
}
build "$SYMMCOMM_ROOT/build-dev" system symmcomm_c & p1=$!
build "$SYMMCOMM_ROOT/build-nccl2" second \
  "symmcomm_c symmcomm_micro_bench symmcomm_gpu_tests symmcomm_multi_rank_tests" \
  -DNCCL_ROOT="$second" & p2=$!
wait $p1 || { tail -30 "$out/build-system.log"; exit 1; }
wait $p2 || { tail -30 "$out/build-second.log"; exit 1; }
echo "built ($(date -u +%T))"
pytest_line() {  # pytest_line <tag> <build dir> [env...]
  local tag="$1" dir="$2"; shift 2
  (cd "$SYMMCOMM_ROOT/python" && env "$@" SYMMCOMM_LIBRARY="$dir/src/libsymmcomm_c.so" \
     timeout 200 "$py" -m pytest -q -rs -p no:cacheprovider --timeout 120 tests \
     >"$out/pytest-$tag.txt" 2>&1)
  echo "== pytest $tag: $(tail -1 "$out/pytest-$tag.txt")"
  grep -E "^(E|FAILED) " "$out/pytest-$tag.txt" | cut -c1-250 | head -8
}
l2="LD_LIBRARY_PATH=$second/lib:${LD_LIBRARY_PATH:-}"
pytest_line nccl-2.30.7 "$SYMMCOMM_ROOT/build-nccl2" "$l2" NCCL_MULTI_RANK_GPU_ENABLE=1
pytest_line nccl-2.28.3 "$SYMMCOMM_ROOT/build-dev"
# The newest GPU code's tests (one-launch quantize; device-count gathers, swizzled scales
# included, at 2 and 8 ranks sharing the GPU).
env "$l2" timeout 120 "$SYMMCOMM_ROOT/build-nccl2/tests/symmcomm_gpu_tests" \
  --gtest_filter='Sizes/Nvfp4Kernels.*:CodecKernels.OneLaunch*' >"$out/gpu-tests-new.txt" 2>&1
echo "== new codec tests: exit $?"; grep -E "PASSED|FAILED|Failure" "$out/gpu-tests-new.txt" | head -8
for n in 2 8; do
  env "$l2" NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_P2P_LL_THRESHOLD=1073741824 SYMMCOMM_EXPECT_SYMMETRIC=1 \
    timeout 120 mpiexec --allow-run-as-root --oversubscribe --bind-to none -n "$n" \
    "$SYMMCOMM_ROOT/build-nccl2/tests/symmcomm_multi_rank_tests" --gtest_filter='MultiRankRagged.*' \
    >"$out/ragged-n$n.txt" 2>&1
  echo "== MultiRankRagged at $n ranks: exit $?"; grep -E "PASSED|FAILED" "$out/ragged-n$n.txt" | head -6
done
# Computed-scale NVFP4 quantize: separate launches vs one cooperative launch, same run (#30).
timeout 120 "$SYMMCOMM_ROOT/build-nccl2/bench/symmcomm_micro_bench" \
  --benchmark_filter=BM_QuantizeNvfp4Launches --benchmark_repetitions=3 \
  --benchmark_display_aggregates_only=true --benchmark_out="$out/quantize_launches.json" \
  --benchmark_out_format=json >"$out/quantize_launches.txt" 2>&1
echo "== quantize launches: exit $?"; grep "_mean" "$out/quantize_launches.txt" | cut -c1-150
lib2="$SYMMCOMM_ROOT/build-nccl2/src/libsymmcomm_c.so"
for ex in moe_layer moe_layer_compiled; do
  env "$l2" SYMMCOMM_LIBRARY="$lib2" timeout -s ABRT 60 "$py" -X faulthandler \
    "$SYMMCOMM_ROOT/examples/python/$ex.py" >"$out/example-$ex.txt" 2>&1
  echo "== example $ex: exit $?"; tail -6 "$out/example-$ex.txt" | cut -c1-200
done
env "$l2" SYMMCOMM_LIBRARY="$lib2" timeout 90 "$py" "$SYMMCOMM_ROOT/bench/python/ops_overhead.py" \
  "$out/ops-overhead" >"$out/ops-overhead.txt" 2>&1
echo "== ops_overhead: exit $?"; tail -12 "$out/ops-overhead.txt"
# What PyTorch's NCCL symmetric memory exposes (docs/engine-integration.md section 10): two
# ranks sharing the GPU, PyTorch made to load NCCL 2.30.7.
env "$l2" LD_PRELOAD="$second/lib/libnccl.so.2" NCCL_MULTI_RANK_GPU_ENABLE=1 \
  SYMMCOMM_LIBRARY="$lib2" timeout 120 "$py" -m torch.distributed.run --nproc-per-node 2 \
  "$SYMMCOMM_ROOT/scripts/probe_torch_symm.py" "$out" >"$out/probe_torch_symm.txt" 2>&1
echo "== probe_torch_symm: exit $?"; tail -40 "$out/probe_torch_symm.txt" | cut -c1-200
