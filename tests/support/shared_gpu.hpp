#pragma once
// Several NCCL ranks of one process sharing a GPU (NCCL >= 2.30, NCCL_MULTI_RANK_GPU_ENABLE=1):
// whether this process can, and how many CTAs NCCL's kernels may take so that every rank's
// kernels fit on the GPU at once. Shared by the micro-benchmark's rank world and
// symmcomm-bench's --ranks-per-gpu.

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "symmcomm/error.hpp"
#include "symmcomm/runtime.hpp"

namespace symmcomm::test {

/// Why ranks of this process cannot share a GPU here ("" when they can try).
inline std::string why_ranks_cannot_share_a_gpu() {
  NcclVersion const v = nccl_runtime_version();
  if (v.major < 2 || (v.major == 2 && v.minor < 30)) {
    return "NCCL " + std::to_string(v.major) + "." + std::to_string(v.minor) + "." +
           std::to_string(v.patch) +
           " cannot put several ranks on one GPU (NCCL_MULTI_RANK_GPU_ENABLE needs 2.30)";
  }
  const char* enabled = std::getenv("NCCL_MULTI_RANK_GPU_ENABLE");
  if (enabled == nullptr || std::strcmp(enabled, "1") != 0) {
    return "set NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL >= 2.30) to run several ranks on one GPU";
  }
  return "";
}

/// Has NCCL set the per-thread stack its largest kernel needs at its init (NCCL_SET_STACK_SIZE=1),
/// unless the caller set the variable: with several ranks in one process, a launch that grows
/// the context's stack waits for every kernel running in it, among them other ranks' kernels
/// spinning for this one, which never end (docs/design-notes.md). Call before the process's
/// first NCCL call.
inline void keep_nccl_stack_at_init() {
  setenv("NCCL_SET_STACK_SIZE", "1", 0);
}

/// CTAs per NCCL kernel for `ranks` ranks of one process sharing `device`: their kernels run
/// at once and spin until every rank's has started, so together they must fit on the GPU
/// (NCCL's docs: up to 2 ranks per GPU with default settings, NCCL_MAX_CTAS to fit more;
/// measured on the H200: 4 threaded ranks' device-count gathers never finished with the
/// defaults). 0: NCCL's default (2 ranks or fewer, or NCCL_MAX_CTAS set by the user).
inline int nccl_ctas_for_shared_gpu(int ranks, int device) {
  if (ranks <= 2 || std::getenv("NCCL_MAX_CTAS") != nullptr) return 0;
  int sms = 0;
  SYMMCOMM_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return std::max(1, std::min(32, sms / (ranks + 1)));  // a share left for symmcomm's kernels
}

/// The communicator configuration of a rank sharing a GPU: NCCL's kernels capped at `max_ctas`
/// CTAs (nccl_ctas_for_shared_gpu; 0 keeps NCCL's defaults).
inline ncclConfig_t shared_gpu_config(int max_ctas) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  if (max_ctas > 0) {
    config.minCTAs = 1;
    config.maxCTAs = max_ctas;
  }
  return config;
}

}  // namespace symmcomm::test
