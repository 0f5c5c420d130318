// BF16 <-> NVFP4 / FP8 conversion kernels (public API in symmcomm/formats/codecs.hpp).
//
// Each thread converts whole 16-element NVFP4 blocks (or 8-element FP8 groups) with 16-byte
// loads and stores, several independent blocks in flight per thread. The element arithmetic is
// the shared host/device code of symmcomm/formats, so kernels and CPU references agree bit for
// bit.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "launch.cuh"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/bf16.hpp"
#include "symmcomm/formats/codecs.hpp"
#include "symmcomm/formats/nvfp4.hpp"

namespace symmcomm {
namespace detail {
namespace {

constexpr int kUnroll = 2;

__device__ __forceinline__ float bf16_lo(std::uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(std::uint32_t w) {
  return __uint_as_float(w & 0xffff0000u);
}

// ---- absolute maximum (ScaleMode::Compute) --------------------------------------------------

__global__ void amax_bf16_kernel(const uint4* __restrict__ src, std::size_t vec_count,
                                 unsigned* __restrict__ amax_bits) {
  float m = 0.0f;
  std::size_t const stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
       i < vec_count; i += stride) {
    uint4 const v = src[i];
    std::uint32_t const w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      m = fmaxf(m, fabsf(bf16_lo(w[k])));
      m = fmaxf(m, fabsf(bf16_hi(w[k])));
    }
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
  }
  // Non-negative floats order like their bit patterns.
  if ((threadIdx.x & 31) == 0) atomicMax(amax_bits, __float_as_uint(m));
}

__global__ void nvfp4_finalize_global_scale_kernel(float* slot) {
  *slot = nvfp4_global_scale(*slot);
}
__global__ void fp8_finalize_scale_kernel(float* slot, Fp8Format format) {
  *slot = fp8_scale_from_amax(*slot, format);
}

// ---- NVFP4 --------------------------------------------------------------------------------

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

__device__ __forceinline__ std::uint8_t e4m3_code(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  // Hardware cvt.rn.satfinite: identical to encode_e4m3 for non-NaN input.
  return static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
#else
  return encode_e4m3(x);
#endif
}

__device__ __forceinline__ void quantize_one_block(const uint4 (&in)[2], float scale_factor,
                                                   const float* quant_table, uint2& packed,
                                                   std::uint8_t& scale) {
  float x[16];
  std::uint32_t const w[8] = {in[0].x, in[0].y, in[0].z, in[0].w,
                              in[1].x, in[1].y, in[1].z, in[1].w};
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    x[2 * k] = bf16_lo(w[k]);
    x[2 * k + 1] = bf16_hi(w[k]);
  }
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

// `scale_slot` holds the global scale (Given) or the tensor's amax (Compute).
__global__ void quantize_nvfp4_kernel(const uint4* __restrict__ src, std::size_t blocks,
                                      uint2* __restrict__ data, std::uint8_t* __restrict__ scales,
                                      const float* __restrict__ scale_slot, bool slot_is_amax) {
  __shared__ float quant_table[256];
  float const slot = *scale_slot;
  float const global_scale = slot_is_amax ? nvfp4_global_scale(slot) : slot;
  float const scale_factor = nvfp4_scale_factor(global_scale);
  fill_quant_table(quant_table, global_scale);
  std::size_t const stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t b0 = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
       b0 < blocks; b0 += stride * kUnroll) {
    uint4 in[kUnroll][2];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      std::size_t const b = b0 + u * stride;
      if (b < blocks) {
        in[u][0] = src[2 * b];
        in[u][1] = src[2 * b + 1];
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      std::size_t const b = b0 + u * stride;
      if (b < blocks) {
        uint2 packed;
        std::uint8_t scale;
        quantize_one_block(in[u], scale_factor, quant_table, packed, scale);
        data[b] = packed;
        scales[b] = scale;
      }
    }
  }
}

// Two floats as bf16x2 (round-to-nearest-even; hardware cvt, equal to float_to_bf16_bits for
// every non-NaN input).
__device__ __forceinline__ std::uint32_t pack_bf16x2(float first, float second) {
  __nv_bfloat162 const p = __floats2bfloat162_rn(first, second);
  return *reinterpret_cast<const std::uint32_t*>(&p);
}

// Element k of a packed e2m1 word, decoded without a table: the code's exponent and mantissa
// bits placed in bits 22..24 of a float are e2m1's value times 2^-126 (0.5 is the subnormal).
__device__ __forceinline__ float e2m1_from_word(std::uint32_t word, int k) {
  std::uint32_t const code = (word >> (4 * k)) & 0xfu;
  std::uint32_t const bits = ((code & 0x8u) << 28) | ((code & 0x7u) << 22);
  return __uint_as_float(bits) * 8.507059173023462e37f;  // 2^126
}

template <class Out>
__device__ __forceinline__ void store16(Out* dst, std::size_t b, const float (&v)[16]);

template <>
__device__ __forceinline__ void store16<bf16>(bf16* dst, std::size_t b, const float (&v)[16]) {
  std::uint32_t w[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) w[k] = pack_bf16x2(v[2 * k], v[2 * k + 1]);
  uint4* out = reinterpret_cast<uint4*>(dst) + 2 * b;
  out[0] = make_uint4(w[0], w[1], w[2], w[3]);
  out[1] = make_uint4(w[4], w[5], w[6], w[7]);
}

template <>
__device__ __forceinline__ void store16<float>(float* dst, std::size_t b, const float (&v)[16]) {
  float4* out = reinterpret_cast<float4*>(dst) + 4 * b;
#pragma unroll
  for (int k = 0; k < 4; ++k) out[k] = make_float4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
}

template <class Out>
__global__ void dequantize_nvfp4_kernel(const uint2* __restrict__ data,
                                        const std::uint8_t* __restrict__ scales,
                                        const float* __restrict__ global_scale_ptr,
                                        std::size_t blocks, Out* __restrict__ dst) {
  __shared__ float dequant_table[256];
  fill_dequant_table(dequant_table, *global_scale_ptr);
  std::size_t const stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t b0 = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
       b0 < blocks; b0 += stride * kUnroll) {
    uint2 packed[kUnroll];
    std::uint8_t scale[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      std::size_t const b = b0 + u * stride;
      if (b < blocks) {
        packed[u] = data[b];
        scale[u] = scales[b];
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      std::size_t const b = b0 + u * stride;
      if (b < blocks) {
        float const mult = dequant_table[scale[u]];
        float v[16];
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          v[k] = e2m1_from_word(packed[u].x, k) * mult;
          v[8 + k] = e2m1_from_word(packed[u].y, k) * mult;
        }
        store16(dst, b, v);
      }
    }
  }
}

// ---- FP8 ----------------------------------------------------------------------------------

__device__ __forceinline__ std::uint32_t encode_fp8x2(float a, float b, Fp8Format format) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  // Hardware conversion (cvt.rn.satfinite); bit-identical to encode_fp8 for non-NaN input.
  __nv_fp8x2_storage_t const s = __nv_cvt_float2_to_fp8x2(
      make_float2(a, b), __NV_SATFINITE, format == Fp8Format::E4M3 ? __NV_E4M3 : __NV_E5M2);
  return static_cast<std::uint32_t>(s);
#else
  return static_cast<std::uint32_t>(encode_fp8(a, format)) |
         (static_cast<std::uint32_t>(encode_fp8(b, format)) << 8);
#endif
}

__global__ void quantize_fp8_kernel(const uint4* __restrict__ src, std::size_t groups,
                                    uint2* __restrict__ dst, const float* __restrict__ scale_slot,
                                    bool slot_is_amax, Fp8Format format) {
  float const slot = *scale_slot;
  float const scale = slot_is_amax ? fp8_scale_from_amax(slot, format) : slot;
  float const inv_scale = 1.0f / scale;
  std::size_t const stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t g0 = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
       g0 < groups; g0 += stride * kUnroll) {
    uint4 in[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (g0 + u * stride < groups) in[u] = src[g0 + u * stride];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      std::size_t const g = g0 + u * stride;
      if (g < groups) {
        std::uint32_t const w[4] = {in[u].x, in[u].y, in[u].z, in[u].w};
        std::uint32_t half[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          half[k] = encode_fp8x2(bf16_lo(w[k]) * inv_scale, bf16_hi(w[k]) * inv_scale, format);
        }
        dst[g] = make_uint2(half[0] | (half[1] << 16), half[2] | (half[3] << 16));
      }
    }
  }
}

// Two FP8 codes (first in the low byte) to floats; exact (every FP8 value is a half).
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

template <class Out>
__global__ void dequantize_fp8_kernel(const uint2* __restrict__ src, std::size_t groups,
                                      const float* __restrict__ scale_ptr, Fp8Format format,
                                      Out* __restrict__ dst) {
  float const scale = *scale_ptr;
  std::size_t const stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t g = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; g < groups;
       g += stride) {
    uint2 const codes = src[g];
    float v[8];
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      float2 const a = decode_fp8x2(static_cast<std::uint16_t>(codes.x >> (16 * k)), format);
      float2 const b = decode_fp8x2(static_cast<std::uint16_t>(codes.y >> (16 * k)), format);
      v[2 * k] = a.x * scale;
      v[2 * k + 1] = a.y * scale;
      v[4 + 2 * k] = b.x * scale;
      v[4 + 2 * k + 1] = b.y * scale;
    }
    if constexpr (std::is_same_v<Out, float>) {
      float4* out = reinterpret_cast<float4*>(dst) + 2 * g;
      out[0] = make_float4(v[0], v[1], v[2], v[3]);
      out[1] = make_float4(v[4], v[5], v[6], v[7]);
    } else {
      std::uint32_t w[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) w[k] = pack_bf16x2(v[2 * k], v[2 * k + 1]);
      reinterpret_cast<uint4*>(dst)[g] = make_uint4(w[0], w[1], w[2], w[3]);
    }
  }
}

void check_device_pointer(const void* p, std::size_t count, const char* name) {
  SYMMCOMM_EXPECTS(count == 0 || p != nullptr, name << " is null but count is " << count);
  SYMMCOMM_EXPECTS(reinterpret_cast<std::uintptr_t>(p) % kVectorAlignment == 0,
                   name << " " << p << " is not " << kVectorAlignment << "-byte aligned");
}

void launch_amax(const bf16* src, std::size_t count, float* slot, cudaStream_t stream) {
  SYMMCOMM_CUDA_TRY(cudaMemsetAsync(slot, 0, sizeof(float), stream));
  std::size_t const vecs = count / 8;
  amax_bf16_kernel<<<grid_for(vecs, 4), kThreadsPerCta, 0, stream>>>(
      reinterpret_cast<const uint4*>(src), vecs, reinterpret_cast<unsigned*>(slot));
  SYMMCOMM_CHECK_LAUNCH();
}

}  // namespace
}  // namespace detail

void quantize_nvfp4(const bf16* src, Nvfp4View dst, ScaleMode mode, cudaStream_t stream) {
  validate(dst, "dst");
  detail::check_device_pointer(src, dst.count, "src");
  if (dst.count == 0) return;
  bool const compute = mode == ScaleMode::Compute;
  if (compute) detail::launch_amax(src, dst.count, dst.global_scale, stream);
  std::size_t const blocks = dst.count / kNvfp4BlockSize;
  detail::quantize_nvfp4_kernel<<<detail::grid_for(blocks), detail::kThreadsPerCta, 0, stream>>>(
      reinterpret_cast<const uint4*>(src), blocks, reinterpret_cast<uint2*>(dst.data),
      dst.block_scales, dst.global_scale, compute);
  SYMMCOMM_CHECK_LAUNCH();
  if (compute) {
    detail::nvfp4_finalize_global_scale_kernel<<<1, 1, 0, stream>>>(dst.global_scale);
    SYMMCOMM_CHECK_LAUNCH();
  }
}

template <class Out>
static void dequantize_nvfp4_impl(Nvfp4View src, Out* dst, cudaStream_t stream) {
  validate(src, "src");
  detail::check_device_pointer(dst, src.count, "dst");
  if (src.count == 0) return;
  std::size_t const blocks = src.count / kNvfp4BlockSize;
  detail::dequantize_nvfp4_kernel<Out><<<detail::grid_for(blocks), detail::kThreadsPerCta, 0,
                                         stream>>>(reinterpret_cast<const uint2*>(src.data),
                                                   src.block_scales, src.global_scale, blocks, dst);
  SYMMCOMM_CHECK_LAUNCH();
}

void dequantize_nvfp4(Nvfp4View src, bf16* dst, cudaStream_t stream) {
  dequantize_nvfp4_impl(src, dst, stream);
}
void dequantize_nvfp4(Nvfp4View src, float* dst, cudaStream_t stream) {
  dequantize_nvfp4_impl(src, dst, stream);
}

void quantize_fp8(const bf16* src, Fp8View dst, ScaleMode mode, cudaStream_t stream) {
  validate(dst, "dst");
  detail::check_device_pointer(src, dst.count, "src");
  SYMMCOMM_EXPECTS(dst.count % 8 == 0,
                   "dst.count " << dst.count << " is not a multiple of 8 (FP8 kernels convert "
                                                "8 elements per 16-byte access)");
  if (dst.count == 0) return;
  bool const compute = mode == ScaleMode::Compute;
  if (compute) detail::launch_amax(src, dst.count, dst.scale, stream);
  std::size_t const groups = dst.count / 8;
  detail::quantize_fp8_kernel<<<detail::grid_for(groups), detail::kThreadsPerCta, 0, stream>>>(
      reinterpret_cast<const uint4*>(src), groups, reinterpret_cast<uint2*>(dst.data), dst.scale,
      compute, dst.format);
  SYMMCOMM_CHECK_LAUNCH();
  if (compute) {
    detail::fp8_finalize_scale_kernel<<<1, 1, 0, stream>>>(dst.scale, dst.format);
    SYMMCOMM_CHECK_LAUNCH();
  }
}

template <class Out>
static void dequantize_fp8_impl(Fp8View src, Out* dst, cudaStream_t stream) {
  validate(src, "src");
  detail::check_device_pointer(dst, src.count, "dst");
  SYMMCOMM_EXPECTS(src.count % 8 == 0, "src.count " << src.count << " is not a multiple of 8");
  if (src.count == 0) return;
  std::size_t const groups = src.count / 8;
  detail::dequantize_fp8_kernel<Out>
      <<<detail::grid_for(groups), detail::kThreadsPerCta, 0, stream>>>(
          reinterpret_cast<const uint2*>(src.data), groups, src.scale, src.format, dst);
  SYMMCOMM_CHECK_LAUNCH();
}

void dequantize_fp8(Fp8View src, bf16* dst, cudaStream_t stream) {
  dequantize_fp8_impl(src, dst, stream);
}
void dequantize_fp8(Fp8View src, float* dst, cudaStream_t stream) {
  dequantize_fp8_impl(src, dst, stream);
}

}  // namespace symmcomm
