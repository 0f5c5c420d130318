#pragma once
/// @file nvfp4.hpp
/// @brief NVFP4 = e2m1 values in blocks of 16 elements, each block with an e4m3 scale, plus one
/// fp32 global scale per tensor.
///
/// Conventions (those of TensorRT-LLM and FlashInfer, so buffers interoperate):
/// - global scale `g = 448 * 6 / amax(tensor)` (a *quantization* multiplier: it maps the
///   tensor's largest magnitude to the largest e4m3 block scale times the largest e2m1 value);
/// - block scale `s = e4m3(amax(block) * (g / 6))` (g / 6 computed once per tensor);
/// - element code `q = e2m1(x * (g / s))` (0 when s is 0);
/// - dequantization `x ~= decode(q) * (s / g)`.
/// - Layout: packed data of count/2 bytes, element 2i in the low nibble of byte i; block scales
///   of count/16 bytes in linear (row-major, unswizzled) order. GEMM-specific swizzles of the
///   scales are applied after a gather, as engines do.
///
/// The helpers here are the single definition of that arithmetic: the CUDA kernels and the CPU
/// references call the same functions, so their results agree bit for bit.

#include <cstddef>
#include <cstdint>

#include "symmcomm/formats/e2m1.hpp"
#include "symmcomm/formats/fp8.hpp"
#include "symmcomm/formats/host_device.hpp"

namespace symmcomm {

/// @brief Elements per NVFP4 block (one e4m3 scale each).
inline constexpr std::size_t kNvfp4BlockSize = 16;
/// @brief Bytes of packed NVFP4 data per block.
inline constexpr std::size_t kNvfp4BlockBytes = kNvfp4BlockSize / 2;

/// @brief Global scale for a tensor of absolute maximum `amax`: 448*6/amax, or 1 when amax is
/// zero, negative, infinite or NaN.
SYMMCOMM_HD float nvfp4_global_scale(float amax) {
  bool const usable = amax > 0.0f && amax <= 3.4028234663852886e38f;
  float const g = usable ? (kE4m3Max * kE2m1Max) / amax : 1.0f;
  return g <= 3.4028234663852886e38f ? g : 3.4028234663852886e38f;
}

/// @brief The per-tensor factor g / 6 that maps a block's absolute maximum to its scale.
SYMMCOMM_HD float nvfp4_scale_factor(float global_scale) {
  return global_scale / kE2m1Max;
}

/// @brief The e4m3 block scale code for a block of absolute maximum `block_amax`.
SYMMCOMM_HD std::uint8_t nvfp4_block_scale(float block_amax, float global_scale) {
  return encode_e4m3(block_amax * nvfp4_scale_factor(global_scale));
}

/// @brief Multiplier applied to each element before e2m1 encoding: g / s (0 when s == 0).
SYMMCOMM_HD float nvfp4_quant_multiplier(std::uint8_t block_scale, float global_scale) {
  float const s = decode_e4m3(block_scale);
  return s != 0.0f ? global_scale / s : 0.0f;
}

/// @brief Multiplier applied to each decoded e2m1 value: s / g.
SYMMCOMM_HD float nvfp4_dequant_multiplier(std::uint8_t block_scale, float global_scale) {
  return decode_e4m3(block_scale) / global_scale;
}

/// @brief Quantizes one block of 16 floats: writes 8 packed bytes and returns the scale code.
SYMMCOMM_HD std::uint8_t nvfp4_quantize_block(const float* values, float global_scale,
                                              std::uint8_t* packed) {
  float block_amax = 0.0f;
  for (std::size_t i = 0; i < kNvfp4BlockSize; ++i) {
    float const a = values[i] < 0.0f ? -values[i] : values[i];
    block_amax = a > block_amax ? a : block_amax;
  }
  std::uint8_t const scale = nvfp4_block_scale(block_amax, global_scale);
  float const mult = nvfp4_quant_multiplier(scale, global_scale);
  for (std::size_t i = 0; i < kNvfp4BlockBytes; ++i) {
    packed[i] =
        pack_e2m1x2(encode_e2m1(values[2 * i] * mult), encode_e2m1(values[2 * i + 1] * mult));
  }
  return scale;
}

/// @brief Dequantizes element `i` (0..count) of an NVFP4 tensor held in host-visible memory.
SYMMCOMM_HD float nvfp4_element(const std::uint8_t* packed, const std::uint8_t* block_scales,
                                float global_scale, std::size_t i) {
  std::uint8_t const byte = packed[i / 2];
  std::uint8_t const code = (i & 1) ? static_cast<std::uint8_t>(byte >> 4) : byte;
  return decode_e2m1(code) *
         nvfp4_dequant_multiplier(block_scales[i / kNvfp4BlockSize], global_scale);
}

}  // namespace symmcomm
