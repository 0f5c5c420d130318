#pragma once
// Private device helpers shared by the codec kernels (codecs.cu) and the fused quantize +
// all-gather kernel (lsa.cu): 16-byte vector loads of bf16/fp32 input and NVFP4 block
// quantization that agrees bit for bit with symmcomm/formats/nvfp4.hpp.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "device_codecs.cuh"
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

// Each thread quantizes whole 16-element blocks, two blocks in flight. (Measured on H200: giving
// a thread half a block, with coalesced 16-byte loads and a shuffle for the block maximum, was
// slower, 63% vs 73% of copy bandwidth: the per-element work, not the access pattern, limits
// this kernel.)
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

}  // namespace symmcomm::detail
