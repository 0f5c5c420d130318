#!/usr/bin/env bash
# Runs symmcomm's tests: installs missing Debian packages (apt-get), configures, builds, runs CTest.
# GPU tests skip with their reason on machines without a GPU.
# Usage: scripts/test.sh [build-dir] [extra ctest args...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
build_dir="${1:-$SYMMCOMM_ROOT/build-test}"
shift || true
export NCCL_NVLS_ENABLE=0
symmcomm_install_missing
symmcomm_configure_build "$build_dir"
cd "$build_dir"
ctest --output-on-failure --parallel "$(nproc)" --timeout 1800 "$@"
