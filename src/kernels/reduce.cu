// Local reduction of quantized shards (symmcomm/collectives/local_reduce.hpp): dequantize each
// rank's shard, accumulate in fp32 in rank order, round once.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <type_traits>

#include "device_codecs.cuh"
#include "launch.cuh"
#include "symmcomm/collectives/local_reduce.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/nvfp4.hpp"

namespace symmcomm {
namespace detail {
namespace {

template <int N, class Out>
__device__ __forceinline__ void store(Out* out, std::size_t first, const float (&v)[N]) {
  if constexpr (std::is_same_v<Out, float>) {
    float4* o = reinterpret_cast<float4*>(out + first);
#pragma unroll
    for (int k = 0; k < N / 4; ++k)
      o[k] = make_float4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
  } else {
    uint4* o = reinterpret_cast<uint4*>(out + first);
#pragma unroll
    for (int k = 0; k < N / 8; ++k) {
      o[k] = make_uint4(
          pack_bf16x2(v[8 * k], v[8 * k + 1]), pack_bf16x2(v[8 * k + 2], v[8 * k + 3]),
          pack_bf16x2(v[8 * k + 4], v[8 * k + 5]), pack_bf16x2(v[8 * k + 6], v[8 * k + 7]));
    }
  }
}

template <class Out>
__global__ void reduce_nvfp4_kernel(const __grid_constant__ QuantizedShards shards,
                                    std::size_t blocks, Out* __restrict__ out) {
  __shared__ float inv_global[QuantizedShards::kMaxRanks];
  for (int r = threadIdx.x; r < shards.ranks; r += blockDim.x)
    inv_global[r] = 1.0f / *shards.scale[r];
  __syncthreads();
  std::size_t const stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t b = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; b < blocks;
       b += stride) {
    float acc[16] = {};
    for (int r = 0; r < shards.ranks; ++r) {
      uint2 const packed = reinterpret_cast<const uint2*>(shards.data[r])[b];
      float const mult = decode_e4m3(shards.block_scales[r][b]) * inv_global[r];
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        acc[k] += e2m1_from_word(packed.x, k) * mult;
        acc[8 + k] += e2m1_from_word(packed.y, k) * mult;
      }
    }
    store<16>(out, b * 16, acc);
  }
}

template <class Out>
__global__ void reduce_fp8_kernel(const __grid_constant__ QuantizedShards shards,
                                  std::size_t groups, Fp8Format format, Out* __restrict__ out) {
  std::size_t const stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t g = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; g < groups;
       g += stride) {
    float acc[16] = {};
    for (int r = 0; r < shards.ranks; ++r) {
      uint4 const codes = reinterpret_cast<const uint4*>(shards.data[r])[g];
      float const scale = *shards.scale[r];
      std::uint32_t const w[4] = {codes.x, codes.y, codes.z, codes.w};
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        float2 const lo = decode_fp8x2(static_cast<std::uint16_t>(w[k]), format);
        float2 const hi = decode_fp8x2(static_cast<std::uint16_t>(w[k] >> 16), format);
        acc[4 * k] += lo.x * scale;
        acc[4 * k + 1] += lo.y * scale;
        acc[4 * k + 2] += hi.x * scale;
        acc[4 * k + 3] += hi.y * scale;
      }
    }
    store<16>(out, g * 16, acc);
  }
}

void check_shards(const QuantizedShards& s, std::size_t count, const void* out, bool nvfp4) {
  SYMMCOMM_EXPECTS(s.ranks >= 1 && s.ranks <= QuantizedShards::kMaxRanks,
                   "shards.ranks " << s.ranks << " is outside 1.." << QuantizedShards::kMaxRanks);
  SYMMCOMM_EXPECTS(count % 16 == 0, "count " << count << " is not a multiple of 16");
  SYMMCOMM_EXPECTS(out != nullptr || count == 0, "out is null");
  SYMMCOMM_EXPECTS(reinterpret_cast<std::uintptr_t>(out) % 16 == 0,
                   "out " << out << " is not 16-byte aligned");
  for (int r = 0; r < s.ranks && count > 0; ++r) {
    SYMMCOMM_EXPECTS(s.data[r] != nullptr, "shards.data[" << r << "] is null");
    SYMMCOMM_EXPECTS(reinterpret_cast<std::uintptr_t>(s.data[r]) % (nvfp4 ? 8 : 16) == 0,
                     "shards.data[" << r << "] " << static_cast<const void*>(s.data[r])
                                    << " is not " << (nvfp4 ? 8 : 16) << "-byte aligned");
    SYMMCOMM_EXPECTS(s.scale[r] != nullptr, "shards.scale[" << r << "] is null");
    SYMMCOMM_EXPECTS(!nvfp4 || s.block_scales[r] != nullptr,
                     "shards.block_scales[" << r << "] is null");
  }
}

}  // namespace
}  // namespace detail

template <class Out>
static void reduce_nvfp4_impl(const QuantizedShards& shards, std::size_t count, Out* out,
                              cudaStream_t stream) {
  detail::check_shards(shards, count, out, true);
  if (count == 0) return;
  std::size_t const blocks = count / 16;
  detail::reduce_nvfp4_kernel<Out>
      <<<detail::grid_for(blocks), detail::kThreadsPerCta, 0, stream>>>(shards, blocks, out);
  SYMMCOMM_CHECK_LAUNCH();
}

template <class Out>
static void reduce_fp8_impl(const QuantizedShards& shards, std::size_t count, Fp8Format format,
                            Out* out, cudaStream_t stream) {
  detail::check_shards(shards, count, out, false);
  if (count == 0) return;
  std::size_t const groups = count / 16;
  detail::reduce_fp8_kernel<Out><<<detail::grid_for(groups), detail::kThreadsPerCta, 0, stream>>>(
      shards, groups, format, out);
  SYMMCOMM_CHECK_LAUNCH();
}

void reduce_nvfp4_shards(const QuantizedShards& s, std::size_t count, bf16* out, cudaStream_t st) {
  reduce_nvfp4_impl(s, count, out, st);
}
void reduce_nvfp4_shards(const QuantizedShards& s, std::size_t count, float* out, cudaStream_t st) {
  reduce_nvfp4_impl(s, count, out, st);
}
void reduce_fp8_shards(const QuantizedShards& s, std::size_t count, Fp8Format f, bf16* out,
                       cudaStream_t st) {
  reduce_fp8_impl(s, count, f, out, st);
}
void reduce_fp8_shards(const QuantizedShards& s, std::size_t count, Fp8Format f, float* out,
                       cudaStream_t st) {
  reduce_fp8_impl(s, count, f, out, st);
}

}  // namespace symmcomm
