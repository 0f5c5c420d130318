#pragma once
// Private: the push all-gather's inner loop and the fused bf16 -> NVFP4 quantize + all-gather
// (lsa.cu), in a header so that bench/micro/gather_shapes_bench.cu measures the library's code
// under other launch shapes.

#include <cstddef>

#include "formats/quantize_block.cuh"
#include "kernels/scale_swizzle.hpp"
#include "lsa_policy.cuh"
#include "symmcomm/formats/nvfp4.hpp"
#include "symmcomm/formats/scale_layout.hpp"

namespace symmcomm::detail::lsa {

// Stores one vector; `kStreaming` marks it evict-first (st.global.cs): the kernel never reads
// what it writes, and peers read it only after the closing barrier.
template <bool kStreaming, class V>
__device__ __forceinline__ void store_vector(V* p, const V& v) {
  if constexpr (kStreaming) {
    __stcs(p, v);
  } else {
    *p = v;
  }
}

// Loads kUnroll vectors of V (grid-stride) from `src` and stores each to every peer's `dst`,
// peers visited from this rank on.
template <class V, int kUnroll, bool kStreaming>
__device__ __forceinline__ void copy_to_peers(const void* src, char* const* dst, std::size_t units,
                                              int me, int n) {
  const V* in = static_cast<const V*>(src);
  std::size_t const stride = grid_threads();
  for (std::size_t i0 = global_thread(); i0 < units; i0 += stride * kUnroll) {
    V v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (i0 + u * stride < units) v[u] = in[i0 + u * stride];
    }
    for (int j = 0; j < n; ++j) {
      V* out = reinterpret_cast<V*>(dst[rotated(me, j, n)]);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (i0 + u * stride < units) store_vector<kStreaming>(out + i0 + u * stride, v[u]);
      }
    }
  }
}

// This rank's linear NVFP4 block scales into every peer's swizzled scale matrix (a swizzle
// segment, see GatherSegment), one 16-byte chunk of the layout per thread (swizzle_chunk): a
// warp stores whole 512-byte tiles. Chunks whose 4 rows are all this rank's are one 16-byte
// store when `kWide` (the matrix is 16-byte aligned); chunks shared with other ranks' rows
// store only this rank's 4-byte words. Padding columns and padding rows are written as 0.
template <bool kStreaming, bool kWide>
__device__ __forceinline__ void swizzle_scales_to_peers(const GatherSegment& seg, char* const* dst,
                                                        int me, int n) {
  auto const* src = static_cast<const std::uint8_t*>(seg.src);
  std::size_t const cols = seg.scale_cols;
  SwizzleRows const rows{seg.first_row, seg.bytes / cols, seg.zero_from, seg.zero_to};
  SwizzleSpan const span = swizzle_segment_span(cols, rows);
  bool const word_loads = cols % 4 == 0 && reinterpret_cast<std::uintptr_t>(src) % 4 == 0;
  std::size_t const stride = grid_threads();
  for (std::size_t u = global_thread(); u < span.units; u += stride) {
    SwizzleChunk const c = swizzle_chunk(u, cols, span.first_tile);
    std::uint32_t word[4] = {0, 0, 0, 0};
    unsigned mine = 0;  // bit k: row k of the chunk is written by this rank
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      std::size_t const row = c.row0 + static_cast<std::size_t>(32 * k);
      ChunkRow const kind = chunk_row(rows, row);
      if (kind == ChunkRow::Other) continue;
      mine |= 1u << k;
      if (kind == ChunkRow::Zero) continue;
      word[k] = scale_word(src + (row - rows.first_row) * cols, c.col0, cols, word_loads);
    }
    if (mine == 0) continue;
    for (int j = 0; j < n; ++j) {
      char* out = dst[rotated(me, j, n)] + c.offset;
      if (kWide && mine == 0xFu) {
        store_vector<kStreaming>(reinterpret_cast<uint4*>(out),
                                 make_uint4(word[0], word[1], word[2], word[3]));
        continue;
      }
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        if (mine & (1u << k)) {
          store_vector<kStreaming>(reinterpret_cast<std::uint32_t*>(out) + k, word[k]);
        }
      }
    }
  }
}

// Input vectors in flight per thread in the fused quantize + gather kernels (NVFP4 below, FP8
// in lsa.cu), as in the codec kernels.
constexpr int kQuantUnroll = 2;

// Fused bf16 -> NVFP4 quantize + all-gather, one rank's part: every 16-element block is
// quantized once and its 8 data bytes and scale byte stored to every peer; two blocks a grid
// stride apart in flight per thread, as in the codec kernel. (Measured, not kept: a thread
// taking two adjacent blocks to store 16 + 2 bytes per peer; see gather_shapes_bench.cu.)
template <bool kStreaming, class P>
__device__ __forceinline__ void quantize_gather_nvfp4_body(const P& peers,
                                                           const QuantizeGatherArgs& a) {
  __shared__ float quant_table[256];
  __shared__ uint2* data_dst[kMaxRanks];
  __shared__ std::uint8_t* scale_dst[kMaxRanks];
  int const n = peers.size();
  int const me = peers.rank();
  float const global_scale = *a.scale;
  float const scale_factor = nvfp4_scale_factor(global_scale);
  fill_quant_table(quant_table, global_scale);
  if (!peers.barrier()) return;
  for (int p = static_cast<int>(threadIdx.x); p < n; p += static_cast<int>(blockDim.x)) {
    data_dst[p] = reinterpret_cast<uint2*>(peers.ptr(a.data, p));
    scale_dst[p] = reinterpret_cast<std::uint8_t*>(peers.ptr(a.block_scales, p));
    if (blockIdx.x == 0) *reinterpret_cast<float*>(peers.ptr(a.scale_dst, p)) = global_scale;
  }
  __syncthreads();
  std::size_t const blocks = a.count / kNvfp4BlockSize;
  std::size_t const stride = grid_threads();
  std::size_t const cols = a.scale_cols;  // 0: linear scales
  for (std::size_t b0 = global_thread(); b0 < blocks; b0 += stride * kQuantUnroll) {
    Vectors<bf16, 16> in[kQuantUnroll];
#pragma unroll
    for (int u = 0; u < kQuantUnroll; ++u) {
      if (b0 + u * stride < blocks) load(a.src, b0 + u * stride, in[u]);
    }
#pragma unroll
    for (int u = 0; u < kQuantUnroll; ++u) {
      std::size_t const b = b0 + u * stride;
      if (b >= blocks) continue;
      uint2 packed;
      std::uint8_t scale;
      quantize_one_block(in[u], scale_factor, quant_table, packed, scale);
      std::size_t const at =
          cols == 0 ? b : swizzled_scale_offset(a.first_row + b / cols, b % cols, cols);
      for (int j = 0; j < n; ++j) {
        int const p = rotated(me, j, n);
        store_vector<kStreaming>(data_dst[p] + b, packed);
        store_vector<kStreaming>(scale_dst[p] + at, scale);
      }
    }
  }
  if (cols > 0) {
    // Swizzled: zero this rank's rows' padding columns and its padding rows (see
    // QuantizeGatherArgs), so every byte of the matrix is written by exactly one rank.
    std::size_t const rows = blocks / cols;
    std::size_t const units = swizzle_padding_units(cols, rows, a.zero_to - a.zero_from);
    for (std::size_t v = global_thread(); v < units; v += stride) {
      ScalePosition const pos = swizzle_padding_position(v, cols, rows, a.first_row, a.zero_from);
      std::size_t const at = swizzled_scale_offset(pos.row, pos.col, cols);
      for (int j = 0; j < n; ++j) {
        store_vector<kStreaming>(scale_dst[rotated(me, j, n)] + at, std::uint8_t{0});
      }
    }
  }
  if (!peers.barrier()) return;
}

}  // namespace symmcomm::detail::lsa
