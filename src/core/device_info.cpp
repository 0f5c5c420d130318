#include <array>
#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>
#include <tuple>

#include "core/launch.cuh"
#include "symmcomm/error.hpp"

namespace symmcomm::detail {

int current_device_sm_count() {
  static std::array<std::atomic<int>, 64> cache{};
  int device = 0;
  SYMMCOMM_CUDA_TRY(cudaGetDevice(&device));
  int n = 0;
  bool const cached = device >= 0 && device < static_cast<int>(cache.size());
  if (cached) n = cache[static_cast<std::size_t>(device)].load(std::memory_order_relaxed);
  if (n == 0) {
    // Devices beyond the cache are asked every time, never answered with another's count.
    SYMMCOMM_CUDA_TRY(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    if (cached) cache[static_cast<std::size_t>(device)].store(n, std::memory_order_relaxed);
  }
  return n;
}

int resident_blocks_per_sm(const void* kernel, int threads) {
  static std::mutex mutex;
  static std::map<std::tuple<const void*, int, int>, int> cache;
  int device = 0;
  SYMMCOMM_CUDA_TRY(cudaGetDevice(&device));
  std::lock_guard lock(mutex);
  auto const key = std::make_tuple(kernel, threads, device);
  auto const found = cache.find(key);
  if (found != cache.end()) return found->second;
  int blocks = 0;
  SYMMCOMM_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, 0));
  cache.emplace(key, blocks);
  return blocks;
}

}  // namespace symmcomm::detail
