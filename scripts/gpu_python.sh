#!/usr/bin/env bash
# Device session, short: the Python package's tests (torch operators included), the torch
# examples, the operator-overhead table, PyTorch's symmetric-memory probe, the newest GPU code's
# tests and the one-launch quantize benchmark. Builds only libsymmcomm_c (both NCCL lines), the
# micro benchmark and two test binaries (second line); a next call on the warm machine can use
# them: scripts/gpu_latency.sh. Logs in ${OUT:-./gpu-out}.
# Usage: [SYMMCOMM_PYTHON=/path/python3] [SYMMCOMM_SKIP="quantize probe ..."] scripts/gpu_python.sh
# (steps: pytest (NCCL 2.30.7) pytest228 tests device_counts_tests pdl quantize examples overhead probe
# device_counts_bench moe_dp)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
out="${OUT:-$SYMMCOMM_ROOT/gpu-out}"
second="${SYMMCOMM_SECOND_NCCL:-$SYMMCOMM_ROOT/.nccl-2.30.7}"
symmcomm_repair_nccl_links "$second"
py="$(symmcomm_torch_python)"
mkdir -p "$out"
want() { [[ " ${SYMMCOMM_SKIP:-} " != *" $1 "* ]]; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; date -u; git -C "$SYMMCOMM_ROOT" log -1 --format=%h 2>/dev/null; } >"$out/machine.txt" 2>&1
export NCCL_NVLS_ENABLE=0
jobs=$(( $(nproc) / 2 ))
build() {  # build <dir> <tag> <targets> [cmake args...]
  local dir="$1" tag="$2" targets="$3"; shift 3
  cmake -S "$SYMMCOMM_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSYMMCOMM_WITH_MPI=ON \
    -DSYMMCOMM_TORCH_OPS=OFF \
    "$@" >"$out/build-$tag.log" 2>&1 &&
    cmake --build "$dir" --parallel "$jobs" --target $targets >>"$out/build-$tag.log" 2>&1
}
# SYMMCOMM_PY_LIBRARY_ONLY=1: the C ABI library alone (the Python steps need nothing else).
targets1="symmcomm_c symmcomm_gpu_tests"
targets2="symmcomm_c symmcomm_micro_bench symmcomm_gpu_tests symmcomm_multi_rank_tests symmcomm-bench"
if [ "${SYMMCOMM_PY_LIBRARY_ONLY:-0}" = 1 ]; then targets1=symmcomm_c; targets2=symmcomm_c; fi
build "$SYMMCOMM_ROOT/build-dev" system "$targets1" & p1=$!
build "$SYMMCOMM_ROOT/build-nccl2" second "$targets2" -DNCCL_ROOT="$second" & p2=$!
wait $p1 || { tail -30 "$out/build-system.log"; exit 1; }
wait $p2 || { tail -30 "$out/build-second.log"; exit 1; }
echo "built ($(date -u +%T))"
# The C++ operators on both lines (test_ops runs them beside the Python ones).
symmcomm_build_torch_ops "$SYMMCOMM_ROOT/build-dev" "$out/build-torch-system.log" &
symmcomm_build_torch_ops "$SYMMCOMM_ROOT/build-nccl2" "$out/build-torch-second.log" &
wait
pytest_line() {  # pytest_line <tag> <build dir> [env...]
  local tag="$1" dir="$2"; shift 2
  (cd "$SYMMCOMM_ROOT/python" && env "$@" SYMMCOMM_LIBRARY="$dir/src/libsymmcomm_c.so" \
     timeout 330 "$py" -m pytest -q -rfs -p no:cacheprovider --timeout 150 tests \
     >"$out/pytest-$tag.txt" 2>&1)
  echo "== pytest $tag: $(tail -1 "$out/pytest-$tag.txt")"
  grep -E "^(E|FAILED) " "$out/pytest-$tag.txt" | cut -c1-250 | head -8
  # Every skip with its reason (python/tests/conftest.py); an unexpected one failed the run.
  sed -n '/^Skipped tests (/,/^[^ ]/p' "$out/pytest-$tag.txt" | head -20
}
l2="LD_LIBRARY_PATH=$second/lib:${LD_LIBRARY_PATH:-}"
# A torch process has NCCL loaded before symmcomm (torch links the nvidia-nccl wheel's, 2.28.9
# with torch 2.11): symmcomm then runs on that one. Preloading 2.30.7 makes both use it.
pre2="LD_PRELOAD=$second/lib/libnccl.so.2"
if want pytest; then
  pytest_line nccl-2.30.7 "$SYMMCOMM_ROOT/build-nccl2" "$l2" "$pre2" NCCL_MULTI_RANK_GPU_ENABLE=1 \
    SYMMCOMM_ALLOWED_SKIPS="$SYMMCOMM_SKIPS_BY_DESIGN"
fi
if want pytest228; then
  pytest_line nccl-2.28.3 "$SYMMCOMM_ROOT/build-dev" \
    SYMMCOMM_ALLOWED_SKIPS="$SYMMCOMM_SKIPS_BY_DESIGN|$SYMMCOMM_SKIPS_WITHOUT_LSA"
fi
# The newest GPU code's tests (one-launch quantize; device-count gathers, swizzled scales
# included, at 2 and 8 ranks sharing the GPU).
new_tests='Sizes/Nvfp4Kernels.*:CodecKernels.OneLaunch*:Collectives.Graphs*:LsaLoopbackDeviceCounts.*:VirtualRanks/LsaLoopback.*'
want tests && for line in nccl-2.30.7 nccl-2.28.3; do
  if [ $line = nccl-2.30.7 ]; then bin=build-nccl2; e=("$l2"); else bin=build-dev; e=(); fi
  env "${e[@]}" timeout 120 "$SYMMCOMM_ROOT/$bin/tests/symmcomm_gpu_tests" --gtest_filter="$new_tests" \
    >"$out/gpu-tests-new-$line.txt" 2>&1
  echo "== new GPU tests ($line): exit $?"
  grep -E "PASSED|FAILED|Failure" "$out/gpu-tests-new-$line.txt" | head -8
  # The bounded host wait needs a short timeout (read once per process): a run of its own.
  env "${e[@]}" SYMMCOMM_WAIT_TIMEOUT_S=1 timeout 60 "$SYMMCOMM_ROOT/$bin/tests/symmcomm_gpu_tests" \
    --gtest_filter='SymmAllocator.AHostWait*' >"$out/gpu-tests-wait-$line.txt" 2>&1
  echo "== bounded host wait ($line): exit $?"
  grep -E "PASSED|FAILED|Failure|SKIPPED" "$out/gpu-tests-wait-$line.txt" | head -4
done
want device_counts_tests && for n in 2 8; do
  env "$l2" NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_P2P_LL_THRESHOLD=1073741824 SYMMCOMM_EXPECT_SYMMETRIC=1 \
    timeout 120 mpiexec --allow-run-as-root --oversubscribe --bind-to none -n "$n" \
    "$SYMMCOMM_ROOT/build-nccl2/tests/symmcomm_multi_rank_tests" --gtest_filter='MultiRankDeviceCounts.*' \
    >"$out/device-counts-n$n.txt" 2>&1
  echo "== MultiRankDeviceCounts at $n ranks: exit $?"; grep -E "PASSED|FAILED" "$out/device-counts-n$n.txt" | head -6
done
# The production LSA kernels launched with programmatic dependent launch (opt-in), 4 ranks.
if want pdl; then
  env "$l2" NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_P2P_LL_THRESHOLD=1073741824 \
    SYMMCOMM_EXPECT_SYMMETRIC=1 SYMMCOMM_LSA_PDL=1 timeout 150 mpiexec --allow-run-as-root \
    --oversubscribe --bind-to none -n 4 "$SYMMCOMM_ROOT/build-nccl2/tests/symmcomm_multi_rank_tests" \
    --gtest_filter='MultiRankAllGather.*:MultiRankReduceScatter.*:MultiRankQuantizeGather.*:MultiRankDeviceCounts.*:MultiRankStreamOrder.*' \
    >"$out/pdl-n4.txt" 2>&1
  echo "== LSA kernels with PDL at 4 ranks: exit $?"; grep -E "PASSED|FAILED" "$out/pdl-n4.txt" | head -6
fi
# Computed-scale NVFP4 quantize: separate launches vs one cooperative launch, same run.
if want quantize; then
  timeout 120 "$SYMMCOMM_ROOT/build-nccl2/bench/symmcomm_micro_bench" \
    --benchmark_filter=BM_QuantizeNvfp4Launches --benchmark_repetitions=3 \
    --benchmark_display_aggregates_only=true --benchmark_out="$out/quantize_launches.json" \
    --benchmark_out_format=json >"$out/quantize_launches.txt" 2>&1
  echo "== quantize launches: exit $?"; grep "_mean" "$out/quantize_launches.txt" | cut -c1-150
fi
lib2="$SYMMCOMM_ROOT/build-nccl2/src/libsymmcomm_c.so"
if want overhead; then
  env "$l2" "$pre2" SYMMCOMM_LIBRARY="$lib2" timeout 90 "$py" \
    "$SYMMCOMM_ROOT/bench/python/ops_overhead.py" "$out/ops-overhead" >"$out/ops-overhead.txt" 2>&1
  echo "== ops_overhead: exit $?"; tail -12 "$out/ops-overhead.txt"
fi
want examples && for ex in moe_layer moe_layer_compiled dynamic_shapes moe_group_layer; do
  env "$l2" "$pre2" SYMMCOMM_LIBRARY="$lib2" timeout -s ABRT 90 "$py" -X faulthandler \
    "$SYMMCOMM_ROOT/examples/python/$ex.py" >"$out/example-$ex.txt" 2>&1
  echo "== example $ex: exit $?"; tail -6 "$out/example-$ex.txt" | cut -c1-200
done
# What PyTorch's NCCL symmetric memory exposes (docs/engine-integration.md section 10): two
# ranks sharing the GPU, PyTorch made to load NCCL 2.30.7.
if want probe; then
  env "$l2" "$pre2" NCCL_MULTI_RANK_GPU_ENABLE=1 SYMMCOMM_LIBRARY="$lib2" timeout 120 "$py" \
    -m torch.distributed.run --nproc-per-node 2 "$SYMMCOMM_ROOT/scripts/probe_torch_symm.py" \
    "$out" >"$out/probe_torch_symm.txt" 2>&1
  echo "== probe_torch_symm: exit $?"; tail -5 "$out/probe_torch_symm.txt" | cut -c1-200
  # The whole record, compact (a call's output keeps only its tail).
  python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' \
    "$out/probe_torch_symm.json" 2>&1 | cut -c1-6000
fi
# Device-count gather benchmark, threaded ranks sharing the GPU; an overrun gets every
# thread's backtrace (cuda-gdb) beside its output.
if want device_counts_bench; then
  f="$out/device_counts_gather"
  env "$l2" NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_P2P_LL_THRESHOLD=1073741824 \
    "$SYMMCOMM_ROOT/build-nccl2/bench/symmcomm_micro_bench" --benchmark_filter=BM_DeviceCountsGather \
    --benchmark_out="$f.json" --benchmark_out_format=json >"$f.txt" 2>"$f.err" &
  pid=$!
  symmcomm_watch "$pid" "${SYMMCOMM_DEVICE_COUNTS_LIMIT_S:-90}" "$f.bt" ||
    echo "== device-count gather bench: overran; backtraces in $f.bt"
  wait "$pid"
  echo "== device-count gather bench: exit $?, $(grep -c manual_time "$f.txt") cases"
  grep manual_time "$f.txt" | cut -c1-200
fi
# symmcomm-bench's moe-dp scenario with ranks of one process sharing the GPU (--ranks-per-gpu:
# the ranks run concurrently, unlike MPI processes, which time-slice it): device counts on NCCL's
# path and on the one-launch LSA kernel beside the padded layer, at 2, 4 and 8 ranks.
want moe_dp && for n in 2 4 8; do
  f="$out/moe-dp-n$n"
  env "$l2" NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_P2P_LL_THRESHOLD=1073741824 timeout 120 \
    "$SYMMCOMM_ROOT/build-nccl2/bench/symmcomm-bench" --scenario moe-dp --ranks-per-gpu "$n" \
    --moe-max-tokens 1024 --json "$f.json" >"$f.txt" 2>"$f.err"
  echo "== moe-dp, $n ranks in one process: exit $?"
  grep -E "^#|device-counts" "$f.txt" | head -16
  [ -s "$f.err" ] && tail -3 "$f.err"
done
# Each step reports its own result above; a step left out by SYMMCOMM_SKIP is not a failure.
exit 0
