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

/// Grid for `items` work items of one thread each, capped at a few waves (kernels grid-stride).
inline unsigned grid_for(std::size_t items, int ctas_per_sm = 8) {
  std::size_t const wanted = (items + kThreadsPerCta - 1) / kThreadsPerCta;
  std::size_t const cap = static_cast<std::size_t>(current_device_sm_count()) * ctas_per_sm;
  std::size_t const g = wanted < cap ? wanted : cap;
  return static_cast<unsigned>(g > 0 ? g : 1);
}

}  // namespace symmcomm::detail
