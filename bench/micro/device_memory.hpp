#pragma once
// Device memory for the micro-benchmarks: an owner, and bf16 test data.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "support/ordered_copy.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/bf16.hpp"

namespace symmcomm::bench {

struct DeviceMemory {
  explicit DeviceMemory(std::size_t bytes) { SYMMCOMM_CUDA_TRY(cudaMalloc(&ptr, bytes)); }
  ~DeviceMemory() { cudaFree(ptr); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
  void* ptr = nullptr;
};

// Fills bf16 memory with finite, non-zero values (zeros would flatter the encoders).
inline void fill_bf16(DeviceMemory& m, std::size_t count) {
  std::vector<std::uint16_t> pattern(1 << 20);
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    float const v = static_cast<float>((i * 2654435761u) % 20011) / 1000.0f - 10.0f;
    pattern[i] = float_to_bf16_bits(v + 0.001f);
  }
  for (std::size_t off = 0; off < count; off += pattern.size()) {
    std::size_t const n = std::min(pattern.size(), count - off);
    support::copy_on(nullptr, m.as<std::uint16_t>() + off, pattern.data(), n * 2);
  }
}

}  // namespace symmcomm::bench
