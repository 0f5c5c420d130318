# Shared by scripts/test.sh and scripts/bench.sh: install what is missing, configure, build.
# shellcheck shell=bash

SYMMCOMM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SYMMCOMM_PACKAGES=(cmake ninja-build g++ libgtest-dev libbenchmark-dev libcli11-dev
                   nlohmann-json3-dev libopenmpi-dev python3-pytest pkg-config python3-venv
                   python3-pip ccache)

# Installs the Debian packages that are missing, when apt-get is there and we may use it.
symmcomm_install_missing() {
  command -v dpkg-query >/dev/null 2>&1 || return 0
  local missing=()
  for p in "${SYMMCOMM_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && sudo="sudo"
  if command -v apt-get >/dev/null 2>&1; then
    echo "symmcomm: installing missing packages: ${missing[*]}" >&2
    if ! { $sudo apt-get update -qq && \
           DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null; }; then
      echo "symmcomm: could not install ${missing[*]}; continuing with what is there" >&2
    fi
  fi
}

# The CUDA architecture a development build needs: this machine's GPUs ("native") where there
# are any, else sm_90 (CPU-only machines compile and run the CPU tests). Shipped builds (the
# wheel, a plain CMake configure) carry every default architecture instead.
symmcomm_dev_architectures() {
  if [ -n "${SYMMCOMM_CUDA_ARCHITECTURES:-}" ]; then
    echo "$SYMMCOMM_CUDA_ARCHITECTURES"
  elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q "^GPU "; then
    echo native
  else
    echo 90
  fi
}

# True where an NVIDIA GPU's device node exists (/dev/nvidia0.., or WSL's /dev/dxg): without one
# CUDA sees no GPU. SYMMCOMM_DEV_DIR replaces /dev for tests of the scripts that ask.
symmcomm_gpu_node_exists() {
  local dev="${SYMMCOMM_DEV_DIR:-/dev}" node
  for node in "$dev"/nvidia[0-9]* "$dev"/dxg; do
    [ -e "$node" ] && return 0
  done
  return 1
}

# CMake arguments that put ccache in front of the CUDA compiler, where it is installed and
# SYMMCOMM_CCACHE is not 0: the package tests' add_subdirectory() consumer compiles the library's
# kernels again with the same flags, and takes those objects from the cache. Not in front of the
# C++ compiler: there ccache's extra preprocessing of the heavy headers (CLI11, JSON, GoogleTest)
# cost more on a first build than the consumer's C++ files take to compile.
symmcomm_compiler_cache() {
  [ "${SYMMCOMM_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1 || return 0
  echo "-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache"
}

# symmcomm_configure_build <build-dir> [extra cmake args...]
symmcomm_configure_build() {
  local build_dir="$1"; shift
  local generator=()
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  local mpi=OFF
  if command -v mpicxx >/dev/null 2>&1; then mpi=ON; fi
  # CTest runs the consumer's build with the locale variables set, which ccache would hash
  # (they change only the language of diagnostics): exported for this script's build and tests.
  [[ ",${CCACHE_SLOPPINESS:-}," == *,locale,* ]] ||
    export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:+$CCACHE_SLOPPINESS,}locale"
  cmake -S "$SYMMCOMM_ROOT" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DSYMMCOMM_WARNINGS_AS_ERRORS=ON -DSYMMCOMM_WITH_MPI="$mpi" \
    -DCMAKE_CUDA_ARCHITECTURES="$(symmcomm_dev_architectures)" $(symmcomm_compiler_cache) "$@"
  cmake --build "$build_dir" --parallel "$(nproc)"
}

# The Python that has PyTorch on a GPU machine (its venv), else python3.
symmcomm_torch_python() {
  local py="${SYMMCOMM_PYTHON:-/opt/torch/.venv/bin/python3}"
  [ -x "$py" ] || py=python3
  echo "$py"
}

# symmcomm_build_torch_ops <build-dir> <log> (GPU session scripts): libsymmcomm_torch.so in an
# existing build tree, against symmcomm_torch_python's PyTorch. Its own step, after the suites'
# builds (which configure SYMMCOMM_TORCH_OPS=OFF): a failure here is printed and leaves the
# Python implementations to run, without costing the rest of the session its builds.
symmcomm_build_torch_ops() {
  local dir="$1" log="$2"
  if cmake -S "$SYMMCOMM_ROOT" -B "$dir" -DSYMMCOMM_TORCH_OPS=ON \
       -DSYMMCOMM_TORCH_PYTHON="$(symmcomm_torch_python)" >"$log" 2>&1 &&
     cmake --build "$dir" --target symmcomm_torch >>"$log" 2>&1; then
    echo "== libsymmcomm_torch.so built in $dir ($(grep -o 'against PyTorch [^ ]*' "$log" | head -1))"
  else
    echo "== libsymmcomm_torch.so NOT built in $dir:"; grep -E "error|Error" "$log" | head -20
    return 1
  fi
}

# symmcomm_watch <pid> <limit_s> <backtrace file or ""> (GPU session scripts): waits for process
# <pid> up to <limit_s> seconds. Past that, writes every thread's native backtrace (cuda-gdb) to
# the file (unless ""), prints its frames, kills the process and returns 1.
symmcomm_watch() {
  local pid="$1" limit="$2" bt="$3" t
  for ((t = 0; t < limit * 10; ++t)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null || return 0
  echo "== process $pid still running after $limit s: stopped"
  if [ -n "$bt" ]; then
    timeout 60 cuda-gdb -batch -p "$pid" -ex "thread apply all bt" >"$bt" 2>&1
    grep -E "^#[0-9]+ " "$bt" | grep -vE "libc\.so|pthread" | cut -c1-150 | head -40
  fi
  kill -9 "$pid" 2>/dev/null
  return 1
}

# symmcomm_watch_ranks <pid> <limit_s> <quiet_s> <log> <backtrace prefix> <pattern> (GPU session
# scripts): waits for launcher <pid> (torchrun), whose ranks are the other processes matching
# <pattern> (pgrep -f), while it writes <log>. When <log> has been silent for <quiet_s> seconds (a
# hang: the benchmarks print a line per measured row), or 70 s before <limit_s> (the time the
# backtraces take), every rank gets SIGUSR1 (the benchmarks' faulthandler prints its Python stacks
# into <log>) and cuda-gdb writes its native backtraces to <prefix>-<pid>.bt, all ranks at once;
# then the ranks and the launcher are killed and it returns 1. Returns 0 when the launcher ended.
symmcomm_watch_ranks() {
  local pid="$1" limit="$2" quiet="$3" log="$4" bt="$5" pattern="$6" start why p
  start=$(date +%s)
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if (( $(date +%s) - $(stat -c %Y "$log" 2>/dev/null || echo "$start") > quiet )); then
      why="silent for $quiet s"
    elif (( $(date +%s) - start > limit - 70 )); then
      why="at $((limit - 70)) of its $limit s"
    else
      continue
    fi
    local -a ranks=() gdbs=()
    mapfile -t ranks < <(pgrep -f "$pattern" | grep -vx "$pid")
    echo "== ${pattern##*/}: $why; Python stacks and native backtraces of ${#ranks[@]} rank(s), then stopped"
    for p in "${ranks[@]}"; do kill -USR1 "$p" 2>/dev/null; done
    sleep 2
    for p in "${ranks[@]}"; do
      timeout 60 cuda-gdb -batch -p "$p" -ex "thread apply all bt" >"$bt-$p.bt" 2>&1 &
      gdbs+=("$!")
    done
    [ "${#gdbs[@]}" -eq 0 ] || wait "${gdbs[@]}"
    for p in "${ranks[@]}"; do
      echo "-- rank process $p ($bt-$p.bt):"
      grep -E "^#[0-9]+ " "$bt-$p.bt" | grep -vE "libc\.so|pthread" | cut -c1-150 | head -12
    done
    kill -9 "${ranks[@]}" "$pid" 2>/dev/null
    return 1
  done
  return 0
}

# Skip reasons a GPU run on one machine may have by design (tests/support/skip_policy.hpp):
# GPU counts the machine lacks, tests for machines without a GPU, a test run as its own entry
# (its timeout), the wheel-only Python test.
SYMMCOMM_SKIPS_BY_DESIGN="GPUs, this machine has|this machine has a GPU|processes but|needs SYMMCOMM_WAIT_TIMEOUT_S between|installed wheel"
# On NCCL 2.28 ranks in separate processes have no symmetric windows (the multi-rank tier runs
# the fallback there): what needs an LSA team may skip too.
SYMMCOMM_SKIPS_WITHOUT_LSA="no LSA|no small-message all-gather|the LSA team does not span"

# symmcomm_allow_skips [more reasons]: every skip not named fails the tests that follow
# (SYMMCOMM_ALLOWED_SKIPS); with an argument, those reasons are allowed as well.
symmcomm_allow_skips() {
  export SYMMCOMM_ALLOWED_SKIPS="$SYMMCOMM_SKIPS_BY_DESIGN${1:+|$1}"
}

# symmcomm_ctest_verdict <build-dir> <ctest-log>: the skipped tests with their reasons; 1 when a
# skip is not allowed (CTest itself counts a skip as a pass).
symmcomm_ctest_verdict() {
  "$SYMMCOMM_ROOT/scripts/ctest_skips.sh" "$1" "$2"
}

# symmcomm_repair_nccl_links <nccl root>: a copied NCCL whose library links arrived as small
# text files naming their target (a copy that does not keep links, as the shared NCCL 2.30 build
# is stored) gets its links back, so the linker and the loader see the library itself.
symmcomm_repair_nccl_links() {
  local lib="$1/lib" f target
  [ -d "$lib" ] || return 0
  for f in "$lib/libnccl.so" "$lib/libnccl.so.2"; do
    [ -f "$f" ] && [ ! -L "$f" ] && [ "$(stat -c %s "$f")" -lt 256 ] || continue
    target=$(head -c 255 "$f" | tr -d '\n')
    [ -n "$target" ] && [ -e "$lib/$target" ] && ln -sf "$target" "$f"
  done
  return 0
}

# symmcomm_step_traces <prefix> <python>: the decode step's traces (bench/python/moe_step.py
# --trace, written as <prefix>-trace-<way>.json) compared where they lie: symmcomm's ways
# against torch.distributed padded kernel by kernel (trace_summary.py --kernels), and, with every
# rank's trace (--trace-every-rank), how much of rank 0's work ran beside another rank's GEMM
# (--overlap). Each table goes to <prefix>-kernels-<way>.md / -overlap-<way>.md; the summary lines
# are printed.
symmcomm_step_traces() {
  local dir prefix py="$2" t way base tool="$SYMMCOMM_ROOT/bench/python/trace_summary.py"
  dir="$(dirname "$1")"; prefix="$(basename "$1")"; base="$prefix-trace-torchdistributed-padded.json"
  ( cd "$dir" || exit 0
    for t in "$prefix"-trace-*.json; do
      [ -f "$t" ] || continue
      case "$t" in *-r[0-9].json) continue ;; esac
      way="${t#"$prefix"-trace-}"; way="${way%.json}"
      if [ -f "$base" ] && [ "$t" != "$base" ]; then
        "$py" "$tool" --kernels "$t" "$base" 20 >"$prefix-kernels-$way.md" 2>&1 &&
          echo "== $(grep '^Kernels launched' "$prefix-kernels-$way.md")"
      fi
      others=("${t%.json}"-r[0-9].json)
      if [ -f "${others[0]}" ]; then
        "$py" "$tool" --overlap "$t" "${others[@]}" >"$prefix-overlap-$way.md" 2>&1 &&
          { echo "== $prefix, $way: rank 0 beside the other ranks' GEMMs"; cat "$prefix-overlap-$way.md"; }
      fi
    done )
}
