#pragma once
// Private: the LSA kernels of lsa.hpp (push all-gather, one-shot quantized reduce, fused
// quantize + all-gather, all-gather with device counts) and their launch bodies, templates over
// the peer description: lsa.cu instantiates them for production Peers (NCCL windows), the testing
// library for its LoopbackPeers (src/testing/src/lsa_loopback.cu), so the shipped libraries
// carry no loopback kernels while both run one piece of code. A description comes with
// check_peers, check_ref, address_bits, grid_cap and with_policy, found by argument-dependent
// lookup (lsa_launch.cuh for Peers).

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "formats/codecs_internal.hpp"
#include "formats/device_codecs.cuh"
#include "formats/quantize_block.cuh"
#include "lsa.hpp"
#include "lsa_counts.cuh"
#include "lsa_gather.cuh"
#include "lsa_launch.cuh"
#include "lsa_policy.cuh"
#include "lsa_reduce.cuh"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/nvfp4.hpp"

namespace symmcomm::detail::lsa {

// ---- all-gather (push) ----------------------------------------------------------------------

// Launch shape: four loads in flight per thread, evict-first stores of what peers read (chosen
// by measurement: docs/design-notes.md, "Launch shapes").
inline constexpr int kGatherUnroll = 4;
inline constexpr bool kStreamingStores = true;

// One segment of a gather to every peer with its `width`-byte stores (GatherSegment); `dst` is
// the CTA's shared table of peer pointers.
template <class P>
__device__ __forceinline__ void gather_segment(const P& peers, const GatherSegment& seg, char** dst,
                                               int me, int n) {
  int const width = seg.width;
  __syncthreads();  // the previous segment's table is no longer read
  for (int p = static_cast<int>(threadIdx.x); p < n; p += static_cast<int>(blockDim.x)) {
    dst[p] = peers.ptr(seg.dst, p);
  }
  __syncthreads();
  if (seg.scale_cols > 0) {
    if (width == 16) {
      swizzle_scales_to_peers<kStreamingStores, true>(seg, dst, me, n);
    } else {
      swizzle_scales_to_peers<kStreamingStores, false>(seg, dst, me, n);
    }
    return;
  }
  std::size_t const units = seg.bytes / static_cast<std::size_t>(width);
  switch (width) {
    case 16:
      copy_to_peers<uint4, kGatherUnroll, kStreamingStores>(seg.src, dst, units, me, n);
      break;
    case 8:
      copy_to_peers<uint2, kGatherUnroll, kStreamingStores>(seg.src, dst, units, me, n);
      break;
    case 4:
      copy_to_peers<std::uint32_t, kGatherUnroll, kStreamingStores>(seg.src, dst, units, me, n);
      break;
    case 2:
      copy_to_peers<std::uint16_t, kGatherUnroll, kStreamingStores>(seg.src, dst, units, me, n);
      break;
    default:
      copy_to_peers<std::uint8_t, kGatherUnroll, kStreamingStores>(seg.src, dst, units, me, n);
      break;
  }
}

template <class P>
__global__ void __launch_bounds__(kThreads)
    gather_kernel(const __grid_constant__ P peers, const __grid_constant__ GatherArgs g) {
  programmatic_wait(peers);
  __shared__ char* dst[kMaxRanks];
  int const n = peers.size();
  int const me = peers.rank();
  if (!peers.barrier()) return;
  for (int s = 0; s < g.segments; ++s) gather_segment(peers, g.segment[s], dst, me, n);
  if (!peers.barrier()) return;
  programmatic_release(peers);
}

// ---- all-gather with counts on the device ---------------------------------------------------

// The widest vector (16, 8, 4, 2 or 1 bytes) that addresses and sizes with `bits` allow.
__host__ __device__ inline int widest_vector(std::uintptr_t bits) {
  int w = 16;
  while (w > 1 && bits % static_cast<std::uintptr_t>(w) != 0) w /= 2;
  return w;
}

// The widest store every peer's destination of `seg` (and its source and size) allows; for a
// swizzle segment, 16 (whole chunks) or 4 - as the host decides for a gather's segments.
template <class P>
__device__ __forceinline__ int segment_width(const P& peers, const GatherSegment& seg, int n) {
  std::uintptr_t bits = 0;
  for (int p = 0; p < n; ++p) bits |= reinterpret_cast<std::uintptr_t>(peers.ptr(seg.dst, p));
  if (seg.scale_cols > 0) return bits % 16 == 0 ? 16 : 4;
  return widest_vector(bits | reinterpret_cast<std::uintptr_t>(seg.src) | seg.bytes);
}

template <class P>
__global__ void __launch_bounds__(kThreads)
    device_counts_gather_kernel(const __grid_constant__ P peers,
                                const __grid_constant__ DeviceCountsGatherArgs a) {
  programmatic_wait(peers);
  __shared__ char* dst[kMaxRanks];
  __shared__ CountPrefix prefix;
  int const n = peers.size();
  int const me = peers.rank();
  if (!peers.barrier()) return;
  if (!exchange_counts(peers, a)) return;
  count_prefix(peers, a, prefix);
  __syncthreads();
  std::int32_t const first = prefix.first, mine = prefix.mine, total = prefix.total;
  for (int i = 0; i < a.parts; ++i) {
    const DeviceCountsGatherArgs::Part& part = a.part[i];
    GatherSegment seg;
    seg.src = part.src;
    seg.bytes = static_cast<std::size_t>(mine) * part.row_bytes;
    if (part.swizzled) {
      seg.dst = part.dst;
      seg.scale_cols = part.row_bytes;
      seg.first_row = static_cast<std::size_t>(first);
      if (me == n - 1) {
        seg.zero_from = static_cast<std::size_t>(total);
        seg.zero_to = round_up_to(static_cast<std::size_t>(n) * a.capacity, kScaleTileRows);
      }
    } else {
      seg.dst =
          SymRef{part.dst.slot, part.dst.offset + static_cast<std::size_t>(first) * part.row_bytes};
    }
    seg.width = segment_width(peers, seg, n);
    gather_segment(peers, seg, dst, me, n);
  }
  if (a.scale_src != nullptr && blockIdx.x == 0) {
    float const s = *a.scale_src;
    for (int p = static_cast<int>(threadIdx.x); p < n; p += static_cast<int>(blockDim.x)) {
      reinterpret_cast<float*>(peers.ptr(a.scale_dst, p))[me] = s;
    }
  }
  if (!peers.barrier()) return;
  programmatic_release(peers);
}

// ---- fused quantize + all-gather ------------------------------------------------------------

template <class P>
__global__ void __launch_bounds__(kThreads)
    quantize_gather_nvfp4_kernel(const __grid_constant__ P peers,
                                 const __grid_constant__ QuantizeGatherArgs a) {
  programmatic_wait(peers);
  quantize_gather_nvfp4_body<kStreamingStores>(peers, a);
  programmatic_release(peers);
}

template <class P>
__global__ void __launch_bounds__(kThreads)
    quantize_gather_fp8_kernel(const __grid_constant__ P peers,
                               const __grid_constant__ QuantizeGatherArgs a) {
  programmatic_wait(peers);
  __shared__ uint2* data_dst[kMaxRanks];
  int const n = peers.size();
  int const me = peers.rank();
  float const scale = *a.scale;
  float const inv_scale = 1.0f / scale;
  if (!peers.barrier()) return;
  for (int p = static_cast<int>(threadIdx.x); p < n; p += static_cast<int>(blockDim.x)) {
    data_dst[p] = reinterpret_cast<uint2*>(peers.ptr(a.data, p));
    if (blockIdx.x == 0) *reinterpret_cast<float*>(peers.ptr(a.scale_dst, p)) = scale;
  }
  __syncthreads();
  std::size_t const groups = a.count / 8;
  std::size_t const stride = grid_threads();
  for (std::size_t g0 = global_thread(); g0 < groups; g0 += stride * kQuantUnroll) {
    Vectors<bf16, 8> in[kQuantUnroll];
#pragma unroll
    for (int u = 0; u < kQuantUnroll; ++u) {
      if (g0 + u * stride < groups) load(a.src, g0 + u * stride, in[u]);
    }
#pragma unroll
    for (int u = 0; u < kQuantUnroll; ++u) {
      std::size_t const g = g0 + u * stride;
      if (g >= groups) continue;
      float x[8];
      to_floats(in[u], x);
      std::uint32_t half[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        half[k] =
            encode_fp8x2(x[2 * k] * inv_scale, x[2 * k + 1] * inv_scale, fp8_format_of(a.type));
      }
      uint2 const codes = make_uint2(half[0] | (half[1] << 16), half[2] | (half[3] << 16));
      for (int j = 0; j < n; ++j)
        store_vector<kStreamingStores>(data_dst[rotated(me, j, n)] + g, codes);
    }
  }
  if (!peers.barrier()) return;
  programmatic_release(peers);
}

// ---- launch bodies --------------------------------------------------------------------------

// NVFP4 always runs 8-byte items (see ReduceShape), in a kernel of their own for
// kUnrolledNvfp4Peers peers; FP8 16-byte ones where `wide`. `peers`: the policy's size().
template <class P, class Out>
void launch_reduce_kernel(const P& p, int peers, const ReduceArgs& a, bool wide, unsigned grid,
                          LaunchShare share, cudaStream_t s) {
  auto const go = [&](auto kernel) { launch_resident(kernel, share, grid, s, p, a); };
  if (a.nvfp4() && peers == kUnrolledNvfp4Peers) {
    go(reduce_kernel<P, Out, true, 8, kUnrolledNvfp4Peers>);
  } else if (a.nvfp4()) {
    go(reduce_kernel<P, Out, true, 8>);
  } else if (wide) {
    go(reduce_kernel<P, Out, false, 16>);
  } else {
    go(reduce_kernel<P, Out, false, 8>);
  }
}

template <class Desc>
void launch_gather(const Desc& peers, const GatherArgs& args, cudaStream_t stream) {
  SYMMCOMM_EXPECTS(args.segments >= 1 && args.segments <= kSlots,
                   "lsa gather: " << args.segments << " segments, outside 1.." << kSlots);
  GatherArgs g = args;
  for (int s = 0; s < args.segments; ++s) {
    GatherSegment& seg = g.segment[s];
    check_ref(peers, seg.dst, "gather destination");
    SYMMCOMM_EXPECTS(seg.bytes == 0 || seg.src != nullptr,
                     "lsa gather: segment " << s << " source is null");
    if (seg.scale_cols > 0) {
      SYMMCOMM_EXPECTS(seg.bytes % seg.scale_cols == 0 && seg.zero_from <= seg.zero_to,
                       "lsa gather: swizzle segment " << s << " of " << seg.bytes
                                                      << " bytes is not whole rows of "
                                                      << seg.scale_cols << " scales");
      SYMMCOMM_EXPECTS(
          address_bits(peers, seg.dst) % 4 == 0,
          "lsa gather: swizzled scales at offset " << seg.dst.offset << " are not 4-byte aligned");
      seg.width = address_bits(peers, seg.dst) % 16 == 0 ? 16 : 4;  // whole chunks as one store
      continue;
    }
    seg.width = widest_vector(address_bits(peers, seg.dst) |
                              reinterpret_cast<std::uintptr_t>(seg.src) | seg.bytes);
  }
  unsigned const grid = grid_for_units(args.grid_bytes / 64, grid_cap(peers, kCtasPerSm));
  with_policy(peers, [&](const auto& p) {
    auto* kernel = gather_kernel<std::decay_t<decltype(p)>>;
    launch_resident(kernel, peers.share, grid, stream, p, g);
  });
}

template <class Desc>
void launch_reduce(const Desc& peers, const ReduceArgs& a, cudaStream_t stream) {
  SYMMCOMM_EXPECTS(a.count % 16 == 0,
                   "lsa reduce: count " << a.count << " is not a multiple of 16");
  SYMMCOMM_EXPECTS(a.out != nullptr || a.count == 0, "lsa reduce: out is null");
  SYMMCOMM_EXPECTS(reinterpret_cast<std::uintptr_t>(a.out) % 16 == 0,
                   "lsa reduce: out " << a.out << " is not 16-byte aligned");
  check_ref(peers, a.data, "send.data");
  check_ref(peers, a.scale, "send scale");
  if (a.nvfp4()) check_ref(peers, a.block_scales, "send.block_scales");
  std::uintptr_t const bits = address_bits(peers, a.data);
  std::size_t const bytes = a.nvfp4() ? a.count / 2 : a.count;
  // FP8: 16-byte loads when every peer's shard is 16-byte aligned and whole items fit; else 8.
  bool const wide = bits % 16 == 0 && bytes % 16 == 0;
  SYMMCOMM_EXPECTS(bits % 8 == 0, "lsa reduce: send.data shard at offset "
                                      << a.data.offset << " is not 8-byte aligned");
  unsigned const grid =
      grid_for_units(a.grid_count / 16, grid_cap(peers, reduce_ctas_per_sm(a.nvfp4())));
  with_policy(peers, [&](const auto& p) {
    if (a.out_fp32) {
      launch_reduce_kernel<std::decay_t<decltype(p)>, float>(p, peers.size, a, wide, grid,
                                                             peers.share, stream);
    } else {
      launch_reduce_kernel<std::decay_t<decltype(p)>, bf16>(p, peers.size, a, wide, grid,
                                                            peers.share, stream);
    }
    SYMMCOMM_CHECK_LAUNCH();
  });
}

// scale_into: see lsa.hpp (quantize_gather).
template <class Desc>
void launch_quantize_gather(const Desc& peers, const QuantizeGatherArgs& a, cudaStream_t stream,
                            float* scale_into = nullptr) {
  SYMMCOMM_EXPECTS(a.count % 16 == 0,
                   "lsa quantize_gather: count " << a.count << " is not a multiple of 16");
  SYMMCOMM_EXPECTS(a.src != nullptr || a.count == 0, "lsa quantize_gather: input is null");
  SYMMCOMM_EXPECTS(reinterpret_cast<std::uintptr_t>(a.src) % 16 == 0,
                   "lsa quantize_gather: input " << static_cast<const void*>(a.src)
                                                 << " is not 16-byte aligned");
  SYMMCOMM_EXPECTS(a.scale != nullptr && (scale_into == nullptr || a.scale == scale_into),
                   "lsa quantize_gather: scale is null or not the slot it is computed into");
  check_ref(peers, a.data, "recv.data");
  check_ref(peers, a.scale_dst, "recv scale");
  if (a.nvfp4()) check_ref(peers, a.block_scales, "recv.block_scales");
  SYMMCOMM_EXPECTS(address_bits(peers, a.data) % 8 == 0, "lsa quantize_gather: recv.data at offset "
                                                             << a.data.offset
                                                             << " is not 8-byte aligned");
  SYMMCOMM_EXPECTS(address_bits(peers, a.scale_dst) % 4 == 0,
                   "lsa quantize_gather: recv scale at offset " << a.scale_dst.offset
                                                                << " is not 4-byte aligned");
  SYMMCOMM_EXPECTS(a.scale_cols == 0 || (a.nvfp4() && a.count % (a.scale_cols * 16) == 0 &&
                                         a.zero_from <= a.zero_to),
                   "lsa quantize_gather: " << a.count << " elements are not whole rows of "
                                           << a.scale_cols << " NVFP4 blocks");
  if (scale_into != nullptr) scale_from_amax(a.src, a.count, scale_into, a.type, stream);
  unsigned const grid = grid_for_units(a.grid_count / 16, grid_cap(peers, kCtasPerSm));
  with_policy(peers, [&](const auto& p) {
    using P = std::decay_t<decltype(p)>;
    auto* kernel = a.nvfp4() ? quantize_gather_nvfp4_kernel<P> : quantize_gather_fp8_kernel<P>;
    launch_resident(kernel, peers.share, grid, stream, p, a);
  });
}

template <class Desc>
void launch_device_counts_gather(const Desc& peers, const DeviceCountsGatherArgs& a,
                                 cudaStream_t stream) {
  SYMMCOMM_EXPECTS(a.parts >= 1 && a.parts <= DeviceCountsGatherArgs::kMaxParts,
                   "lsa device-count gather: " << a.parts << " parts, outside 1.."
                                               << DeviceCountsGatherArgs::kMaxParts);
  check_device_counts(peers, a, "lsa device-count gather");
  for (int i = 0; i < a.parts; ++i) {
    const DeviceCountsGatherArgs::Part& part = a.part[i];
    check_ref(peers, part.dst, "device-count gather part");
    SYMMCOMM_EXPECTS(part.row_bytes > 0 && (a.capacity == 0 || part.src != nullptr),
                     "lsa device-count gather: part " << i << " has no rows or no source");
    SYMMCOMM_EXPECTS(!part.swizzled || address_bits(peers, part.dst) % 4 == 0,
                     "lsa device-count gather: swizzled scales at offset "
                         << part.dst.offset << " are not 4-byte aligned");
  }
  if (a.scale_src != nullptr) {
    check_ref(peers, a.scale_dst, "recv scale");
    SYMMCOMM_EXPECTS(address_bits(peers, a.scale_dst) % 4 == 0,
                     "lsa device-count gather: recv scale at offset " << a.scale_dst.offset
                                                                      << " is not 4-byte aligned");
  }
  unsigned const grid = grid_for_units(a.grid_bytes / 64, grid_cap(peers, kCtasPerSm));
  with_policy(peers, [&](const auto& p) {
    auto* kernel = device_counts_gather_kernel<std::decay_t<decltype(p)>>;
    launch_resident(kernel, peers.share, grid, stream, p, a);
  });
}

}  // namespace symmcomm::detail::lsa
