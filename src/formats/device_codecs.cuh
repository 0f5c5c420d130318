#pragma once
// Private device helpers shared by symmcomm's kernels: fast element conversions that agree
// bit for bit with the host/device reference functions of symmcomm/formats.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "symmcomm/formats/bf16.hpp"
#include "symmcomm/formats/fp8.hpp"

namespace symmcomm::detail {

/// BF16 halves of a 32-bit word as floats (exact).
__device__ __forceinline__ float bf16_lo(std::uint32_t w) {
  return __uint_as_float(w << 16);
}
__device__ __forceinline__ float bf16_hi(std::uint32_t w) {
  return __uint_as_float(w & 0xffff0000u);
}

/// Two floats as bf16x2, round-to-nearest-even (hardware cvt; equals float_to_bf16_bits for
/// every non-NaN input).
__device__ __forceinline__ std::uint32_t pack_bf16x2(float first, float second) {
  __nv_bfloat162 const p = __floats2bfloat162_rn(first, second);
  return *reinterpret_cast<const std::uint32_t*>(&p);
}

/// Element k of a packed e2m1 word, decoded without a table: the code's exponent and mantissa
/// bits placed in bits 22..24 of a float are e2m1's value times 2^-126 (0.5 is the subnormal),
/// so one multiply by 2^126 gives decode_e2m1(code) exactly.
__device__ __forceinline__ float e2m1_from_word(std::uint32_t word, int k) {
  std::uint32_t const code = (word >> (4 * k)) & 0xfu;
  std::uint32_t const bits = ((code & 0x8u) << 28) | ((code & 0x7u) << 22);
  return __uint_as_float(bits) * 8.507059173023462e37f;  // 2^126
}

/// e4m3 code of a non-NaN float (hardware cvt.rn.satfinite; equals encode_e4m3).
__device__ __forceinline__ std::uint8_t e4m3_code(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  return static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
#else
  return encode_e4m3(x);
#endif
}

/// Two FP8 codes (first in the low byte) as floats; exact (every FP8 value is a half).
__device__ __forceinline__ float2 decode_fp8x2(std::uint16_t codes, Fp8Format format) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  __half2_raw const h = __nv_cvt_fp8x2_to_halfraw2(
      static_cast<__nv_fp8x2_storage_t>(codes), format == Fp8Format::E4M3 ? __NV_E4M3 : __NV_E5M2);
  return __half22float2(*reinterpret_cast<const __half2*>(&h));
#else
  return make_float2(decode_fp8(static_cast<std::uint8_t>(codes), format),
                     decode_fp8(static_cast<std::uint8_t>(codes >> 8), format));
#endif
}

/// Two floats as FP8 codes (first in the low byte); hardware cvt.rn.satfinite where present,
/// equal to encode_fp8 for non-NaN input.
__device__ __forceinline__ std::uint32_t encode_fp8x2(float a, float b, Fp8Format format) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  __nv_fp8x2_storage_t const s = __nv_cvt_float2_to_fp8x2(
      make_float2(a, b), __NV_SATFINITE, format == Fp8Format::E4M3 ? __NV_E4M3 : __NV_E5M2);
  return static_cast<std::uint32_t>(s);
#else
  return static_cast<std::uint32_t>(encode_fp8(a, format)) |
         (static_cast<std::uint32_t>(encode_fp8(b, format)) << 8);
#endif
}

/// Stores N floats (N a multiple of 4 for fp32, of 8 for bf16) at element `first` of `dst`
/// with 16-byte stores, rounding to bf16 (nearest even) for bf16 outputs.
template <int N, class Out>
__device__ __forceinline__ void store_floats(Out* dst, std::size_t first, const float (&v)[N]) {
  if constexpr (std::is_same_v<Out, float>) {
    float4* out = reinterpret_cast<float4*>(dst + first);
#pragma unroll
    for (int k = 0; k < N / 4; ++k) {
      out[k] = make_float4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
    }
  } else {
    uint4* out = reinterpret_cast<uint4*>(dst + first);
#pragma unroll
    for (int k = 0; k < N / 8; ++k) {
      out[k] = make_uint4(
          pack_bf16x2(v[8 * k], v[8 * k + 1]), pack_bf16x2(v[8 * k + 2], v[8 * k + 3]),
          pack_bf16x2(v[8 * k + 4], v[8 * k + 5]), pack_bf16x2(v[8 * k + 6], v[8 * k + 7]));
    }
  }
}

}  // namespace symmcomm::detail
