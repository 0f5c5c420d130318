#!/usr/bin/env bash
# One device-machine session: configure, build, run every test, then the benchmarks, writing
# logs and JSON under ${OUT:-./gpu-out}. Usage: scripts/gpu_session.sh [tests|bench|all]
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
what="${1:-all}"
out="${OUT:-$SYMMCOMM_ROOT/gpu-out}"
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 SYMMCOMM_REQUIRE_GPU=1  # on the GPU machine a missing GPU is a failure
build="$SYMMCOMM_ROOT/build-dev"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvcc --version | tail -1; } \
  >"$out/machine.txt" 2>&1
cat "$out/machine.txt"
if ! symmcomm_configure_build "$build" >"$out/build.log" 2>&1; then
  tail -60 "$out/build.log"; exit 1
fi
echo "build OK"
rc=0
if [ "$what" = tests ] || [ "$what" = all ]; then
  # The system NCCL (2.28 here): the multi-rank tier runs without symmetric windows.
  symmcomm_allow_skips "$SYMMCOMM_SKIPS_WITHOUT_LSA"
  (cd "$build" && ctest --output-on-failure --parallel 4 --timeout 600 >"$out/ctest.log" 2>&1) || rc=1
  grep -E "tests passed|tests failed|Failed|Label|^ *(cpu|gpu|multi_gpu) " "$out/ctest.log" | tail -40
  symmcomm_ctest_verdict "$build" "$out/ctest.log" | tee "$out/skips.txt" || rc=1
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  "$build/bench/symmcomm_micro_bench" --benchmark_out="$out/micro.json" \
    --benchmark_out_format=json --benchmark_counters_tabular=true 2>&1 | tee "$out/micro.txt" | tail -30
fi
if [ "$what" = sass ] || [ "$what" = all ]; then
  # Instruction counts of the codec kernels (cuobjdump lives on the device machine only).
  if command -v cuobjdump >/dev/null 2>&1; then
    obj=$(find "$build" -name 'codecs.cu.o' | head -1)
    cuobjdump --dump-sass "$obj" >"$out/sass_codecs.txt" 2>&1 || true
    awk '/Function :/ {name=$3} /^ +\/\*[0-9a-f]+\*\// {n[name]++} END {for (k in n) print n[k], k}' \
      "$out/sass_codecs.txt" | sort -k2 | tee "$out/sass_counts.txt"
  fi
fi
exit $rc
