#!/usr/bin/env bash
# One device call of the open work, each phase sized for one call of at most 10 minutes on one
# H200 (a warm machine keeps its builds; a fresh one rebuilds in about a minute). Every phase
# writes its logs under a scratch folder and packs them into ONE archive, $OUT/<phase>.tgz (the
# device tool returns at most 8 files), even when it is stopped at its time limit.
#
# Phases:
#   first     the one call that carries the most when a session gets only one: the 2.30.7 build,
#             the multi-rank suites of the scratch-line kernels (small gather, push
#             reduce-scatter, device counts; 2/4/8 ranks sharing the GPU), then hostcost
#   moeonly   the MoE group's tests alone (2.30.7 build; MoeLoopback, MoeGroupOneRank, MultiRankMoe
#             at 2/4/8 ranks sharing the GPU): for a call with little device time left
#   moefirst  the MoE group's tests first (the loopback kernels, then the multi-rank tier's
#             MultiRankMoe at 2/4/8 ranks sharing the GPU, on 2.30.7), then the rest of tests230
#   moeproof  the MoE group's tests on both NCCL lines (2.30.7: the LSA path and the fallback,
#             2/4/8 ranks sharing the GPU, and the Python package's MoE tests; 2.28.3: the
#             fallback across processes), then
#             symmcomm-bench's moe-a2a in CUDA graphs at 8, 4 and 2 ranks, then eager at 8, with
#             the time left
#   moetorch  the MoE group proven at this tree in one call: its tests on 2.30.7 (LSA path and
#             fallback, 2/4/8 ranks sharing the GPU), moe-a2a in CUDA graphs at 8 ranks,
#             libsymmcomm_torch.so built, the operator suite (test_ops.py, both implementations)
#             and the Python MoE tests on 2.30.7, then, with 70 s left, the MoE tests on 2.28.3
#   a2awires  symmcomm-bench --scenario moe-a2a at 8 ranks sharing the GPU in CUDA graphs, once
#             per wire (nvfp4, fp8e4m3, bf16), 5 cycles each
#   moeprof   Nsight Compute over the MoE group's kernels on one rank (NCCL 2.30.7: a one-rank
#             LSA team, so no kernel waits for a peer that ncu's serialisation would hold back):
#             moe-a2a at 256 tokens, NVFP4 and FP8 wires, each kernel's speed of light, memory
#             workload (global store requests against sectors) and warp stalls (moe-prof-*.txt)
#   moesan    the sanitizers over the MoE group's kernels (2.30.7 build): memcheck, racecheck,
#             initcheck and synccheck over the loopback and one-rank tests, then memcheck and
#             initcheck over MultiRankMoe at 2 ranks sharing the GPU (memcheck on both ranks,
#             initcheck on one rank at a time), then initcheck over moe-a2a (each wire) with 2
#             ranks as threads of one process
#   tests230  build against NCCL 2.30.7 (.nccl-2.30.7, a copy of ../shared/nccl-2.30.7); the
#             multi-rank tier (2/4/8 ranks sharing the GPU, the counts-in-lines tests among
#             them), then the single-GPU tier
#   bench     the decode-size reduce-scatter sweep and floor (the push kernels' receive mappings
#             side by side; SYMMCOMM_BENCH_LATENCY=0 leaves it out), then the device-count gather
#             and combine at decode capacities (means SYMMCOMM_BENCH_GATHER_MEANS, default 4|8,
#             and SYMMCOMM_BENCH_COMBINE_MEANS, default 2|4|8) beside the padded calls in CUDA
#             graphs (counts in the lines = variant 4; decode_device_counts.md), 5 repetitions each
#   lines     the counts-in-lines kernels checked, then timed: the 2.30.7 build, the device-count
#             multi-rank tests at 2/4/8 ranks sharing the GPU, then the device-count gather and
#             combine at decode capacities (means 1-8) in CUDA graphs beside the padded calls, 5
#             repetitions (the bench phase's measurement without its latency sweep)
#   moe       symmcomm-bench's moe-dp layer at 2/4/8 ranks (padded and device-count layers),
#             then at decode capacities in CUDA graphs, 5 cycles, with counts in the lines
#             (SYMMCOMM_LL_COUNTS=1)
#   hostcost  the host cost of a call (BM_HostCost*, the torch operator's overhead table, on
#             2.30.7), this tree and, where .host-cost-before is carried
#             (scripts/host_cost_before.sh <commit>), that earlier tree, side by side
#             (host-cost.md)
#   tests228  the Python suite on the system NCCL (2.28; 2.30.7's is in torch); symmcomm-info
#             and python -m symmcomm.info there; then its single-GPU tier and the multi-rank
#             tier at 2 ranks (NCCL_HOSTID: the fallback across processes)
#   python    the Python suites whole (no -x) on both NCCL lines at this tree, the Python
#             examples (the dynamic-shape one among them), then the 2.28.3 crash hunt
#             (scripts/gpu_crash_hunt.sh: the suite under gdb, the suspect alone and in order,
#             PyTorch imported first or not)
#   suites    the Python suites whole on both NCCL lines, 2.28.3 first (no LD_PRELOAD there: the
#             case the operators' libstdc++ binding crashed), the runtime-copies check of both
#             torch operator libraries, then the Python examples and 2.30.7's suite (about 560 s
#             on a fresh machine: the builds, two suites of about 150 s each, the examples)
#   step      one DeepSeek-R1 MoE layer's decode step (bench/python/moe_step.py) at 2, 4 and 8
#             ranks sharing the GPU, symmcomm and PyTorch both on NCCL 2.30.7: symmcomm with
#             device counts and padded against torch.distributed padded (and symmetric);
#             SYMMCOMM_STEP_MPS=1 runs the ranks under CUDA MPS (not time-sliced),
#             SYMMCOMM_STEP_EXPERTS=bmm the expert stand-in at capacity (default: grouped),
#             SYMMCOMM_STEP_TRACE=T traces each way's step at T tokens on rank 0 (default 1),
#             SYMMCOMM_STEP_TRACE_EVERY_RANK=1 on every rank; each way's trace is compared with
#             torch.distributed padded's kernel by kernel, and with every rank's, rank 0's work
#             beside the other ranks' GEMMs (symmcomm_step_traces: -kernels-<way>.md, -overlap-<way>.md)
#   a2a       MoE dispatch + combine by expert (bench/python/moe_a2a.py) at 2, 4 and 8 ranks
#             sharing the GPU: symmcomm.moe.MoeGroup, symmcomm's AG/RS layer with device counts
#             and torch.distributed.all_to_all_single padded, eager and in graphs
#   a2abench  symmcomm-bench --scenario moe-a2a at 2, 4 and 8 ranks sharing the GPU (2.30.7):
#             the MoE group, the all-gather/reduce-scatter layer and ncclAlltoAll padded, 1-256
#             tokens per rank, in CUDA graphs then eager, 5 cycles each (SYMMCOMM_MOE_WIRE=bf16:
#             BF16 rows)
#   multi228  the multi-rank tier on the system NCCL (2.28) at 2, 4 and 8 ranks
#   torch     the torch operators: libsymmcomm_torch.so built against the machine's PyTorch on
#             both NCCL lines, the Python suite on 2.30.7 (the C++ and Python implementations
#             side by side; 2.28.3's is in tests228), the Python examples, then the operator
#             overhead table (C++ operator, its overload, Python operator, ctypes call,
#             torch.distributed)
#   segv228   the segmentation fault of the Python suite on NCCL 2.28.3
#             (python/tests/test_ops.py): the libraries built, then test_ops.py under gdb, up to twice (the second with
#             glibc's heap checks), with the native backtrace of a fault, then once with the C ABI
#             library and the torch operators built with ASan
#   hangs     cases that stopped a sweep, each alone (SYMMCOMM_HANG_TRIES, 3) under a watch taking
#             cuda-gdb's view of the kernels still running (SYMMCOMM_HANG_CASES)
#   sanitize  compute-sanitizer's memcheck over every test of the single-GPU suite (a call of its
#             own; SYMMCOMM_MEMCHECK_SHARD=i/k splits it across k calls, the initchecks with the
#             last), then initcheck over 2 ranks sharing the GPU: both ranks under the tool, then
#             each rank alone under it beside a plain one (where rank 1 failed to start), then
#             over symmcomm-bench's NVFP4 gather and reduce-scatter and moe-dp with 2 ranks as
#             threads of one process (every rank's stores visible to the tool)
#   checks    the abort word broken on purpose (its tests must fail), a skip the run does not
#             allow failing the run, then compute-sanitizer's four tools over symmcomm's kernels
#             (one GPU, and 2 ranks sharing it on 2.30.7)
# Usage: OUT=/tmp/o scripts/gpu_round.sh <phase> [seconds, default 570]
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
phase="${1:?usage: scripts/gpu_round.sh first|moeonly|moefirst|moeproof|moetorch|a2awires|moeprof|moesan|tests230|bench|lines|moe|a2a|a2abench|hangs|hostcost|torch|python|suites|step|segv228|tests228|multi228|checks|sanitize [seconds]}"
limit="${2:-570}"
dest="${OUT:-$SYMMCOMM_ROOT/gpu-out}"
work="$(mktemp -d)"
second="${SYMMCOMM_SECOND_NCCL:-$SYMMCOMM_ROOT/.nccl-2.30.7}"
symmcomm_repair_nccl_links "$second"
mkdir -p "$dest"
trap 'tar czf "$dest/$phase.tgz" -C "$work" . ; echo "== $phase: $SECONDS s, logs in $dest/$phase.tgz"' EXIT
export OUT="$work" NCCL_NVLS_ENABLE=0 GTEST_COLOR=no PYTHONUNBUFFERED=1 SYMMCOMM_NO_TUNING_LOG=1
left() { echo $((limit - SECONDS)); }  # seconds left of this call

# The MoE tests of one suite (second: NCCL 2.30.7; system: the machine's), built first, the
# suite given $3 seconds; logs ctest-moe-<$2>.log and skips-moe-<$2>.txt.
moe_ctest() {
  SYMMCOMM_SUITES="$1" SYMMCOMM_BUILD_ONLY=1 timeout "$(left)" \
    "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh || exit 1
  SYMMCOMM_SUITES="$1" SYMMCOMM_SUITE_TIMEOUT_S="$3" "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh -R 'Moe'
  mv "$work/ctest-$1.log" "$work/ctest-moe-$2.log"
  mv "$work/skips-$1.txt" "$work/skips-moe-$2.txt" 2>/dev/null
}

# symmcomm-bench --scenario moe-a2a ($1: graph or eager) at $2 ranks sharing the GPU (2.30.7),
# at most $3 seconds (then the host's backtraces); its 1, 16, 64 and 256-token rows printed.
moe_a2a() {
  local mode="$1" n="$2" f="$work/moe-a2a-$1-n$2${SYMMCOMM_MOE_WIRE:+-$SYMMCOMM_MOE_WIRE}" pid
  local args=(-N 5 --moe-wire "${SYMMCOMM_MOE_WIRE:-nvfp4}")
  [ "$mode" = graph ] && args+=(-G 10)
  env LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}" NCCL_MULTI_RANK_GPU_ENABLE=1 \
    "$SYMMCOMM_ROOT/build-nccl2/bench/symmcomm-bench" --scenario moe-a2a --ranks-per-gpu "$n" \
    --moe-max-tokens "${SYMMCOMM_MOE_MAX_TOKENS:-256}" -T 30 "${args[@]}" --json "$f.json" \
    >"$f.txt" 2>"$f.err" &
  pid=$!
  symmcomm_watch "$pid" "$3" "$f.bt" ||
    echo "== moe-a2a $mode, $n ranks: overran; host backtraces in $f.bt"
  wait "$pid"
  echo "== moe-a2a $mode, $n ranks sharing the GPU: exit $?"
  grep -E "^ +(1|16|64|256) " "$f.txt" | head -24
  [ -s "$f.err" ] && grep -v "^\[symmcomm-bench\] moe-a2a: [0-9]" "$f.err" | tail -3
}

# initcheck over symmcomm-bench with 2 ranks as threads of one process sharing the GPU (2.30.7):
# every rank's stores are then the watched process's own, which initcheck can follow (a peer
# process's stores through its mapping are invisible to it). $1: the log's tag; then the
# benchmark's arguments (small sizes: the tool serialises every kernel).
initcheck_threads() {
  local tag="$1" log="$work/initcheck-threads-$1.log"
  shift
  env LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}" NCCL_MULTI_RANK_GPU_ENABLE=1 \
    SYMMCOMM_WAIT_TIMEOUT_S=120 timeout "$(( ($(left) - 10) / 4 ))" \
    compute-sanitizer --tool initcheck --report-api-errors no --error-exitcode 99 \
    "$SYMMCOMM_ROOT/build-nccl2/bench/symmcomm-bench" --ranks-per-gpu 2 -T 60 "$@" >"$log" 2>&1
  echo "initcheck over 2 threaded ranks, $tag: exit $?; $(grep -E "ERROR SUMMARY" "$log" | tail -1)"
}

# The Python package's tests named by the arguments after $2 on NCCL 2.30.7 (PyTorch's too,
# preloaded), within $2 seconds, logged as pytest-<$1>.txt; failures and skips printed.
py_tests() {
  local tag="$1" limit="$2"
  shift 2
  (cd "$SYMMCOMM_ROOT/python" && env LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}" \
     LD_PRELOAD="$second/lib/libnccl.so.2" NCCL_MULTI_RANK_GPU_ENABLE=1 \
     SYMMCOMM_ALLOWED_SKIPS="$SYMMCOMM_SKIPS_BY_DESIGN" \
     SYMMCOMM_LIBRARY="$SYMMCOMM_ROOT/build-nccl2/src/libsymmcomm_c.so" \
     timeout "$limit" "$(symmcomm_torch_python)" -m pytest -q -rfs -p no:cacheprovider \
     --timeout 200 "$@" >"$work/pytest-$tag.txt" 2>&1)
  echo "== pytest $tag: $(tail -1 "$work/pytest-$tag.txt")"
  grep -E "^(E|FAILED) " "$work/pytest-$tag.txt" | cut -c1-250 | head -12
  sed -n '/^Skipped tests (/,/^[^ ]/p' "$work/pytest-$tag.txt" | head -12
}


case "$phase" in
  first)
    export SYMMCOMM_SUITES=second
    SYMMCOMM_BUILD_ONLY=1 timeout "$(left)" "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh || exit 1
    SYMMCOMM_SUITE_TIMEOUT_S=$(( ($(left) - 20) / 2 )) "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh \
      -R 'multi_rank\.MultiRank(SmallGather|SmallReduceScatter|ReduceScatter|DeviceCounts)\.n|^LsaLoopback'
    timeout "$(( $(left) - 10 ))" "$SYMMCOMM_ROOT"/scripts/gpu_host_cost.sh
    ;;
  tests230|moefirst|moeonly)
    export SYMMCOMM_SUITES=second
    SYMMCOMM_BUILD_ONLY=1 timeout "$(left)" "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh || exit 1
    if [ "$phase" != tests230 ]; then
      SYMMCOMM_SUITE_TIMEOUT_S=$(( $(left) < 160 ? $(left) - 10 : 150 )) \
        "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh -R 'Moe'
      mv "$work/ctest-second.log" "$work/ctest-moe-2.30.7.log"
      mv "$work/skips-second.txt" "$work/skips-moe-2.30.7.txt"
      [ "$phase" = moeonly ] && exit 0
    fi
    SYMMCOMM_SUITE_TIMEOUT_S=$(( $(left) - 150 )) "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh -L multi_rank
    mv "$work/ctest-second.log" "$work/ctest-multi-rank-2.30.7.log"
    mv "$work/skips-second.txt" "$work/skips-multi-rank-2.30.7.txt"
    SYMMCOMM_SUITE_TIMEOUT_S=$(( $(left) - 10 )) "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh -L gpu -LE multi_rank
    ;;
  bench|lines)
    export SYMMCOMM_SUITES=second
    SYMMCOMM_BUILD_ONLY=1 timeout "$(left)" "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh || exit 1
    if [ "$phase" = lines ]; then
      SYMMCOMM_SUITE_TIMEOUT_S=150 "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh \
        -R 'multi_rank\.MultiRankDeviceCounts\.n'
      export SYMMCOMM_BENCH_LATENCY=0 SYMMCOMM_BENCH_GATHER_MEANS="${SYMMCOMM_BENCH_GATHER_MEANS:-1|2|4|8}" \
        SYMMCOMM_BENCH_COMBINE_MEANS="${SYMMCOMM_BENCH_COMBINE_MEANS:-1|2|4|8}" \
        SYMMCOMM_BENCH_VARIANTS="${SYMMCOMM_BENCH_VARIANTS:-1|3|4|5|6}"
    fi
    # The reduce-scatter sweep first (the push kernels' receive mappings side by side: variants
    # 6 and 7), then the device-count calls at decode capacities in graphs (what decode runs):
    # gather means 4 and 8, combine 2, 4, 8.
    if [ "${SYMMCOMM_BENCH_LATENCY:-1}" = 1 ]; then
      SYMMCOMM_LATENCY_OPS="Floor ReduceScatter" SYMMCOMM_LATENCY_BYTES="1024|4096|16384|65536" \
        SYMMCOMM_LATENCY_LIMIT_S=80 SYMMCOMM_LATENCY_BACKTRACE=0 timeout 330 \
        "$SYMMCOMM_ROOT"/scripts/gpu_latency.sh >"$work/latency-summary.txt" 2>&1
      echo "== latency: exit $?"
    fi
    gather_means="${SYMMCOMM_BENCH_GATHER_MEANS:-4|8}"
    combine_means="${SYMMCOMM_BENCH_COMBINE_MEANS:-2|4|8}"
    variants="${SYMMCOMM_BENCH_VARIANTS:-[0-9]}"
    # One process per rank count, each its own JSON, so that a part cut at the time limit keeps
    # the others; merged for the table.
    parts=3
    for n in 2 4 8; do
      env LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}" NCCL_MULTI_RANK_GPU_ENABLE=1 \
        NCCL_P2P_LL_THRESHOLD=1073741824 timeout "$(( ($(left) - 15) / parts ))" \
        "$SYMMCOMM_ROOT"/build-nccl2/bench/symmcomm_micro_bench \
        --benchmark_filter="BM_DeviceCounts(Gather/ranks:$n/mean_tokens:($gather_means)/variant:($variants)/graph:1|Combine/ranks:$n/mean_tokens:($combine_means)/variant:($variants)/.*graph:1)" \
        --benchmark_repetitions=5 --benchmark_out="$work/device-counts-n$n.json" \
        --benchmark_out_format=json >"$work/device-counts-n$n.txt" 2>&1
      echo "== device-count gather and combine, $n ranks: exit $?"
      parts=$((parts - 1))
    done
    python3 "$SYMMCOMM_ROOT"/scripts/merge_benchmark_json.py "$work/device_counts.json" "$work"/device-counts-n*.json
    python3 "$SYMMCOMM_ROOT"/bench/plot.py --device-counts "$work/decode" "$work/device_counts.json" &&
      cat "$work/decode_device_counts.md"
    ;;
  moe)
    export SYMMCOMM_SUITES=second
    SYMMCOMM_BUILD_ONLY=1 timeout "$(left)" "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh || exit 1
    SYMMCOMM_SKIP="tests latency" SYMMCOMM_MOE_LIMIT_S=$(( ($(left) - 120) / 3 )) \
      timeout "$(( $(left) - 110 ))" "$SYMMCOMM_ROOT"/scripts/gpu_small_gather.sh
    # Decode capacities again, in CUDA graphs, with counts in the scratch lines (agreed: every
    # rank sets it), the padded layers beside them in the same run.
    mkdir -p "$work/counts-in-lines"
    OUT="$work/counts-in-lines" SYMMCOMM_LL_COUNTS=1 SYMMCOMM_MOE_MAX_TOKENS=16 SYMMCOMM_MOE_ARGS="-G 10 -N 5" \
      SYMMCOMM_SKIP="tests latency" SYMMCOMM_MOE_LIMIT_S=$(( ($(left) - 10) / 3 )) \
      timeout "$(( $(left) - 5 ))" "$SYMMCOMM_ROOT"/scripts/gpu_small_gather.sh
    ;;
  hangs)
    # Cases that stopped making progress in a sweep, each alone in a process of its own, three
    # times, under a watch: past 40 s the process gets cuda-gdb's list of the kernels still on
    # the GPU and every thread's backtrace (hang-<case>-<try>.bt), then is stopped.
    export SYMMCOMM_SUITES=second
    SYMMCOMM_BUILD_ONLY=1 timeout "$(left)" "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh || exit 1
    export LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}" NCCL_MULTI_RANK_GPU_ENABLE=1 \
      NCCL_P2P_LL_THRESHOLD=1073741824
    cases="BM_DeviceCountsCombine/ranks:4/mean_tokens:2/variant:0/nvfp4:1/graph:1"
    cases+=" BM_LatencyReduceScatter/ranks:8/bytes:65536/variant:3/graph:0"
    for case in ${SYMMCOMM_HANG_CASES:-$cases}; do
      name="$(echo "$case" | tr -c 'A-Za-z0-9\n' '_')"
      for try in $(seq "${SYMMCOMM_HANG_TRIES:-3}"); do
        [ "$(left)" -gt 60 ] || break
        "$SYMMCOMM_ROOT"/build-nccl2/bench/symmcomm_micro_bench --benchmark_filter="^$case/" \
          --benchmark_repetitions=5 >"$work/hang-$name-$try.txt" 2>&1 &
        pid=$!
        for ((t = 0; t < 400; ++t)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then
          timeout 60 cuda-gdb -batch -p "$pid" -ex "info cuda kernels" -ex "info cuda blocks" \
            -ex "thread apply all bt 12" >"$work/hang-$name-$try.bt" 2>&1
          kill -9 "$pid"
          echo "== $case, try $try: still running after 40 s (kernels on the GPU:)"
          grep -A12 "Kernel" "$work/hang-$name-$try.bt" | head -14
        fi
        wait "$pid"
        echo "== $case, try $try: exit $?, $(grep -c 'manual_time ' "$work/hang-$name-$try.txt") timed repetitions"
      done
    done
    ;;
  hostcost)
    timeout "$(( $(left) - 10 ))" "$SYMMCOMM_ROOT"/scripts/gpu_host_cost.sh
    ;;
  segv228)
    SYMMCOMM_PY_LIBRARY_ONLY=1 SYMMCOMM_SKIP="pytest pytest228 tests device_counts_tests pdl quantize examples overhead probe device_counts_bench moe_dp" \
      timeout "$(( $(left) - 200 ))" "$SYMMCOMM_ROOT"/scripts/gpu_python.sh
    py="$(symmcomm_torch_python)"
    # Beside the debugger's tries: the C ABI library and the torch operators built with ASan
    # (host code), for try 3 (a heap overflow then stops where it happens).
    (cmake -S "$SYMMCOMM_ROOT" -B "$SYMMCOMM_ROOT/build-asan228" -G Ninja \
       -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSYMMCOMM_BUILD_TESTS=OFF -DSYMMCOMM_BUILD_BENCH=OFF \
       -DSYMMCOMM_BUILD_EXAMPLES=OFF -DSYMMCOMM_C_STATIC_RUNTIME=OFF -DSYMMCOMM_TORCH_OPS=ON \
       -DSYMMCOMM_TORCH_PYTHON="$py" -DCMAKE_CUDA_ARCHITECTURES="$(symmcomm_dev_architectures)" \
       -DCMAKE_CXX_FLAGS="-fsanitize=address -fno-omit-frame-pointer" \
       -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address &&
     cmake --build "$SYMMCOMM_ROOT/build-asan228" --parallel 8 --target symmcomm_c symmcomm_torch) \
      >"$work/build-asan228.log" 2>&1 &
    asan_build=$!
    debugger="$(command -v gdb || command -v cuda-gdb)"
    echo "== debugger: $debugger"
    # Try 2 checks glibc's heap as it goes (a corruption then stops at its cause, not later).
    malloc_debug=$(ls /usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0 2>/dev/null)
    for try in 1 2; do
      [ "$(left)" -gt 90 ] || break
      extra=()
      [ "$try" = 2 ] && [ -n "$malloc_debug" ] && extra=(-ex "set environment MALLOC_CHECK_=3" \
        -ex "set environment LD_PRELOAD=$malloc_debug")
      (cd "$SYMMCOMM_ROOT/python" && SYMMCOMM_LIBRARY="$SYMMCOMM_ROOT/build-dev/src/libsymmcomm_c.so" \
        timeout "$(( $(left) - 15 ))" "$debugger" -q -batch "${extra[@]}" -ex run -ex bt \
        -ex "info sharedlibrary" --args "$py" -X faulthandler -m pytest -q -x -p no:cacheprovider \
        tests/test_ops.py) >"$work/gdb-$try.txt" 2>&1
      echo "== try $try: $(grep -E 'passed|failed' "$work/gdb-$try.txt" | tail -1)"
      grep -E -A40 "SIGSEGV|SIGABRT" "$work/gdb-$try.txt" | grep -E "SIGSEGV|SIGABRT|^#[0-9]+ " |
        cut -c1-220 | head -40
      grep -q -E "SIGSEGV|SIGABRT" "$work/gdb-$try.txt" && break
    done
    # Try 3: under ASan (CUDA needs the shadow gap unprotected).
    if wait "$asan_build" && [ "$(left)" -gt 60 ]; then
      (cd "$SYMMCOMM_ROOT/python" && LD_PRELOAD="$(gcc -print-file-name=libasan.so)" \
        ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=0:halt_on_error=1 \
        SYMMCOMM_LIBRARY="$SYMMCOMM_ROOT/build-asan228/src/libsymmcomm_c.so" \
        timeout "$(( $(left) - 15 ))" "$py" -X faulthandler -m pytest -q -x -p no:cacheprovider \
        tests/test_ops.py) >"$work/asan-3.txt" 2>&1
      echo "== try 3 (ASan): exit $?, $(grep -E 'passed|failed' "$work/asan-3.txt" | tail -1)"
      grep -E -A30 "ERROR: AddressSanitizer" "$work/asan-3.txt" | cut -c1-220 | head -40
    else
      echo "== try 3 (ASan): no ASan build or no time left"; tail -5 "$work/build-asan228.log"
    fi
    ;;
  torch)
    SYMMCOMM_PY_LIBRARY_ONLY=1 SYMMCOMM_SKIP="pytest228 tests device_counts_tests pdl quantize probe device_counts_bench moe_dp" \
      timeout "$(( $(left) - 10 ))" "$SYMMCOMM_ROOT"/scripts/gpu_python.sh
    ;;
  python)
    SYMMCOMM_PY_LIBRARY_ONLY=1 SYMMCOMM_SKIP="pytest228 tests device_counts_tests pdl quantize overhead probe device_counts_bench moe_dp ${SYMMCOMM_PY_SKIP:-}" \
      timeout "$(( $(left) - ${SYMMCOMM_HUNT_S:-280} ))" "$SYMMCOMM_ROOT"/scripts/gpu_python.sh
    "$SYMMCOMM_ROOT"/scripts/gpu_crash_hunt.sh "$(( $(left) - 10 ))"
    ;;
  suites)
    export SYMMCOMM_PY_LIBRARY_ONLY=1
    SYMMCOMM_SKIP="pytest tests device_counts_tests pdl quantize examples overhead probe device_counts_bench moe_dp" \
      timeout "$(( $(left) / 2 ))" "$SYMMCOMM_ROOT"/scripts/gpu_python.sh
    for l in build-dev build-nccl2; do
      SYMMCOMM_RUNTIME_COPIES_TYPES=1 python3 "$SYMMCOMM_ROOT/scripts/check_runtime_copies.py" \
        "$SYMMCOMM_ROOT/$l/src/libsymmcomm_torch.so" | cut -c1-250
    done
    # The Python examples (at most 150 s) before 2.30.7's suite: a limit that cuts the call then
    # cuts the suite, whose progress lines say how far it got, rather than the examples' verdicts.
    examples_s=$(( $(left) - 10 )); [ "$examples_s" -gt 150 ] && examples_s=150
    SYMMCOMM_SKIP="pytest pytest228 tests device_counts_tests pdl quantize overhead probe device_counts_bench moe_dp" \
      timeout "$examples_s" "$SYMMCOMM_ROOT"/scripts/gpu_python.sh
    SYMMCOMM_SKIP="pytest228 tests device_counts_tests pdl quantize examples overhead probe device_counts_bench moe_dp" \
      timeout "$(( $(left) - 10 ))" "$SYMMCOMM_ROOT"/scripts/gpu_python.sh
    ;;
  moetorch)
    moe_ctest second 2.30.7 90
    moe_a2a graph 8 60
    # SYMMCOMM_NO_TORCH_BUILD=1 (a short call): the Python operators only, the C++ half skips.
    [ "${SYMMCOMM_NO_TORCH_BUILD:-0}" = 1 ] ||
      symmcomm_build_torch_ops "$SYMMCOMM_ROOT/build-nccl2" "$work/build-torch-second.log"
    py_tests moe-ops-2.30.7 "$(( $(left) - ${SYMMCOMM_LEAVE_S:-15} ))" tests/test_moe.py \
      tests/test_moe_group.py tests/test_moe_ops.py \
      "tests/test_torch.py::test_a_moe_group_on_one_rank_places_every_row_and_combines" \
      "tests/test_torch.py::test_a_moe_group_on_an_fp8_wire_quantizes_each_block_of_128_as_the_reference" \
      tests/test_torch_ranks.py::test_the_moe_group_dispatches_and_combines_as_the_one_process_world_at_two_ranks \
      tests/test_torch_ranks.py::test_the_moe_group_example_replays_its_graph_at_two_ranks \
      tests/test_ops.py
    [ "$(left)" -gt 70 ] || exit 0
    moe_ctest system 2.28.3 "$(( $(left) - 60 ))"
    ;;
  moeprof)
    SYMMCOMM_SUITES=second SYMMCOMM_BUILD_ONLY=1 timeout "$(left)" \
      "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh || exit 1
    for wire in nvfp4 fp8e4m3; do
      env LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}" timeout "$(( ($(left) - 10) / 2 ))" \
        ncu --kernel-name regex:'moe_(counts|rows|send_back|pull|sum)_kernel' --launch-skip 4 \
        --launch-count 12 --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables \
        --section WarpStateStats --section LaunchStats \
        "$SYMMCOMM_ROOT/build-nccl2/bench/symmcomm-bench" --scenario moe-a2a --moe-wire "$wire" \
        --moe-min-tokens 256 --moe-max-tokens 256 -n 3 -w 1 -N 1 >"$work/moe-prof-$wire.txt" 2>&1
      echo "== ncu over the MoE kernels, one rank, $wire wire: exit $?"
      grep -E "moe_[a-z_]+_kernel|Duration|DRAM Throughput|Memory Throughput|L2 Hit" \
        "$work/moe-prof-$wire.txt" | head -40
    done
    ;;
  moesan)
    SYMMCOMM_SUITES=second SYMMCOMM_BUILD_ONLY=1 timeout "$(left)" \
      "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh || exit 1
    gpu_tests="$SYMMCOMM_ROOT/build-nccl2/tests/symmcomm_gpu_tests"
    for tool in memcheck racecheck initcheck synccheck; do
      env LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}" timeout 90 compute-sanitizer \
        --tool "$tool" --report-api-errors no --error-exitcode 99 "$gpu_tests" --gtest_filter='MoeLoopback.*:MoeGroupOneRank.*' \
        >"$work/$tool-moe.log" 2>&1
      echo "$tool over the MoE single-GPU tests: exit $?; $(grep -E "ERROR SUMMARY" \
        "$work/$tool-moe.log" | tail -1); $(grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$work/$tool-moe.log" | tr '\n' ' ')"
    done
    ranks="$SYMMCOMM_ROOT/build-nccl2/tests/symmcomm_multi_rank_tests"
    # Both ranks under memcheck; initcheck one rank at a time beside a plain one (two ranks
    # under initcheck together fail to start).
    plain=("$ranks" --gtest_filter='MultiRankMoe.*')
    for run in memcheck-both initcheck-rank0 initcheck-rank1; do
      tool=(compute-sanitizer --tool "${run%-*}" --report-api-errors no --error-exitcode 99)
      case "${run#*-}" in
        both) layout=(-n 2 "${tool[@]}" "${plain[@]}") ;;
        rank0) layout=(-n 1 "${tool[@]}" "${plain[@]}" : -n 1 "${plain[@]}") ;;
        rank1) layout=(-n 1 "${plain[@]}" : -n 1 "${tool[@]}" "${plain[@]}") ;;
      esac
      env LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}" NCCL_MULTI_RANK_GPU_ENABLE=1 \
        SYMMCOMM_WAIT_TIMEOUT_S=60 timeout "$(( ($(left) - 10) / 3 ))" \
        mpiexec --allow-run-as-root --oversubscribe --bind-to none "${layout[@]}" \
        >"$work/$run-moe-ranks.log" 2>&1
      echo "$run over MultiRankMoe, 2 ranks sharing the GPU: exit $?; $(grep -E "ERROR SUMMARY" \
        "$work/$run-moe-ranks.log" | sort | uniq -c | tr '\n' ' ')$(grep -cE "^\[  PASSED  \]" \
        "$work/$run-moe-ranks.log") rank(s) passed"
    done
    for wire in nvfp4 fp8e4m3 bf16; do
      initcheck_threads "moe-a2a-$wire" --scenario moe-a2a --moe-wire "$wire" --moe-max-tokens 16 \
        -n 2 -w 1 -N 1
    done
    ;;
  sanitize)
    # memcheck over every test of the single-GPU suite, in a call of its own: the suite less its
    # long memory-measuring tests first, then each long test alone; then initcheck over 2 ranks
    # sharing the GPU, whose rank 1 failed to start: both ranks under the tool with NCCL's and
    # symmcomm's logs, then each rank alone under it beside a plain one.
    SYMMCOMM_SUITES="system second" SYMMCOMM_BUILD_ONLY=1 timeout "$(left)" \
      "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh || exit 1
    gpu_tests="$SYMMCOMM_ROOT/build-dev/tests/symmcomm_gpu_tests"
    long='*ThousandCycles*:*ThousandArenaCycles*:*RealDeviceExhaustion*:*ThreadSafe*'
    memcheck() {  # log filter seconds
      timeout "$3" compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 99 \
        "$gpu_tests" --gtest_filter="$2" >"$work/$1" 2>&1
      local status=$?
      echo "memcheck $2: exit $status; $(grep -E "ERROR SUMMARY" "$work/$1" | tail -1);" \
        "$(grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$work/$1" | tr '\n' ' ')"
    }
    # SYMMCOMM_MEMCHECK_SHARD=i/k: this call takes shard i of k (gtest's sharding) of the suite
    # and every k-th long test from the i-th; the initchecks run with the last shard only.
    shard="${SYMMCOMM_MEMCHECK_SHARD:-0/1}"
    index="${shard%/*}" shards="${shard#*/}"
    GTEST_TOTAL_SHARDS="$shards" GTEST_SHARD_INDEX="$index" \
      memcheck "memcheck-suite-$index-of-$shards.log" "-$long" "$(( $(left) - 200 ))"
    IFS=: read -ra longs <<<"$long"
    for ((i = index; i < ${#longs[@]}; i += shards)); do
      t="${longs[$i]}"
      memcheck "memcheck-long-${t//\*/}.log" "$t" "$(( ($(left) - 130) / 4 ))"
    done
    [ "$index" = "$((shards - 1))" ] || exit 0
    ranks="$SYMMCOMM_ROOT/build-nccl2/tests/symmcomm_multi_rank_tests"
    production='MultiRankSmallGather.ChangingSizes*:MultiRankSmallReduceScatter.*Shards*:MultiRankDeviceCounts.*'
    tool=(compute-sanitizer --tool initcheck --error-exitcode 99)
    plain=("$ranks" --gtest_filter="$production")
    for who in both rank0 rank1; do
      case "$who" in
        both) layout=(-n 2 "${tool[@]}" "${plain[@]}") ;;
        rank0) layout=(-n 1 "${tool[@]}" "${plain[@]}" : -n 1 "${plain[@]}") ;;
        rank1) layout=(-n 1 "${plain[@]}" : -n 1 "${tool[@]}" "${plain[@]}") ;;
      esac
      env LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}" NCCL_MULTI_RANK_GPU_ENABLE=1 \
        NCCL_DEBUG=WARN SYMMCOMM_LOG=debug SYMMCOMM_WAIT_TIMEOUT_S=60 timeout "$(( ($(left) - 5) / 3 ))" \
        mpiexec --allow-run-as-root --oversubscribe --bind-to none "${layout[@]}" \
        >"$work/initcheck-ranks-$who.log" 2>&1
      echo "initcheck over 2 ranks ($who under the tool): exit $?; $(grep -E "ERROR SUMMARY" \
        "$work/initcheck-ranks-$who.log" | sort | uniq -c | tr '\n' ' ')$(grep -cE "^\[  PASSED  \]" \
        "$work/initcheck-ranks-$who.log") rank(s) passed; $(grep -m1 -E "failed|Error" \
        "$work/initcheck-ranks-$who.log" | cut -c1-200)"
    done
    initcheck_threads gather-nvfp4 --op allgather -d nvfp4 --path lsa-kernel -b 1K -e 64K -f 8 -n 2 -w 1
    initcheck_threads scatter-nvfp4 --op reducescatter -d nvfp4 --path lsa-kernel -b 1K -e 64K -f 8 \
      -n 2 -w 1
    initcheck_threads moe-dp --scenario moe-dp --moe-max-tokens 16 -n 2 -w 1 -N 1
    ;;
  step|a2a)
    # step: one DeepSeek-R1 MoE layer's decode step (bench/python/moe_step.py); a2a: MoE
    # dispatch + combine by expert (bench/python/moe_a2a.py): symmcomm.moe.MoeGroup beside
    # symmcomm's AG/RS layer and all_to_all_single padded. 2, 4 and 8 ranks sharing the GPU,
    # symmcomm and PyTorch both on NCCL 2.30.7.
    script=moe_step; [ "$phase" = a2a ] && script=moe_a2a
    py="$(symmcomm_torch_python)"
    { cmake -S "$SYMMCOMM_ROOT" -B "$SYMMCOMM_ROOT/build-nccl2" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DSYMMCOMM_WITH_MPI=ON -DSYMMCOMM_TORCH_OPS=OFF -DNCCL_ROOT="$second" &&
      cmake --build "$SYMMCOMM_ROOT/build-nccl2" --parallel 12 --target symmcomm_c; } \
      >"$work/build-$phase.log" 2>&1 || { tail -20 "$work/build-$phase.log"; exit 1; }
    { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; date -u
      git -C "$SYMMCOMM_ROOT" log -1 --format=%h; } >"$work/machine.txt" 2>&1
    sms=$("$py" -c 'import torch; print(torch.cuda.get_device_properties(0).multi_processor_count)' \
      2>/dev/null || echo 132)
    # SYMMCOMM_STEP_MPS=1: the ranks (processes) under a CUDA MPS daemon of this call's own, so
    # that their kernels run at once instead of time-sliced; stopped when the runs end.
    mps=0
    if [ "${SYMMCOMM_STEP_MPS:-0}" = 1 ]; then
      export CUDA_MPS_PIPE_DIRECTORY="$work/mps-pipe" CUDA_MPS_LOG_DIRECTORY="$work/mps-log"
      mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
      if nvidia-cuda-mps-control -d; then mps=1; echo "MPS: on" >>"$work/machine.txt"
      else echo "== MPS did not start: the ranks time-slice the GPU"; unset CUDA_MPS_PIPE_DIRECTORY; fi
    fi
    # The step's options (moe_step.py): SYMMCOMM_STEP_EXPERTS=bmm|grouped, its expert stand-in;
    # SYMMCOMM_STEP_TRACE, the batch whose whole step is also traced on rank 0 (1; 0: none);
    # SYMMCOMM_STEP_TRACE_EVERY_RANK=1, every rank's trace of it.
    step_args=()
    if [ "$script" = moe_step ]; then
      step_args=(--trace "${SYMMCOMM_STEP_TRACE:-1}")
      [ "${SYMMCOMM_STEP_TRACE_EVERY_RANK:-0}" = 1 ] && step_args+=(--trace-every-rank)
      [ -z "${SYMMCOMM_STEP_EXPERTS:-}" ] || step_args+=(--experts "$SYMMCOMM_STEP_EXPERTS")
    fi
    parts=3
    for n in ${SYMMCOMM_STEP_RANKS:-2 4 8}; do
      f="$work/${script//_/-}-n$n"
      # Under MPS a collective of ranks sharing the GPU ends only if every rank's NCCL kernel is
      # resident at once; uncapped, torch.distributed's padded gather can hang at 4 and 8 ranks
      # (every rank in cudaDeviceSynchronize). NCCL_MAX_CTAS caps each rank's NCCL grid to half
      # its share of the SMs (SYMMCOMM_STEP_NCCL_CTAS overrides; 0 leaves NCCL's choice).
      ctas="${SYMMCOMM_STEP_NCCL_CTAS:-$(( sms / (2 * n) ))}"
      if [ "$mps" = 1 ] && [ "$ctas" != 0 ]; then export NCCL_MAX_CTAS="$ctas"; else unset NCCL_MAX_CTAS; fi
      # A hang stops the run once its log has been silent for SYMMCOMM_STEP_QUIET_S (150 s), with
      # every rank's Python and native stacks (symmcomm_watch_ranks), and leaves the time to the
      # next rank count.
      env LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}" LD_PRELOAD="$second/lib/libnccl.so.2" \
        NCCL_MULTI_RANK_GPU_ENABLE=1 SYMMCOMM_LIBRARY="$SYMMCOMM_ROOT/build-nccl2/src/libsymmcomm_c.so" \
        "$py" -m torch.distributed.run --nproc-per-node "$n" "$SYMMCOMM_ROOT/bench/python/$script.py" \
        "$f" ${SYMMCOMM_STEP_TOKENS:+--tokens "$SYMMCOMM_STEP_TOKENS"} "${step_args[@]}" >"$f.txt" 2>&1 &
      pid=$!
      if symmcomm_watch_ranks "$pid" "$(( ($(left) - 10) / parts ))" "${SYMMCOMM_STEP_QUIET_S:-150}" \
        "$f.txt" "$f" "bench/python/$script.py"; then
        wait "$pid"
        echo "== $script, $n ranks sharing the GPU: exit $?"
      else
        echo "== $script, $n ranks sharing the GPU: stopped (stacks in $f.txt, backtraces in $f-*.bt)"
        # Killed clients can leave the MPS server refusing new ones (cudaErrorDevicesUnavailable):
        # a fresh daemon for the next rank count.
        if [ "$mps" = 1 ]; then
          echo quit | nvidia-cuda-mps-control; sleep 3
          nvidia-cuda-mps-control -d || { mps=0; unset CUDA_MPS_PIPE_DIRECTORY
            echo "== MPS did not restart: the next ranks time-slice the GPU"; }
        fi
      fi
      grep -E "^\||^Ceiling|not measured|no trace|Error|error|^Thread|^Current thread|File .*bench/python" \
        "$f.txt" |
        cut -c1-230 | head -60
      [ "$script" = moe_step ] && symmcomm_step_traces "$f" "$py"
      parts=$((parts - 1))
    done
    [ "$mps" = 1 ] && echo quit | nvidia-cuda-mps-control
    ;;
  a2awires)
    # 5 cycles of a wire take about 25 s on an H100 (8 ranks sharing it), 3 wires and the build
    # about 150 s: below that the runs are cut (their JSON keeps the cycles they finished).
    [ "$limit" -ge 150 ] ||
      echo "== a2awires: $limit s is below the ~150 s three wires of 5 cycles take; expect cut runs"
    SYMMCOMM_SUITES=second SYMMCOMM_BUILD_ONLY=1 timeout "$(left)" \
      "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh || exit 1
    parts=3
    for wire in nvfp4 fp8e4m3 bf16; do
      SYMMCOMM_MOE_WIRE=$wire moe_a2a graph 8 "$(( ($(left) - 10) / parts ))"
      parts=$((parts - 1))
    done
    ;;
  a2abench)
    SYMMCOMM_SUITES=second SYMMCOMM_BUILD_ONLY=1 timeout "$(left)" \
      "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh || exit 1
    parts=6
    for mode in graph eager; do
      for n in 2 4 8; do
        moe_a2a "$mode" "$n" "$(( ($(left) - 10) / parts ))"
        parts=$((parts - 1))
      done
    done
    ;;
  moeproof)
    moe_ctest second 2.30.7 120
    # The Python package's MoE tests (the library's group on its paths, one rank and two, the
    # example's graph).
    py_tests moe-2.30.7 170 tests/test_moe.py tests/test_moe_group.py tests/test_torch.py \
      tests/test_torch_ranks.py -k "moe or Moe"
    moe_ctest system 2.28.3 120
    parts=4
    for run in graph-8 graph-4 graph-2 eager-8; do
      moe_a2a "${run%-*}" "${run#*-}" "$(( ($(left) - 10) / parts ))"
      parts=$((parts - 1))
    done
    ;;
  multi228)
    # The multi-rank tier on 2.28.3 at 2, 4 and 8 ranks (separate processes with their own
    # NCCL_HOSTID: NCCL's fallback over sockets; the LSA tests skip inside the binary).
    export SYMMCOMM_SUITES=system
    SYMMCOMM_BUILD_ONLY=1 timeout "$(left)" "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh || exit 1
    SYMMCOMM_SUITE_TIMEOUT_S=$(( $(left) - 10 )) "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh -L multi_rank
    mv "$work/ctest-system.log" "$work/ctest-multi-rank-2.28.3.log"
    mv "$work/skips-system.txt" "$work/skips-multi-rank-2.28.3.txt" 2>/dev/null
    ;;
  tests228)
    # The Python suite on 2.28.3, the machine reports there, then the 2.28.3 tiers with the time
    # left. The 2.28.3 tree configured for this GPU alone before gpu_python.sh reuses it.
    export SYMMCOMM_SUITES=system
    SYMMCOMM_BUILD_ONLY=1 timeout "$(left)" "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh || exit 1
    SYMMCOMM_SKIP="pytest tests device_counts_tests pdl quantize examples overhead probe device_counts_bench moe_dp" \
      timeout "$(( $(left) - 150 ))" "$SYMMCOMM_ROOT"/scripts/gpu_python.sh
    SYMMCOMM_LIBRARY="$SYMMCOMM_ROOT/build-dev/src/libsymmcomm_c.so" PYTHONPATH="$SYMMCOMM_ROOT/python" \
      timeout 30 python3 -m symmcomm.info >"$work/python-info-2.28.3.txt" 2>&1
    echo "== python -m symmcomm.info: exit $?"
    # The machine report of this GPU's own build (sm_90) on NCCL 2.28.3, text and JSON.
    timeout 60 "$SYMMCOMM_ROOT"/build-dev/src/symmcomm-info >"$work/symmcomm-info-2.28.3.txt" 2>&1
    echo "== symmcomm-info: exit $?"
    timeout 60 "$SYMMCOMM_ROOT"/build-dev/src/symmcomm-info --json >"$work/symmcomm-info-2.28.3.json" 2>&1
    SYMMCOMM_SUITE_TIMEOUT_S=$(( ($(left) - 20) * 2 / 3 )) "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh -L gpu -LE multi_rank
    mv "$work/ctest-system.log" "$work/ctest-gpu-2.28.3.log"
    SYMMCOMM_SUITE_TIMEOUT_S=$(( $(left) - 10 )) "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh -R 'multi_rank\..*\.n2$'
    ;;
  checks)
    SYMMCOMM_SUITES="system second" SYMMCOMM_BUILD_ONLY=1 timeout "$(left)" \
      "$SYMMCOMM_ROOT"/scripts/gpu_nccl_matrix.sh || exit 1
    # The abort word not polled, on the 2.30.7 build: the one-GPU abort tests and the multi-rank
    # ones (2 ranks sharing the GPU) must fail.
    env LD_LIBRARY_PATH="$second/lib:${LD_LIBRARY_PATH:-}" SYMMCOMM_DEMO_NCCL230_LIB="$second/lib" \
      SYMMCOMM_DEMO_ONLY=abort SYMMCOMM_DEMO_SKIP_RESTORED=1 timeout "$(( $(left) - 240 ))" \
      "$SYMMCOMM_ROOT"/scripts/broken_build_demo.sh "$SYMMCOMM_ROOT"/build-nccl2
    # The demo restores the source (here too if its time ran out mid-mutation); the build must
    # follow before anything else runs it.
    find "$SYMMCOMM_ROOT/src" -name '*.demo-orig' | while read -r orig; do
      mv "$orig" "${orig%.demo-orig}" && touch "${orig%.demo-orig}" && echo "restored ${orig%.demo-orig}"
    done
    cmake --build "$SYMMCOMM_ROOT"/build-nccl2 --parallel "$(nproc)" >"$work/rebuild.log" 2>&1 || exit 1
    # A skip whose reason the run allows passes; the same skip not allowed fails the program.
    for allowed in "GPUs, this machine has" "nothing-allowed"; do
      SYMMCOMM_ALLOWED_SKIPS="$allowed" timeout 60 "$SYMMCOMM_ROOT"/build-dev/tests/symmcomm_multi_gpu_tests \
        >"$work/forced-skip-${allowed%%,*}.txt" 2>&1
      echo "== skips allowed \"$allowed\": exit $? ($(grep -c "UNEXPECTED SKIP" \
        "$work/forced-skip-${allowed%%,*}.txt") unexpected)"
    done
    # Four tools over one GPU's tests, then four over 2 ranks: a share of what is left each.
    SYMMCOMM_SANITIZE_RANKS_BUILD="$SYMMCOMM_ROOT"/build-nccl2 SANITIZE_TIMEOUT=$(( ($(left) - 30) / 8 )) \
      timeout "$(( $(left) - 5 ))" "$SYMMCOMM_ROOT"/scripts/gpu_sanitize.sh "$SYMMCOMM_ROOT"/build-dev
    ;;
  *)
    echo "unknown phase $phase (see the list at the top of $0)"
    exit 2
    ;;
esac
