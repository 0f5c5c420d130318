#pragma once
// CPU references for quantized reductions: the same arithmetic as symmcomm's kernels (fp32
// accumulation in rank order), plus an fp64 reference and error norms.

#include <cmath>
#include <cstdint>
#include <vector>

#include "symmcomm/formats/fp8.hpp"
#include "symmcomm/formats/nvfp4.hpp"

namespace symmcomm::test {

/// One rank's NVFP4 tensor on the host.
struct HostNvfp4 {
  std::vector<std::uint8_t> data;    // count / 2
  std::vector<std::uint8_t> scales;  // count / 16
  float global_scale = 1.0f;
  std::size_t count = 0;

  static HostNvfp4 quantize(const std::vector<float>& x, float global_scale) {
    HostNvfp4 q;
    q.count = x.size();
    q.global_scale = global_scale;
    q.data.resize(x.size() / 2);
    q.scales.resize(x.size() / 16);
    for (std::size_t b = 0; b < x.size() / 16; ++b) {
      q.scales[b] = nvfp4_quantize_block(&x[b * 16], global_scale, &q.data[b * 8]);
    }
    return q;
  }
  static HostNvfp4 quantize(const std::vector<float>& x) {
    float amax = 0.0f;
    for (float v : x) amax = std::fmax(amax, std::fabs(v));
    return quantize(x, nvfp4_global_scale(amax));
  }
  double value(std::size_t i) const {
    return nvfp4_element(data.data(), scales.data(), global_scale, i);
  }
};

/// One rank's FP8 tensor on the host (dequantization scale).
struct HostFp8 {
  std::vector<std::uint8_t> codes;
  float scale = 1.0f;
  Fp8Format format = Fp8Format::E4M3;

  static HostFp8 quantize(const std::vector<float>& x, Fp8Format f) {
    float amax = 0.0f;
    for (float v : x) amax = std::fmax(amax, std::fabs(v));
    HostFp8 q;
    q.format = f;
    q.scale = fp8_scale_from_amax(amax, f);
    float const inv = 1.0f / q.scale;
    for (float v : x) q.codes.push_back(encode_fp8(v * inv, f));
    return q;
  }
  double value(std::size_t i) const {
    return static_cast<double>(decode_fp8(codes[i], format)) * scale;
  }
};

/// Kernel arithmetic: acc += decode(code) * (decode_e4m3(s) * (1 / g)), fp32, rank order.
inline std::vector<float> reduce_like_kernel(const std::vector<HostNvfp4>& ranks, std::size_t first,
                                             std::size_t count) {
  std::vector<float> acc(count, 0.0f);
  for (const auto& r : ranks) {
    float const inv_g = 1.0f / r.global_scale;
    for (std::size_t i = 0; i < count; ++i) {
      std::size_t const e = first + i;
      std::uint8_t const byte = r.data[e / 2];
      float const mult = decode_e4m3(r.scales[e / 16]) * inv_g;
      acc[i] += decode_e2m1((e & 1) ? static_cast<std::uint8_t>(byte >> 4) : byte) * mult;
    }
  }
  return acc;
}

inline std::vector<float> reduce_like_kernel(const std::vector<HostFp8>& ranks, std::size_t first,
                                             std::size_t count) {
  std::vector<float> acc(count, 0.0f);
  for (const auto& r : ranks) {
    for (std::size_t i = 0; i < count; ++i) {
      acc[i] += decode_fp8(r.codes[first + i], r.format) * r.scale;
    }
  }
  return acc;
}

/// Exact (fp64) sum of the dequantized inputs.
template <class Q>
std::vector<double> exact_sum(const std::vector<Q>& ranks, std::size_t first, std::size_t count) {
  std::vector<double> s(count, 0.0);
  for (const auto& r : ranks) {
    for (std::size_t i = 0; i < count; ++i) s[i] += r.value(first + i);
  }
  return s;
}

/// ||out - ref|| / ||ref||.
template <class T>
double relative_error(const std::vector<T>& out, const std::vector<double>& ref) {
  double e = 0.0, r = 0.0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    double const d = static_cast<double>(out[i]) - ref[i];
    e += d * d;
    r += ref[i] * ref[i];
  }
  return std::sqrt(e / r);
}

/// How far the device's fp32 rank-order sum at element i may lie from reduce_like_kernel's: the
/// device fuses multiply-adds, the host does not, so each of the ranks' steps may round
/// differently by half an ulp of the partial sum.
template <class Q>
float fma_bound(const std::vector<Q>& ranks, std::size_t i) {
  double magnitude = 0.0;
  for (const auto& r : ranks) magnitude += std::fabs(r.value(i));
  return static_cast<float>(magnitude * static_cast<double>(ranks.size()) * 1.2e-7) + 1e-30f;
}

}  // namespace symmcomm::test
