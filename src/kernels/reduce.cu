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

// Each thread produces 16 bytes of output (8 bf16 or 4 fp32 elements), so a warp's stores
// cover whole sectors; it reads the matching 4 (or 2) bytes of packed data from every rank.
template <class Out>
__global__ void reduce_nvfp4_kernel(const __grid_constant__ QuantizedShards shards,
                                    std::size_t items, Out* __restrict__ out) {
  constexpr int kElems = 16 / static_cast<int>(sizeof(Out));
  __shared__ float inv_global[QuantizedShards::kMaxRanks];
  for (int r = threadIdx.x; r < shards.ranks; r += blockDim.x) {
    inv_global[r] = 1.0f / *shards.scale[r];
  }
  __syncthreads();
  std::size_t const stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < items;
       i += stride) {
    float acc[kElems] = {};
    std::size_t const block = i * kElems / 16;
    for (int r = 0; r < shards.ranks; ++r) {
      std::uint32_t packed;
      if constexpr (kElems == 8) {
        packed = reinterpret_cast<const std::uint32_t*>(shards.data[r])[i];
      } else {
        packed = reinterpret_cast<const std::uint16_t*>(shards.data[r])[i];
      }
      float const mult = decode_e4m3(shards.block_scales[r][block]) * inv_global[r];
#pragma unroll
      for (int k = 0; k < kElems; ++k) acc[k] += e2m1_from_word(packed, k) * mult;
    }
    store_floats<kElems>(out, i * kElems, acc);
  }
}

template <class Out>
__global__ void reduce_fp8_kernel(const __grid_constant__ QuantizedShards shards, std::size_t items,
                                  Fp8Format format, Out* __restrict__ out) {
  constexpr int kElems = 16 / static_cast<int>(sizeof(Out));
  std::size_t const stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < items;
       i += stride) {
    float acc[kElems] = {};
    for (int r = 0; r < shards.ranks; ++r) {
      float const scale = *shards.scale[r];
      std::uint32_t words[kElems / 4];
      if constexpr (kElems == 8) {
        uint2 const w = reinterpret_cast<const uint2*>(shards.data[r])[i];
        words[0] = w.x;
        words[kElems / 4 - 1] = w.y;
      } else {
        words[0] = reinterpret_cast<const std::uint32_t*>(shards.data[r])[i];
      }
#pragma unroll
      for (int k = 0; k < kElems / 4; ++k) {
        float2 const lo = decode_fp8x2(static_cast<std::uint16_t>(words[k]), format);
        float2 const hi = decode_fp8x2(static_cast<std::uint16_t>(words[k] >> 16), format);
        acc[4 * k] += lo.x * scale;
        acc[4 * k + 1] += lo.y * scale;
        acc[4 * k + 2] += hi.x * scale;
        acc[4 * k + 3] += hi.y * scale;
      }
    }
    store_floats<kElems>(out, i * kElems, acc);
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
  std::size_t const items = count / (16 / sizeof(Out));
  detail::reduce_nvfp4_kernel<Out>
      <<<detail::grid_for(items), detail::kThreadsPerCta, 0, stream>>>(shards, items, out);
  SYMMCOMM_CHECK_LAUNCH();
}

template <class Out>
static void reduce_fp8_impl(const QuantizedShards& shards, std::size_t count, Fp8Format format,
                            Out* out, cudaStream_t stream) {
  detail::check_shards(shards, count, out, false);
  if (count == 0) return;
  std::size_t const items = count / (16 / sizeof(Out));
  detail::reduce_fp8_kernel<Out>
      <<<detail::grid_for(items), detail::kThreadsPerCta, 0, stream>>>(shards, items, format, out);
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
