#pragma once
// Private helpers for symmcomm's kernels: grid sizing and vector types.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace symmcomm::detail {

/// Threads per CTA for symmcomm's elementwise kernels.
inline constexpr int kThreadsPerCta = 256;

/// Multiprocessor count of the current device (cached per device).
int current_device_sm_count();

/// CTAs of `kernel` (`threads` threads, no dynamic shared memory) one multiprocessor of the
/// current device holds at once (cached per kernel, thread count and device).
int resident_blocks_per_sm(const void* kernel, int threads);

/// The most CTAs one launch of a kernel whose CTAs spin on other ranks (the LSA barriers) may
/// take: `per_sm` of them resident on each of the rank's `sm_share` SMs (> 0), out of the GPU's
/// `gpu_sms`. That lets every rank's CTAs be resident at once, which is all the barriers need
/// while nothing else runs. Where ranks in other processes share the GPU (`across_processes`;
/// CUDA MPS runs their kernels at once), another rank may still be in a kernel that needs a whole
/// SM (a GEMM's shared memory) before it reaches its collective: CTAs spinning on every SM would
/// keep it from ever finishing. There each rank takes at most one CTA per two SMs of its share,
/// so the ranks' CTAs together leave at least half the SMs free however the GPU places them.
/// `programmatic` (dependent launch) on a shared GPU halves the cap again (lsa_launch.cuh).
inline unsigned resident_cap(int per_sm, int sm_share, int gpu_sms, bool programmatic,
                             bool across_processes) {
  bool const shared = sm_share < gpu_sms;
  unsigned cap = shared && across_processes ? static_cast<unsigned>(sm_share / 2)
                                            : static_cast<unsigned>(per_sm < 1 ? 1 : per_sm) *
                                                  static_cast<unsigned>(sm_share);
  if (programmatic && shared) cap /= 2;
  return cap < 1 ? 1 : cap;
}

/// Grid for `items` work items of one thread each, capped at a few waves (kernels grid-stride).
inline unsigned grid_for(std::size_t items, int ctas_per_sm = 8) {
  std::size_t const wanted = (items + kThreadsPerCta - 1) / kThreadsPerCta;
  std::size_t const cap = static_cast<std::size_t>(current_device_sm_count()) * ctas_per_sm;
  std::size_t const g = wanted < cap ? wanted : cap;
  return static_cast<unsigned>(g > 0 ? g : 1);
}

}  // namespace symmcomm::detail
