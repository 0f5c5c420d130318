#pragma once
/// @file e2m1.hpp
/// @brief FP4 e2m1 (1 sign, 2 exponent, 1 mantissa bit; values 0, 0.5, 1, 1.5, 2, 3, 4, 6):
/// encode with round-to-nearest-even and saturation to +-6, decode, and two-per-byte packing
/// with element 0 in the low nibble (as CUDA's `__nv_fp4x2_e2m1`).
///
/// Special values follow CUDA's `__nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest)`:
/// +-inf saturate to +-6, NaN becomes +6, -0 and tiny negatives keep their sign (code 0x8).

#include <cstdint>

#include "symmcomm/formats/host_device.hpp"

namespace symmcomm {

/// @brief Largest finite e2m1 magnitude.
inline constexpr float kE2m1Max = 6.0f;

/// @brief Encodes a float as a 4-bit e2m1 code (low nibble of the result).
/// Branch-free: the magnitude code is a sum of comparisons against the rounding midpoints,
/// where `>` vs `>=` implements ties-to-even (0.25->0, 0.75->1, 1.25->1, 1.75->2, 2.5->2,
/// 3.5->4, 5->4).
SYMMCOMM_HD std::uint8_t encode_e2m1(float x) {
  std::uint32_t const bits = detail::float_bits(x);
  std::uint32_t const abs_bits = bits & 0x7fffffffu;
  if (abs_bits > 0x7f800000u) return 0x7;  // NaN -> +6, as CUDA does
  float const a = detail::bits_float(abs_bits);
  std::uint32_t const code = static_cast<std::uint32_t>(a > 0.25f) + (a >= 0.75f) +
                             (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) + (a >= 3.5f) +
                             (a > 5.0f);
  return static_cast<std::uint8_t>(code | ((bits >> 28) & 0x8u));
}

/// @brief Decodes the low nibble of `code` as e2m1.
SYMMCOMM_HD float decode_e2m1(std::uint8_t code) {
  // magnitude = code 0..7 -> {0, .5, 1, 1.5, 2, 3, 4, 6}; exact in fp32 by construction.
  std::uint32_t const m = code & 0x7u;
  float const mag = m < 4u ? 0.5f * static_cast<float>(m)
                           : static_cast<float>(2u << ((m - 4u) >> 1)) * (1.0f + 0.5f * static_cast<float>(m & 1u));
  return (code & 0x8u) ? -mag : mag;
}

/// @brief Packs two e2m1 codes into a byte: `first` in the low nibble, `second` in the high one.
SYMMCOMM_HD std::uint8_t pack_e2m1x2(std::uint8_t first, std::uint8_t second) {
  return static_cast<std::uint8_t>((first & 0xfu) | ((second & 0xfu) << 4));
}

}  // namespace symmcomm
