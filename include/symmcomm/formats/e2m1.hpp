#pragma once
/// @file e2m1.hpp
/// @brief FP4 e2m1 (1 sign, 2 exponent, 1 mantissa bit; values 0, 0.5, 1, 1.5, 2, 3, 4, 6):
/// encode with round-to-nearest-even and saturation to +-6, decode, and two-per-byte packing
/// with element 0 in the low nibble (as CUDA's `__nv_fp4x2_e2m1`).
///
/// Special values follow CUDA's `__nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest)`:
/// +-inf saturate to +-6, NaN becomes +6, -0 and tiny negatives keep their sign (code 0x8).

#include <cmath>
#include <cstdint>

#include "symmcomm/formats/host_device.hpp"

namespace symmcomm {

/// @brief Largest finite e2m1 magnitude.
inline constexpr float kE2m1Max = 6.0f;

/// @brief Encodes a float as a 4-bit e2m1 code (the low nibble; the other bits are zero).
///
/// Branch-free and cheap on GPUs (about a dozen instructions): the value is first clamped to
/// [-6.5, 6.5] (NaN, quiet or signalling, becomes +6.5, as CUDA maps NaN to +6), then rounded
/// to the e2m1 grid of its range by the floating-point adder itself, `(a + M) - M` with M
/// chosen so that its ulp is the grid spacing (0.5 below 2, 1 below 4, 2 above): IEEE
/// round-to-nearest-even is exactly e2m1's rounding. The rounded value v in {0, .5, 1, ..., 6}
/// is then mapped to its code by reading the bits of v * 2^-126, where e2m1's exponent and
/// mantissa (and its one subnormal, 0.5) land in bits 22..24.
SYMMCOMM_HD std::uint32_t encode_e2m1_u32(float x) {
#if defined(__CUDA_ARCH__)
  // PTX min/max return the non-NaN operand for any NaN input: NaN -> +6.5.
  float const clamped = fmaxf(fminf(x, 6.5f), -6.5f);
#else
  // Hosts' fminf returns NaN for a signalling NaN: test explicitly.
  float const clamped = x != x ? 6.5f : fmaxf(fminf(x, 6.5f), -6.5f);  // NOLINT
#endif
  float const a = fabsf(clamped);
  float const magic = a < 2.0f ? 6291456.0f : (a < 4.0f ? 12582912.0f : 25165824.0f);
  float const rounded = (a + magic) - magic;
  // rounded <= 6, so the code needs no mask: bits 22..24 only.
  return (bits::float_bits(rounded * bits::exp2i(-126)) >> 22) |
         ((bits::float_bits(clamped) >> 28) & 0x8u);
}

/// @brief encode_e2m1_u32() as a byte.
SYMMCOMM_HD std::uint8_t encode_e2m1(float x) {
  return static_cast<std::uint8_t>(encode_e2m1_u32(x));
}

/// @brief Decodes the low nibble of `code` as e2m1.
SYMMCOMM_HD float decode_e2m1(std::uint8_t code) {
  // magnitude = code 0..7 -> {0, .5, 1, 1.5, 2, 3, 4, 6}; exact in fp32 by construction.
  std::uint32_t const m = code & 0x7u;
  float const mag = m < 4u ? 0.5f * static_cast<float>(m)
                           : static_cast<float>(2u << ((m - 4u) >> 1)) *
                                 (1.0f + 0.5f * static_cast<float>(m & 1u));
  return (code & 0x8u) ? -mag : mag;
}

/// @brief Packs two e2m1 codes into a byte: `first` in the low nibble, `second` in the high one.
SYMMCOMM_HD std::uint8_t pack_e2m1x2(std::uint8_t first, std::uint8_t second) {
  return static_cast<std::uint8_t>((first & 0xfu) | ((second & 0xfu) << 4));
}

}  // namespace symmcomm
