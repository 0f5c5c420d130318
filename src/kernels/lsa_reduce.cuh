#pragma once
// Private: the one-shot quantized reduce-scatter kernel (pull), over any peer policy
// (lsa_policy.cuh). Also the fallback's local reduction, through ShardTablePolicy.

#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "formats/device_codecs.cuh"
#include "formats/e2m1_bits.hpp"
#include "lsa_policy.cuh"
#include "symmcomm/formats/e2m1.hpp"
#include "symmcomm/formats/fp8.hpp"

namespace symmcomm::detail::lsa {

// ---- one-shot quantized reduce-scatter (pull) -----------------------------------------------

// The two fp16 halves of `bits` (low first) as floats: the register itself as the f16x2
// operand (building a __half2 from two 16-bit halves costs a shift and a permute per pair).
__device__ __forceinline__ float2 half2_bits_to_float2(std::uint32_t bits) {
  float2 f;
  asm("{.reg .f16 lo, hi;\n\tmov.b32 {lo, hi}, %2;\n\tcvt.f32.f16 %0, lo;\n\tcvt.f32.f16 %1, hi;}"
      : "=f"(f.x), "=f"(f.y)
      : "r"(bits));
  return f;
}

// kBytes of one peer's shard at item i, as loaded: NVFP4 = 2 * kBytes elements in kBytes / 8
// blocks, with their kBytes / 8 scale codes in one load; FP8 = kBytes elements.
template <bool kNvfp4, int kBytes>
struct RawItem {
  std::uint32_t w[kBytes / 4];
  std::uint16_t scales;  // NVFP4: block scale codes, first in the low byte
};

template <bool kNvfp4, int kBytes>
__device__ __forceinline__ RawItem<kNvfp4, kBytes> load_item(const std::uint8_t* data,
                                                             const std::uint8_t* scales,
                                                             std::size_t i) {
  // Plain loads: streaming ones are no faster (docs/design-notes.md, "Launch shapes").
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
  if constexpr (kNvfp4 && kBytes == 16) {
    // 16-byte NVFP4 items: only the launch-shape benchmark instantiates them (the library runs
    // 8-byte items, see ReduceShape); its block scales are cudaMalloc'd, hence 2-aligned.
    r.scales = reinterpret_cast<const std::uint16_t*>(scales)[i];
  } else if constexpr (kNvfp4) {
    r.scales = scales[i];
  }
  return r;
}

// The item's block scale codes as floats (hardware e4m3x2 -> f16x2 where present; exact).
template <int kBlocks>
__device__ __forceinline__ void block_scales(std::uint16_t codes, float (&out)[kBlocks]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  __half2_raw const h = __nv_cvt_fp8x2_to_halfraw2(codes, __NV_E4M3);
  float2 const f = __half22float2(*reinterpret_cast<const __half2*>(&h));
  out[0] = f.x;
  if constexpr (kBlocks == 2) out[1] = f.y;
#else
#pragma unroll
  for (int b = 0; b < kBlocks; ++b)
    out[b] = decode_e4m3(static_cast<std::uint8_t>(codes >> (8 * b)));
#endif
}

// acc[0..7] += the eight e2m1 codes of `w` (code k in bits 4k..4k+3) times `m`, the block's
// scale times the caller's multiplier. One word's arithmetic, shared by accumulate() and the
// push reduce-scatter's half-block receive, so both give the same bits. Every step is an explicit
// fused multiply-add: left to the compiler, `acc += v * m` is fused only where the product and
// the sum land in one basic block, which a caller's branches decide (two callers with different
// control flow then round differently).
__device__ __forceinline__ void accumulate_e2m1x8(std::uint32_t w, float m, float* acc) {
  std::uint32_t pairs[4];
  e2m1x8_to_half2_bits(w, pairs);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    float2 const v = half2_bits_to_float2(pairs[j]);
    acc[j] = __fmaf_rn(v.x, m, acc[j]);
    acc[j + 4] = __fmaf_rn(v.y, m, acc[j + 4]);
  }
}

// acc += decode(item) * scales. Same arithmetic, in the same order, for every caller (the
// one-shot reduce-scatter and the fallback's local reduction share this kernel), so results
// are bit-identical between paths.
template <bool kNvfp4, int kBytes>
__device__ __forceinline__ void accumulate(const RawItem<kNvfp4, kBytes>& r, float mult,
                                           Fp8Format format,
                                           float (&acc)[kNvfp4 ? 2 * kBytes : kBytes]) {
  if constexpr (kNvfp4) {
    constexpr int kBlocks = kBytes / 8;
    float scale[kBlocks];
    block_scales<kBlocks>(r.scales, scale);
#pragma unroll
    for (int b = 0; b < kBlocks; ++b) {
      // The decoded halves are values times 2^-14; `mult` (2^14 / global scale, see
      // reduce_body) carries the 2^14 back.
      float const m = scale[b] * mult;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        int const w = 2 * b + h;  // codes 8w..8w+7
        accumulate_e2m1x8(r.w[w], m, acc + 8 * w);
      }
    }
  } else {
#pragma unroll
    for (int k = 0; k < kBytes / 4; ++k) {
      float2 const lo = decode_fp8x2(static_cast<std::uint16_t>(r.w[k]), format);
      float2 const hi = decode_fp8x2(static_cast<std::uint16_t>(r.w[k] >> 16), format);
      acc[4 * k] = __fmaf_rn(lo.x, mult, acc[4 * k]);  // fused: see accumulate_e2m1x8
      acc[4 * k + 1] = __fmaf_rn(lo.y, mult, acc[4 * k + 1]);
      acc[4 * k + 2] = __fmaf_rn(hi.x, mult, acc[4 * k + 2]);
      acc[4 * k + 3] = __fmaf_rn(hi.y, mult, acc[4 * k + 3]);
    }
  }
}

// Peers whose loads one thread keeps in flight before accumulating them (in rank order).
constexpr int kPeerBatch = 4;

// The reduction itself, for any launch shape (the kernel below; experiments with others).
// kPeers > 0: the peer count, fixed when compiling (peers.size() must equal it; a CTA traps
// otherwise), so the peer loop unrolls whole and its bounds checks vanish; 0: peers.size().
// Either way peers are accumulated one at a time in rank order, so results do not depend on
// kBatch or kPeers.
template <class P, class Out, bool kNvfp4, int kBytes, int kBatch = kPeerBatch, int kPeers = 0>
__device__ __forceinline__ void reduce_body(const P& peers, const ReduceArgs& a) {
  constexpr int kElems = kNvfp4 ? 2 * kBytes : kBytes;
  constexpr int kPeerRounds = kPeers > 0 ? (kPeers + kBatch - 1) / kBatch : 1;
  __shared__ const std::uint8_t* data[kMaxRanks];
  __shared__ const std::uint8_t* scales[kMaxRanks];
  __shared__ float mult[kMaxRanks];
  if (kPeers > 0 && peers.size() != kPeers) __trap();
  int const n = kPeers > 0 ? kPeers : peers.size();
  if (!peers.barrier()) return;
  for (int p = static_cast<int>(threadIdx.x); p < n; p += static_cast<int>(blockDim.x)) {
    data[p] = reinterpret_cast<const std::uint8_t*>(peers.ptr(a.data, p));
    scales[p] =
        kNvfp4 ? reinterpret_cast<const std::uint8_t*>(peers.ptr(a.block_scales, p)) : nullptr;
    float const s = *reinterpret_cast<const float*>(peers.ptr(a.scale, p));
    // NVFP4: 2^14 / s, the 2^14 undoing the decoder's scaling (exact: a power of two, and a
    // global scale below 2^-100 is no real scale).
    mult[p] = kNvfp4 ? 16384.0f / s : s;
  }
  __syncthreads();
  Out* out = static_cast<Out*>(a.out);
  std::size_t const items = a.count / kElems;
  for (std::size_t i = global_thread(); i < items; i += grid_threads()) {
    float acc[kElems] = {};
#pragma unroll kPeerRounds
    for (int p0 = 0; p0 < n; p0 += kBatch) {
      RawItem<kNvfp4, kBytes> raw[kBatch];
#pragma unroll
      for (int k = 0; k < kBatch; ++k) {
        if (p0 + k < n) raw[k] = load_item<kNvfp4, kBytes>(data[p0 + k], scales[p0 + k], i);
      }
#pragma unroll
      for (int k = 0; k < kBatch; ++k) {
        if (p0 + k < n)
          accumulate<kNvfp4, kBytes>(raw[k], mult[p0 + k], fp8_format_of(a.type), acc);
      }
    }
    store_floats<kElems>(out, i * kElems, acc);
  }
  if (!peers.barrier()) return;
}

// Launch shape (measurements: docs/design-notes.md, "Launch shapes"). NVFP4 decoding is
// instruction-heavy: 8-byte items in three resident 512-thread CTAs per SM, 2 peers' loads in
// flight, a grid of exactly those CTAs. FP8 is memory-bound: 16-byte items, one CTA per SM's
// worth of registers, 4 peers in flight. NVFP4 with exactly 8 peers compiles the peer loop for
// 8 (unrolled, 4 peers in flight); under the LSA policy (P::kHeavyBarrier) it keeps 2 in
// flight, since NCCL's barrier takes the registers 4 would need.
template <bool kNvfp4, int kPeers = 0, bool kHeavyBarrier = false>
struct ReduceShape {
  static constexpr int kMinCtasPerSm = kNvfp4 ? 3 : 1;
  static constexpr int kBatch = kNvfp4 ? (kPeers > 0 && !kHeavyBarrier ? 4 : 2) : kPeerBatch;
};

// NVFP4 peer counts with a kernel of their own (the others run the run-time peer loop).
inline constexpr int kUnrolledNvfp4Peers = 8;

template <class P, class Out, bool kNvfp4, int kBytes, int kPeers = 0>
__global__ void __launch_bounds__(kThreads,
                                  ReduceShape<kNvfp4, kPeers, P::kHeavyBarrier>::kMinCtasPerSm)
    reduce_kernel(const __grid_constant__ P peers, const __grid_constant__ ReduceArgs a) {
  programmatic_wait(peers);
  reduce_body<P, Out, kNvfp4, kBytes, ReduceShape<kNvfp4, kPeers, P::kHeavyBarrier>::kBatch,
              kPeers>(peers, a);
  programmatic_release(peers);
}

// CTAs of the reduce grid per SM (CTA i meets CTA i on every peer: grid_cap keeps it the same
// on every rank): three for NVFP4, two for FP8.
inline int reduce_ctas_per_sm(bool nvfp4) {
  return nvfp4 ? kNvfp4ReduceCtasPerSm : kCtasPerSm;
}
}  // namespace symmcomm::detail::lsa
