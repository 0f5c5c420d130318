#include <array>
#include <atomic>
#include <cstddef>
#include <vector>

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
  // Asked on every launch: each thread keeps its own answers (a handful of kernels), so that
  // ranks driven from several threads neither lock nor search a shared map.
  struct Entry {
    const void* kernel;
    int threads, device, blocks;
  };
  thread_local std::vector<Entry> cache;
  int device = 0;
  SYMMCOMM_CUDA_TRY(cudaGetDevice(&device));
  for (const Entry& e : cache) {
    if (e.kernel == kernel && e.threads == threads && e.device == device) return e.blocks;
  }
  int blocks = 0;
  SYMMCOMM_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, 0));
  cache.push_back(Entry{kernel, threads, device, blocks});
  return blocks;
}

}  // namespace symmcomm::detail
