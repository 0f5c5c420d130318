#pragma once
/// @file bf16.hpp
/// @brief BF16 conversions usable on host and device, bit-identical to CUDA's
/// `__float2bfloat16_rn` (round-to-nearest-even; NaN becomes the canonical 0x7fff).

#include <cuda_bf16.h>

#include <cstdint>

#include "symmcomm/formats/host_device.hpp"

namespace symmcomm {

/// @brief symmcomm's BF16 element type (CUDA's own, so buffers interoperate with engines).
using bf16 = __nv_bfloat16;

/// @brief BF16 bits of a float, rounded to nearest even.
SYMMCOMM_HD std::uint16_t float_to_bf16_bits(float x) {
  std::uint32_t const u = bits::float_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
  std::uint32_t const rounding_bias = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>((u + rounding_bias) >> 16);
}

/// @brief The float value of BF16 bits (exact).
SYMMCOMM_HD float bf16_bits_to_float(std::uint16_t b) {
  return bits::bits_float(static_cast<std::uint32_t>(b) << 16);
}

}  // namespace symmcomm
