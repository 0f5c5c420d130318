#!/usr/bin/env bash
# Runs an MPI-launched GPU test (mpiexec ... symmcomm-bench ...) only where an NVIDIA device node
# exists. Without one CUDA cannot see a GPU, and each such test would otherwise run its ranks
# to learn that and exit 2, which mpiexec treats as a failed job and tears down (1-2 s a test,
# serially: the tests are RUN_SERIAL; a job whose ranks exit 0 ends in 0.07 s). It prints the
# reason the way the programs do ("SYMMCOMM_SKIP: ...", which scripts/ctest_skips.sh reads)
# and exits with the test's skip code, or with 1 under SYMMCOMM_REQUIRE_GPU=1 (a missing GPU is a
# failure there). Where a node exists the command runs as given and decides for itself.
# Usage: tests/support/mpi_gpu_test.sh <skip-exit-code> <command> [args...]
# (SYMMCOMM_DEV_DIR: /dev unless a test sets it; scripts/common.sh's symmcomm_gpu_node_exists.)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
skip_code="$1"
shift
if ! symmcomm_gpu_node_exists; then
  if [ "${SYMMCOMM_REQUIRE_GPU:-}" = 1 ]; then
    echo "no NVIDIA device node (/dev/nvidia[0-9]*, /dev/dxg) and SYMMCOMM_REQUIRE_GPU=1"
    exit 1
  fi
  echo "SYMMCOMM_SKIP: needs a GPU: no NVIDIA device node on this machine" \
    "(/dev/nvidia[0-9]*, /dev/dxg)"
  exit "$skip_code"
fi
exec "$@"
