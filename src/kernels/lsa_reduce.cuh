#pragma once
// Private: the one-shot quantized reduce-scatter kernel (pull), over any peer policy
// (lsa_policy.cuh). Also the fallback's local reduction, through ShardTablePolicy.

#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "device_codecs.cuh"
#include "lsa_policy.cuh"
#include "symmcomm/formats/fp8.hpp"

namespace symmcomm::detail::lsa {

// ---- one-shot quantized reduce-scatter (pull) -----------------------------------------------

// The two e2m1 codes of byte j of `word` (low nibble first) as floats times 2^-14: the byte is
// spread so that each nibble's sign lands on a half's sign bit and its 3-bit magnitude on bits
// 9..11, where fp16's subnormal range makes the pattern exactly e2m1's value times 2^-14 (the
// same trick as e2m1_from_word, in halves: ~5 instructions per pair instead of ~7 per element).
__device__ __forceinline__ float2 e2m1x2_scaled(std::uint32_t word, int j) {
  std::uint32_t const byte = __byte_perm(word, 0u, 0x4440u + static_cast<unsigned>(j));
  std::uint32_t const t = byte * 4097u;  // byte | byte << 12
  std::uint32_t const bits = ((t << 9) & 0x0E000E00u) | ((t << 12) & 0x80008000u);
  __half2_raw raw;
  raw.x = static_cast<unsigned short>(bits);
  raw.y = static_cast<unsigned short>(bits >> 16);
  return __half22float2(__half2(raw));
}

// kBytes of one peer's shard at item i, as loaded: NVFP4 = 2 * kBytes elements in kBytes / 8
// blocks (with their scale codes); FP8 = kBytes elements.
template <bool kNvfp4, int kBytes>
struct RawItem {
  std::uint32_t w[kBytes / 4];
  std::uint8_t scale[kNvfp4 ? kBytes / 8 : 1];
};

template <bool kNvfp4, int kBytes>
__device__ __forceinline__ RawItem<kNvfp4, kBytes> load_item(const std::uint8_t* data,
                                                             const std::uint8_t* scales,
                                                             std::size_t i) {
  RawItem<kNvfp4, kBytes> r;
  if constexpr (kBytes == 16) {
    uint4 const v = reinterpret_cast<const uint4*>(data)[i];
    r.w[0] = v.x;
    r.w[1] = v.y;
    r.w[2] = v.z;
    r.w[3] = v.w;
  } else {
    uint2 const v = reinterpret_cast<const uint2*>(data)[i];
    r.w[0] = v.x;
    r.w[1] = v.y;
  }
  if constexpr (kNvfp4) {
#pragma unroll
    for (int b = 0; b < kBytes / 8; ++b) r.scale[b] = scales[i * (kBytes / 8) + b];
  }
  return r;
}

// acc += decode(item) * scales. Same arithmetic, in the same order, for every caller (the
// one-shot reduce-scatter and the fallback's local reduction share this kernel), so results
// are bit-identical between paths.
template <bool kNvfp4, int kBytes>
__device__ __forceinline__ void accumulate(const RawItem<kNvfp4, kBytes>& r, float mult,
                                           Fp8Format format,
                                           float (&acc)[kNvfp4 ? 2 * kBytes : kBytes]) {
  if constexpr (kNvfp4) {
#pragma unroll
    for (int b = 0; b < kBytes / 8; ++b) {
      // e2m1x2_scaled gives values times 2^-14; the block multiplier carries the 2^14 back
      // (exact: powers of two, and a multiplier near 2^114 is no real scale).
      float const m = decode_e4m3(r.scale[b]) * mult * 16384.0f;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          float2 const v = e2m1x2_scaled(r.w[2 * b + h], j);
          acc[16 * b + 8 * h + 2 * j] += v.x * m;
          acc[16 * b + 8 * h + 2 * j + 1] += v.y * m;
        }
      }
    }
  } else {
#pragma unroll
    for (int k = 0; k < kBytes / 4; ++k) {
      float2 const lo = decode_fp8x2(static_cast<std::uint16_t>(r.w[k]), format);
      float2 const hi = decode_fp8x2(static_cast<std::uint16_t>(r.w[k] >> 16), format);
      acc[4 * k] += lo.x * mult;
      acc[4 * k + 1] += lo.y * mult;
      acc[4 * k + 2] += hi.x * mult;
      acc[4 * k + 3] += hi.y * mult;
    }
  }
}

// Peers whose loads one thread keeps in flight before accumulating them (in rank order).
constexpr int kPeerBatch = 4;

// kPeerBatch loads in flight per thread keep enough bytes moving to approach memory bandwidth.
// (Capping registers at 64 for two CTAs per SM would spill ~60 bytes per thread.)
template <class P, class Out, bool kNvfp4, int kBytes>
__global__ void __launch_bounds__(kThreads)
    reduce_kernel(const __grid_constant__ P peers, const __grid_constant__ ReduceArgs a) {
  constexpr int kElems = kNvfp4 ? 2 * kBytes : kBytes;
  __shared__ const std::uint8_t* data[kMaxRanks];
  __shared__ const std::uint8_t* scales[kMaxRanks];
  __shared__ float mult[kMaxRanks];
  int const n = peers.size();
  peers.barrier();
  for (int p = static_cast<int>(threadIdx.x); p < n; p += static_cast<int>(blockDim.x)) {
    data[p] = reinterpret_cast<const std::uint8_t*>(peers.ptr(a.data, p));
    scales[p] =
        kNvfp4 ? reinterpret_cast<const std::uint8_t*>(peers.ptr(a.block_scales, p)) : nullptr;
    float const s = *reinterpret_cast<const float*>(peers.ptr(a.scale, p));
    mult[p] = kNvfp4 ? 1.0f / s : s;
  }
  __syncthreads();
  Out* out = static_cast<Out*>(a.out);
  std::size_t const items = a.count / kElems;
  for (std::size_t i = global_thread(); i < items; i += grid_threads()) {
    float acc[kElems] = {};
    for (int p0 = 0; p0 < n; p0 += kPeerBatch) {
      RawItem<kNvfp4, kBytes> raw[kPeerBatch];
#pragma unroll
      for (int k = 0; k < kPeerBatch; ++k) {
        if (p0 + k < n) raw[k] = load_item<kNvfp4, kBytes>(data[p0 + k], scales[p0 + k], i);
      }
#pragma unroll
      for (int k = 0; k < kPeerBatch; ++k) {
        if (p0 + k < n) accumulate<kNvfp4, kBytes>(raw[k], mult[p0 + k], a.fp8_format, acc);
      }
    }
    store_floats<kElems>(out, i * kElems, acc);
  }
  peers.barrier();
}
}  // namespace symmcomm::detail::lsa
