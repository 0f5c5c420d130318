#pragma once
// Private to symmcomm: e2m1 bit tricks of the NVFP4 kernels (packing eight codes at once,
// decoding eight codes into half2 pairs), host/device so that CPU tests can check them.

#include <cstdint>

#include "symmcomm/formats/e2m1.hpp"
#include "symmcomm/formats/host_device.hpp"

namespace symmcomm::detail {

using bits::bits_float;
using bits::float_bits;

/// @brief Rotates `x` left by `k` (0 < k < 32); one funnel shift on GPUs.
SYMMCOMM_HD std::uint32_t rotl32(std::uint32_t x, unsigned k) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_l(x, x, k);  // nvcc does not see the rotation in the portable form
#else
  return (x << k) | (x >> (32u - k));
#endif
}

/// @brief Bits of `a` where `mask` is set, of `b` elsewhere; one LOP3 on GPUs (the compiler
/// splits the portable form in two when the mask is a constant).
// LUT 0xE2 = (a & mask) | (b & ~mask) with PTX operands a, mask, b (0xF0, 0xCC, 0xAA).
SYMMCOMM_HD std::uint32_t bit_select(std::uint32_t mask, std::uint32_t a, std::uint32_t b) {
#if defined(__CUDA_ARCH__)
  std::uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xE2;" : "=r"(d) : "r"(a), "r"(mask), "r"(b));
  return d;
#else
  return (a & mask) | (b & ~mask);
#endif
}

/// @brief The eight e2m1 codes of a packed word (code k in bits 4k..4k+3) as four fp16x2 bit
/// patterns: `out[j]` holds codes j (low half) and j + 4 (high half), each worth
/// decode_e2m1(code) * 2^-14 exactly.
///
/// In fp16, a code's sign at bit 15 and its three exponent/mantissa bits at 9..11 are e2m1's
/// value times 2^-14 (0.5 lands on fp16's subnormals). Codes j and j + 4 sit 16 bits apart, so
/// one shift and one mask place both at once; the sign, 3 bits above the magnitude in the code
/// but 6 above it in fp16, is moved first for all codes by merging the word with itself rotated
/// by 3 (odd and even codes separately, so no sign overwrites a neighbour's magnitude). Eleven
/// integer operations for eight codes, versus about six per pair taking codes one byte at a time.
SYMMCOMM_HD void e2m1x8_to_half2_bits(std::uint32_t w, std::uint32_t (&out)[4]) {
  std::uint32_t const r = rotl32(w, 3);  // the sign of code k now at bit 4k + 6
  // Even codes' magnitudes (bits 0-2 of each byte) from w, their signs from r; odd likewise.
  std::uint32_t const even = bit_select(0x07070707u, w, r);
  std::uint32_t const odd = bit_select(0x70707070u, w, r);
  constexpr std::uint32_t kKeep = 0x8E008E00u;  // sign and bits 9..11 of both halves
  out[0] = (even << 9) & kKeep;
  out[1] = (odd << 5) & kKeep;
  out[2] = (even << 1) & kKeep;
  out[3] = rotl32(odd, 29) & kKeep;  // code 7's sign wrapped to bit 2 of `odd`: a rotation
}

/// @brief Byte permutation as CUDA's `__byte_perm(x, y, s)` (one PRMT on GPUs): byte n of the
/// result is byte `(s >> 4n) & 7` of the eight bytes x (0..3), y (4..7).
SYMMCOMM_HD std::uint32_t byte_perm(std::uint32_t x, std::uint32_t y, std::uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  std::uint64_t const bytes = (static_cast<std::uint64_t>(y) << 32) | x;
  std::uint32_t out = 0;
  for (unsigned n = 0; n < 4; ++n) {
    unsigned const pick = (s >> (4 * n)) & 7u;
    out |= static_cast<std::uint32_t>((bytes >> (8 * pick)) & 0xffu) << (8 * n);
  }
  return out;
#endif
}

/// @brief Constant that e2m1_magnitude_biased() adds to every code.
inline constexpr std::uint32_t kE2m1MagnitudeBias = (22u << 23) + 0x400000u + 254u;

/// @brief The e2m1 magnitude code (0..7) of `y`, plus kE2m1MagnitudeBias, for any `y` but NaN:
/// bit-identical to `encode_e2m1(y) & 7` there, in five GPU operations after the clamp.
///
/// a = min(|y|, 6.5) is rounded by one fused multiply-add, a + e * 1.5 * 2^22 with e the
/// power of two at or below max(a, 1): the sum's ulp is then e2m1's grid spacing there
/// (0.5 below 2, 1 below 4, 2 above), so the adder rounds to nearest-even on the grid (the
/// magic number's even mantissa keeps the tie parity), and the sum stays in the binade of the
/// magic number. The sum's bits minus the magic number's count grid steps q, and the code is
/// q + 2 log2(e); both terms come from integer arithmetic on the bits of the sum and of e,
/// leaving the constant bias, which a caller packing eight codes subtracts once.
SYMMCOMM_HD std::uint32_t e2m1_magnitude_biased(float y) {
  float const a = fminf(fabsf(y), 6.5f);
  std::uint32_t const e = float_bits(fmaxf(a, 1.0f)) & 0x7f800000u;  // 1, 2 or 4
  return float_bits(fmaf(bits_float(e), 6291456.0f, a)) - e + (e >> 22);
}

/// @brief Eight e2m1 magnitude codes (code j in bits 4j..4j+2, sign bits clear) of eight
/// floats, none NaN: `encode_e2m1(y[j]) & 7` for each, packed with modular sums.
SYMMCOMM_HD std::uint32_t e2m1x8_magnitudes(const float* y) {
  std::uint32_t w = 0;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (unsigned j = 0; j < 8; ++j) w += e2m1_magnitude_biased(y[j]) << (4 * j);
  return w - kE2m1MagnitudeBias * 0x11111111u;
}

/// @brief The sign bits of eight bf16 values (element 2i in the low half of `w[i]`) where a
/// packed e2m1x8 word keeps them (bit 4j + 3 for element j), all other bits clear: two byte
/// permutations gather the bytes holding the signs, shifts and two bit-selects place them.
SYMMCOMM_HD std::uint32_t bf16x8_signs_as_e2m1(const std::uint32_t* w) {
  // Bytes [w0.3, w1.3, w0.1, w1.1]: signs of elements 1, 3, 0, 2 at bits 7, 15, 23, 31.
  std::uint32_t const p = byte_perm(w[0], w[1], 0x5173u);
  std::uint32_t const q = byte_perm(w[2], w[3], 0x5173u);         // elements 5, 7, 4, 6
  std::uint32_t const odd = bit_select(0x0000ffffu, p, q << 16);  // 1, 3, 5, 7 at 7, 15, 23, 31
  std::uint32_t const even = bit_select(0x0000ffffu, p >> 20, q >> 4);  // 0, 2, 4, 6 at 3, ..., 27
  return bit_select(0x80808080u, odd, even) & 0x88888888u;
}

}  // namespace symmcomm::detail
