#pragma once
// Private device helpers shared by the codec kernels (codecs.cu) and the fused quantize +
// all-gather kernel (lsa.cu): 16-byte vector loads of bf16/fp32 input and NVFP4 block
// quantization that agrees bit for bit with symmcomm/formats/nvfp4.hpp.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "formats/device_codecs.cuh"
#include "formats/e2m1_bits.hpp"
#include "symmcomm/formats/e2m1.hpp"
#include "symmcomm/formats/nvfp4.hpp"

namespace symmcomm::detail {

// 16-byte vectors holding N input elements of type In.
template <class In, int N>
struct Vectors {
  static constexpr int kCount = static_cast<int>(sizeof(In)) * N / 16;
  uint4 v[kCount];
};

template <class In, int N>
__device__ __forceinline__ void load(const In* src, std::size_t group, Vectors<In, N>& out) {
  const uint4* p = reinterpret_cast<const uint4*>(src) + group * Vectors<In, N>::kCount;
#pragma unroll
  for (int k = 0; k < Vectors<In, N>::kCount; ++k) out.v[k] = p[k];
}

template <class In, int N>
__device__ __forceinline__ void to_floats(const Vectors<In, N>& in, float (&x)[N]) {
#pragma unroll
  for (int k = 0; k < Vectors<In, N>::kCount; ++k) {
    std::uint32_t const w[4] = {in.v[k].x, in.v[k].y, in.v[k].z, in.v[k].w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if constexpr (std::is_same_v<In, float>) {
        x[4 * k + j] = __uint_as_float(w[j]);
      } else {
        x[8 * k + 2 * j] = bf16_lo(w[j]);
        x[8 * k + 2 * j + 1] = bf16_hi(w[j]);
      }
    }
  }
}

// Multipliers for every e4m3 scale code, computed once per CTA: the per-block IEEE divisions
// (g / s to quantize, s / g to dequantize) become one shared-memory load.
__device__ __forceinline__ void fill_quant_table(float* table, float global_scale) {
  for (int i = threadIdx.x; i < 256; i += blockDim.x) {
    table[i] = nvfp4_quant_multiplier(static_cast<std::uint8_t>(i), global_scale);
  }
  __syncthreads();
}
__device__ __forceinline__ void fill_dequant_table(float* table, float global_scale) {
  for (int i = threadIdx.x; i < 256; i += blockDim.x) {
    table[i] = nvfp4_dequant_multiplier(static_cast<std::uint8_t>(i), global_scale);
  }
  __syncthreads();
}

// Each thread quantizes whole 16-element blocks, two blocks in flight. (Giving a thread half a
// block, with coalesced 16-byte loads and a shuffle for the block maximum, was slower: the
// per-element work, not the access pattern, limits this kernel.) This per-element form is exact for
// every input, NaN and infinities included.
__device__ __forceinline__ void quantize_one_block(const float (&x)[16], float scale_factor,
                                                   const float* quant_table, uint2& packed,
                                                   std::uint8_t& scale) {
  float block_amax = 0.0f;
#pragma unroll
  for (int k = 0; k < 16; ++k) block_amax = fmaxf(block_amax, fabsf(x[k]));
  scale = e4m3_code(block_amax * scale_factor);
  float const mult = quant_table[scale];
  std::uint32_t lo = 0, hi = 0;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    lo |= encode_e2m1_u32(x[k] * mult) << (4 * k);
    hi |= encode_e2m1_u32(x[8 + k] * mult) << (4 * k);
  }
  packed = make_uint2(lo, hi);
}

// Per bf16 half, the larger of |a| and |b|, NaN if either is NaN (the result's sign bit is the
// xor of the inputs' and means nothing here).
__device__ __forceinline__ std::uint32_t bf16x2_absmax_nan(std::uint32_t a, std::uint32_t b) {
  std::uint32_t d;
  asm("max.NaN.xorsign.abs.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

__device__ __forceinline__ float fmax_nan(float a, float b) {
  float d;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
}

// One block of bf16 input. When the block's inputs and multiplier are finite (multiplier >= 0),
// every product x * mult is a non-NaN float with x's sign, so the codes' magnitudes come from
// e2m1x8_magnitudes() and their signs straight from the bf16 words, and the block maximum from
// bf16x2 pairs: 136 SASS instructions per unpacked block instead of 254 for the per-element
// form (sm_90; the kernel is bound by them).
// Any other block (NaN or infinite input, a non-finite or negative multiplier) takes the
// per-element form above; both give the same bits as nvfp4_quantize_block().
__device__ __forceinline__ void quantize_one_block(const Vectors<bf16, 16>& in, float scale_factor,
                                                   const float* quant_table, uint2& packed,
                                                   std::uint8_t& scale) {
  std::uint32_t const w[8] = {in.v[0].x, in.v[0].y, in.v[0].z, in.v[0].w,
                              in.v[1].x, in.v[1].y, in.v[1].z, in.v[1].w};
  std::uint32_t const m =
      bf16x2_absmax_nan(
          bf16x2_absmax_nan(bf16x2_absmax_nan(w[0], w[1]), bf16x2_absmax_nan(w[2], w[3])),
          bf16x2_absmax_nan(bf16x2_absmax_nan(w[4], w[5]), bf16x2_absmax_nan(w[6], w[7]))) &
      0x7fff7fffu;
  float const block_amax = fmax_nan(__uint_as_float(m << 16), __uint_as_float(m & 0xffff0000u));
  float x[16];
  to_floats(in, x);
  if (block_amax < INFINITY) {  // false for NaN
    std::uint8_t const code = e4m3_code(block_amax * scale_factor);
    float const mult = quant_table[code];
    if (mult >= 0.0f && mult < INFINITY) {
      float y[16];
#pragma unroll
      for (int k = 0; k < 16; ++k) y[k] = x[k] * mult;
      packed = make_uint2(e2m1x8_magnitudes(y) | bf16x8_signs_as_e2m1(w),
                          e2m1x8_magnitudes(y + 8) | bf16x8_signs_as_e2m1(w + 4));
      scale = code;
      return;
    }
  }
  quantize_one_block(x, scale_factor, quant_table, packed, scale);
}

// fp32 input: the per-element form.
__device__ __forceinline__ void quantize_one_block(const Vectors<float, 16>& in, float scale_factor,
                                                   const float* quant_table, uint2& packed,
                                                   std::uint8_t& scale) {
  float x[16];
  to_floats(in, x);
  quantize_one_block(x, scale_factor, quant_table, packed, scale);
}

}  // namespace symmcomm::detail
