#pragma once
// Test data helpers shared by GPU tests: random inputs, bf16 conversion, an NVFP4 tensor in
// device memory, and the text of an expected LogicError.

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "support/gpu_test.hpp"
#include "support/reference.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/bf16.hpp"
#include "symmcomm/formats/views.hpp"

namespace symmcomm::test {

/// What `f` throws as an E, or a text saying it threw none.
template <class E, class F>
std::string error_text(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no exception of the expected type)";
}

/// What `f` throws as LogicError.
template <class F>
std::string logic_error_text(F&& f) {
  return error_text<LogicError>(std::forward<F>(f));
}

/// n normally distributed floats (deterministic for a seed).
inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  return v;
}

/// n random bytes (deterministic for a seed).
inline std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng() & 0xffu);
  return v;
}

inline std::vector<std::uint16_t> to_bf16_bits(const std::vector<float>& v) {
  std::vector<std::uint16_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = float_to_bf16_bits(v[i]);
  return out;
}

/// An NVFP4 tensor in device memory (plain cudaMalloc), filled from a host quantization.
struct DeviceNvfp4 {
  explicit DeviceNvfp4(std::size_t elements, std::size_t global_scales = 1)
      : data(elements / 2), block_scales(elements / 16), global(global_scales), count(elements) {}
  void upload(const HostNvfp4& q) {
    data.upload(q.data);
    block_scales.upload(q.scales);
    global.upload({q.global_scale});
  }
  Nvfp4View view() { return Nvfp4View{data.get(), block_scales.get(), global.get(), count}; }
  DeviceArray<std::uint8_t> data, block_scales;
  DeviceArray<float> global;
  std::size_t count;
};

}  // namespace symmcomm::test
