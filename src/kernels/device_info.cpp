#include <array>
#include <atomic>

#include "launch.cuh"
#include "symmcomm/error.hpp"

namespace symmcomm::detail {

int current_device_sm_count() {
  static std::array<std::atomic<int>, 64> cache{};
  int device = 0;
  SYMMCOMM_CUDA_TRY(cudaGetDevice(&device));
  if (device < 0 || device >= static_cast<int>(cache.size())) device = 0;
  int n = cache[device].load(std::memory_order_relaxed);
  if (n == 0) {
    SYMMCOMM_CUDA_TRY(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    cache[device].store(n, std::memory_order_relaxed);
  }
  return n;
}

}  // namespace symmcomm::detail
