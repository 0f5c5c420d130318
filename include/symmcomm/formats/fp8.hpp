#pragma once
/// @file fp8.hpp
/// @brief FP8 e4m3 (max 448, no infinity, NaN = 0x7f) and e5m2 (max 57344, IEEE-like) codecs,
/// saturating to the largest finite value with round-to-nearest-even, bit-identical to CUDA's
/// `__nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...)` on the host: +-inf saturate, NaN becomes the
/// canonical positive NaN code 0x7f in both formats.
///
/// Per-tensor scale convention for FP8 tensors in symmcomm: `real = decode(code) * scale`,
/// i.e. the stored fp32 scale is the *dequantization* multiplier (as `torch._scaled_mm`'s
/// scale_a/scale_b), computed from the tensor's absolute maximum as `amax / max_finite`.

#include <cstdint>

#include "symmcomm/formats/host_device.hpp"

namespace symmcomm {

/// @brief The two FP8 encodings.
enum class Fp8Format : std::uint8_t { E4M3 = 0, E5M2 = 1 };

/// @brief Largest finite magnitude of E4M3 (what a scale maps a block's amax to).
inline constexpr float kE4m3Max = 448.0f;
/// @brief Largest finite magnitude of E5M2.
inline constexpr float kE5m2Max = 57344.0f;

/// @brief Largest finite magnitude of an FP8 format.
SYMMCOMM_HD float fp8_max(Fp8Format f) {
  return f == Fp8Format::E4M3 ? kE4m3Max : kE5m2Max;
}

namespace bits {
/// Shared minifloat encoder: `man_bits` mantissa bits, exponent `bias`, codes in 8 bits.
/// Normal values are rounded by scaling to an integer count of ulps (exact: power-of-two
/// scaling) and rounding that ties-to-even; a carry out of the mantissa lands in the exponent
/// field by plain addition, which is exactly IEEE's behaviour.
SYMMCOMM_HD std::uint8_t encode_minifloat(float a, int man_bits, int bias) {
  int const exponent = static_cast<int>(float_bits(a) >> 23) - 127;
  int const min_normal_exponent = 1 - bias;
  if (exponent < min_normal_exponent) {
    // subnormal range (also the underflow-to-zero range): integer multiple of the subnormal ulp
    float const q = round_half_even(a * exp2i(bias - 1 + man_bits));
    return static_cast<std::uint8_t>(q);
  }
  float const q = round_half_even(a * exp2i(man_bits - exponent));  // in [2^m, 2^(m+1)]
  int const code = ((exponent + bias) << man_bits) + static_cast<int>(q) - (1 << man_bits);
  return static_cast<std::uint8_t>(code);
}
}  // namespace bits

/// @brief Encodes a float as e4m3 (saturating, round-to-nearest-even).
SYMMCOMM_HD std::uint8_t encode_e4m3(float x) {
  std::uint32_t const bits = bits::float_bits(x);
  std::uint8_t const sign = static_cast<std::uint8_t>((bits >> 24) & 0x80u);
  std::uint32_t const abs_bits = bits & 0x7fffffffu;
  if (abs_bits > 0x7f800000u) return 0x7fu;
  float const a = bits::bits_float(abs_bits);
  if (a > 464.0f) return static_cast<std::uint8_t>(0x7eu | sign);  // beyond max + ulp/2
  return static_cast<std::uint8_t>(bits::encode_minifloat(a, 3, 7) | sign);
}

/// @brief Encodes a float as e5m2 (saturating, round-to-nearest-even).
SYMMCOMM_HD std::uint8_t encode_e5m2(float x) {
  std::uint32_t const bits = bits::float_bits(x);
  std::uint8_t const sign = static_cast<std::uint8_t>((bits >> 24) & 0x80u);
  std::uint32_t const abs_bits = bits & 0x7fffffffu;
  if (abs_bits > 0x7f800000u) return 0x7fu;
  float const a = bits::bits_float(abs_bits);
  if (a >= 61440.0f) return static_cast<std::uint8_t>(0x7bu | sign);  // max + ulp/2 and above
  return static_cast<std::uint8_t>(bits::encode_minifloat(a, 2, 15) | sign);
}

/// @brief Decodes an e4m3 code.
SYMMCOMM_HD float decode_e4m3(std::uint8_t code) {
  std::uint32_t const exp_field = (code >> 3) & 0xfu;
  std::uint32_t const man = code & 0x7u;
  float mag;
  if ((code & 0x7fu) == 0x7fu) {
    mag = bits::bits_float(0x7fc00000u);
  } else if (exp_field == 0) {
    mag = static_cast<float>(man) * bits::exp2i(-9);
  } else {
    mag = bits::bits_float(((exp_field + 120u) << 23) | (man << 20));
  }
  return (code & 0x80u) ? -mag : mag;
}

/// @brief Decodes an e5m2 code.
SYMMCOMM_HD float decode_e5m2(std::uint8_t code) {
  std::uint32_t const exp_field = (code >> 2) & 0x1fu;
  std::uint32_t const man = code & 0x3u;
  float mag;
  if (exp_field == 0x1fu) {
    mag = bits::bits_float(man == 0 ? 0x7f800000u : 0x7fc00000u);
  } else if (exp_field == 0) {
    mag = static_cast<float>(man) * bits::exp2i(-16);
  } else {
    mag = bits::bits_float(((exp_field + 112u) << 23) | (man << 21));
  }
  return (code & 0x80u) ? -mag : mag;
}

/// @brief Encodes in the given format.
SYMMCOMM_HD std::uint8_t encode_fp8(float x, Fp8Format f) {
  return f == Fp8Format::E4M3 ? encode_e4m3(x) : encode_e5m2(x);
}
/// @brief Decodes in the given format.
SYMMCOMM_HD float decode_fp8(std::uint8_t code, Fp8Format f) {
  return f == Fp8Format::E4M3 ? decode_e4m3(code) : decode_e5m2(code);
}

/// @brief Dequantization scale for an FP8 tensor of absolute maximum `amax`: amax / max_finite,
/// or 1 when amax is zero, negative, infinite or NaN (nothing sensible to scale by).
SYMMCOMM_HD float fp8_scale_from_amax(float amax, Fp8Format f) {
  bool const usable = amax > 0.0f && amax <= 3.4028234663852886e38f;
  return usable ? amax / fp8_max(f) : 1.0f;
}

/// @brief Elements of one block of per-block FP8 scaling (DeepSeek's activations, a MoE group's
/// FP8 wire): one fp32 dequantization scale per 128 consecutive elements of a row.
inline constexpr int kFp8BlockSize = 128;

/// @brief Quantizes one block of `n` floats to e4m3 with one scale, as symmcomm's kernels do:
/// the scale is fp8_scale_from_amax(the block's absolute maximum), each code
/// encode_e4m3(x * (1 / scale)). Writes `n` codes and returns the scale (real = code x scale).
SYMMCOMM_HD float fp8_quantize_block(const float* x, int n, std::uint8_t* codes) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    float const a = x[i] < 0.0f ? -x[i] : x[i];
    if (a > amax) amax = a;  // NaN ignored, as fmaxf does on the device
  }
  float const scale = fp8_scale_from_amax(amax, Fp8Format::E4M3);
  float const inv = 1.0f / scale;
  for (int i = 0; i < n; ++i) codes[i] = encode_e4m3(x[i] * inv);
  return scale;
}

}  // namespace symmcomm
