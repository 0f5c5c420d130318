#pragma once
// Private: the MoE dispatch and combine kernels of moe.hpp and their launch bodies, templates
// over the peer description as in lsa_launchers.cuh: moe.cu instantiates them for production
// Peers, the testing library for LoopbackPeers.

#include <cuda_bf16.h>

#include <cstdint>
#include <type_traits>

#include "formats/device_codecs.cuh"
#include "formats/quantize_block.cuh"
#include "lsa_launch.cuh"
#include "lsa_policy.cuh"
#include "moe.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm::detail::lsa {

// ---- counts: the count exchange and the placement --------------------------------------------

// This rank's tokens (num_tokens clamped to 0..max_tokens; the error bit where it was outside).
__device__ __forceinline__ int moe_tokens(const MoeCountsArgs& a, std::int32_t& error) {
  int const n = *a.num_tokens;
  if (n < 0 || n > a.shape.max_tokens) {
    error |= kMoeErrorNumTokens;
    return n < 0 ? 0 : a.shape.max_tokens;
  }
  return n;
}

// The combine's arithmetic, one 16-byte group of 8 bf16 at a time: `acc` += w x v in fp32, and
// the sum rounded once to bf16.
__device__ __forceinline__ void add_weighted_bf16x8(float (&acc)[8], float w, uint4 v) {
  const auto* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    float2 const f = __bfloat1622float2(h[k]);
    acc[2 * k] += w * f.x;
    acc[2 * k + 1] += w * f.y;
  }
}

__device__ __forceinline__ uint4 packed_bf16x8(const float (&acc)[8]) {
  uint4 packed;
  auto* h = reinterpret_cast<__nv_bfloat162*>(&packed);
#pragma unroll
  for (int k = 0; k < 4; ++k) h[k] = __floats2bfloat162_rn(acc[2 * k], acc[2 * k + 1]);
  return packed;
}

// The shared memory of the counts launch: per expert the pair count, then the next row.
struct MoeCountsShared {
  std::int32_t run[kMaxMoeExperts];
  std::int32_t error, overflow;
};

// Phase 1: this rank's per-expert counts, error bits and global scale into every peer's table
// (`table`: this dispatch's of the two), and the weights kept for the combine; false when
// aborted. No barrier before: a peer still reading its table of the previous dispatch reads the
// other one, and the one written now was last read two dispatches ago, before this rank passed
// the previous dispatch's barrier.
template <class P>
__device__ bool moe_exchange_counts(const P& peers, const MoeCountsArgs& a, std::size_t table_at,
                                    int n, std::int32_t my_error, MoeCountsShared& sh) {
  const MoeShape& s = a.shape;
  int const me = peers.rank(), n_ranks = peers.size();
  int const E = s.experts, words = s.table_words();
  int const tid = static_cast<int>(threadIdx.x), threads = static_cast<int>(blockDim.x);
  for (int e = tid; e < E; e += threads) sh.run[e] = 0;
  __syncthreads();
  for (int p = tid; p < n * s.top_k; p += threads) {
    int const e = a.topk_idx[p];
    if (e < -1 || e >= E) {
      my_error |= kMoeErrorExpertId;
    } else if (e >= 0) {
      atomicAdd(&sh.run[e], 1);
    }
  }
  if (my_error != 0) atomicOr(&sh.error, my_error);
  __syncthreads();
  std::int32_t const scale_bits = a.global_scale != nullptr ? __float_as_int(*a.global_scale) : 0;
  for (int i = tid; i < n_ranks * words; i += threads) {
    int const peer = rotated(me, i / words, n_ranks), w = i % words;
    auto* table = reinterpret_cast<std::int32_t*>(
        peers.ptr(SymRef{0, table_at + static_cast<std::size_t>(me) * words * 4}, peer));
    table[w] = w < E ? sh.run[w] : (w == E ? sh.error : scale_bits);
  }
  for (int p = tid; p < n * s.top_k; p += threads) a.weights[p] = a.topk_weights[p];
  // Every rank's counts in every table - and every rank past its previous dispatch's launches
  // and whatever its stream ran before this one (its expert GEMM, its combine), so the rows
  // written after this barrier overwrite nothing a peer still reads.
  return peers.barrier();
}

// Phase 2, from the whole table: this rank's experts' counts, overflow, error word and group
// scale, and each expert's first row for this rank's pairs (the lower ranks' counts).
template <class P>
__device__ void moe_tally(const P& peers, const MoeCountsArgs& a, std::size_t table_at,
                          MoeCountsShared& sh) {
  const MoeShape& s = a.shape;
  int const me = peers.rank(), n_ranks = peers.size();
  int const E = s.experts, words = s.table_words(), L = s.local_experts();
  int const tid = static_cast<int>(threadIdx.x), threads = static_cast<int>(blockDim.x);
  const auto* table = reinterpret_cast<const std::int32_t*>(peers.ptr(SymRef{0, table_at}, me));
  for (int e = tid; e < E; e += threads) {
    std::int32_t base = 0;  // rows the lower ranks' pairs take on expert e
    for (int r = 0; r < me; ++r) base += table[r * words + e];
    sh.run[e] = base;
  }
  for (int l = tid; l < L; l += threads) {
    std::int32_t total = 0;
    for (int r = 0; r < n_ranks; ++r) total += table[r * words + me * L + l];
    a.expert_count[l] = total < s.capacity ? total : s.capacity;
    if (total > s.capacity) atomicAdd(&sh.overflow, total - s.capacity);
  }
  if (tid == 0) {
    std::int32_t bits = 0;
    std::int32_t const scale0 = table[E + 1];
    for (int r = 0; r < n_ranks; ++r) {
      bits |= table[r * words + E];
      if (table[r * words + E + 1] != scale0) bits |= kMoeErrorGlobalScale;
    }
    *a.error = bits;
    *a.group_scale = __int_as_float(scale0);
  }
}

// Phase 2, warp 0: each of this rank's pairs' row on its expert, in (token, slot) order, 32
// pairs at a time: lanes naming the same expert take consecutive rows in lane order, then the
// lowest of them advances the expert's next row. Rows past capacity, and pairs of no expert,
// get -1.
__device__ __forceinline__ void moe_place_pairs(const MoeCountsArgs& a, int n,
                                                MoeCountsShared& sh) {
  const MoeShape& s = a.shape;
  int const E = s.experts;
  int const lane = static_cast<int>(threadIdx.x);
  unsigned const below = (1u << lane) - 1u;
  int const pairs = n * s.top_k;  // the tokens placed only: their pairs' rows
  for (int p0 = 0; p0 < pairs; p0 += 32) {
    int const p = p0 + lane;
    int e = -1;
    if (p < pairs) e = a.topk_idx[p];
    bool const valid = e >= 0 && e < E;
    unsigned const group = __match_any_sync(0xffffffffu, valid ? e : E + lane);
    int const row = valid ? sh.run[e] + __popc(group & below) : -1;
    __syncwarp();
    if (valid && (group & below) == 0) sh.run[e] += __popc(group);
    __syncwarp();
    bool const placed = row >= 0 && row < s.capacity;
    if (p < pairs) {
      a.pair_row[p] = placed ? row : -1;
      a.pair_expert[p] = placed ? e : -1;
    }
  }
}

template <class P>
__global__ void __launch_bounds__(kThreads)
    moe_counts_kernel(const __grid_constant__ P peers, const __grid_constant__ MoeCountsArgs a) {
  programmatic_wait(peers);
  __shared__ MoeCountsShared sh;
  if (threadIdx.x == 0) {
    sh.error = 0;
    sh.overflow = 0;
  }
  __syncthreads();
  std::int32_t my_error = 0;
  int const n = moe_tokens(a, my_error);
  // This dispatch's table of the two: they alternate (the epoch counts this rank's dispatches,
  // the same sequence on every rank).
  std::size_t const table_at = a.table + static_cast<std::size_t>(*a.epoch & 1) *
                                             static_cast<std::size_t>(a.shape.ranks) *
                                             a.shape.table_words() * 4;
  if (a.phase != 2) {
    if (!moe_exchange_counts(peers, a, table_at, n, my_error, sh)) return;
    if (a.phase == 1) return;
  }
  __syncthreads();
  moe_tally(peers, a, table_at, sh);
  __syncthreads();
  if (threadIdx.x < 32) moe_place_pairs(a, n, sh);
  if (threadIdx.x == 0) {  // every thread read the epoch before a __syncthreads above
    *a.overflow = sh.overflow;
    *a.tokens = n;
    *a.epoch += 1;
  }
  programmatic_release(peers);
}

// ---- rows: every placed pair's row, scales and origin into its expert's rank -----------------

__device__ __forceinline__ int global_warp() {
  return static_cast<int>(global_thread() / 32);
}
__device__ __forceinline__ int grid_warps() {
  return static_cast<int>(grid_threads() / 32);
}

// A warp's copy of `units` 16-byte units, lane k taking units k, k + 32, ...: kUnroll loads
// issued before their stores, as the gather kernels do (the compiler cannot move a load above a
// store that may alias it, so a plain loop keeps one load in flight per lane).
template <std::size_t kUnroll = 4>
__device__ __forceinline__ void warp_copy16(uint4* out, const uint4* in, std::size_t units) {
  std::size_t i = threadIdx.x % 32;
  for (; i + 32 * (kUnroll - 1) < units; i += 32 * kUnroll) {
    uint4 v[kUnroll];
#pragma unroll
    for (std::size_t u = 0; u < kUnroll; ++u) v[u] = in[i + 32 * u];
#pragma unroll
    for (std::size_t u = 0; u < kUnroll; ++u) out[i + 32 * u] = v[u];
  }
  for (; i < units; i += 32) out[i] = in[i];
}

// One 128-element block of BF16 quantized to e4m3 by the 32 lanes of a warp, 4 elements each
// (`v`: the lane's, elements 4 * lane.. of the block), as fp8_quantize_block does: the lane's 4
// codes (first in the low byte); returns the block's scale (every lane).
__device__ __forceinline__ float moe_fp8_block(uint2 v, std::uint32_t& codes) {
  float const x[4] = {bf16_lo(v.x), bf16_hi(v.x), bf16_lo(v.y), bf16_hi(v.y)};
  float amax = fmaxf(fmaxf(fabsf(x[0]), fabsf(x[1])), fmaxf(fabsf(x[2]), fabsf(x[3])));
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  float const scale = fp8_scale_from_amax(amax, Fp8Format::E4M3);
  float const inv = 1.0f / scale;
  codes = encode_fp8x2(x[0] * inv, x[1] * inv, Fp8Format::E4M3) |
          (encode_fp8x2(x[2] * inv, x[3] * inv, Fp8Format::E4M3) << 16);
  return scale;
}

// One pair's row, already in the wire's format, and its linear scales into its expert's rank
// (`out`, `scales`: that expert's rows and scales there), by the 32 lanes of a warp: the scales
// put at their places (MoeShape::scale_offset); a BF16 wire has none.
__device__ __forceinline__ void moe_copy_row_to_expert(const MoeRowsArgs& a, int t, int row,
                                                       uint4* out, char* scales) {
  const MoeShape& s = a.shape;
  int const lane = static_cast<int>(threadIdx.x % 32);
  std::size_t const row_bytes = s.row_bytes(), cols = s.scale_cols();
  warp_copy16<3>(out, reinterpret_cast<const uint4*>(a.data + t * row_bytes), row_bytes / 16);
  if (s.bf16_wire()) return;  // rows only
  const auto* linear = a.block_scales + t * s.token_scale_bytes();
  if (s.fp8_wire()) {  // one float per column, each to its column-major place
    for (std::size_t c = lane; c < cols; c += 32) {
      *reinterpret_cast<float*>(scales + s.scale_offset(row, c)) =
          reinterpret_cast<const float*>(linear)[c];
    }
    return;
  }
  for (std::size_t c = 4 * lane; c < cols; c += 4 * 32) {  // 4 columns: 4 contiguous bytes
    *reinterpret_cast<std::uint32_t*>(scales + s.scale_offset(row, c)) =
        reinterpret_cast<const std::uint32_t*>(linear)[c / 4];
  }
}

// Part `part` of `parts` of one pair's BF16 token quantized into its expert's rank (`out`,
// `scales`: that expert's rows and scales there) by the 32 lanes of a warp, block by block, each
// scale put at its place (MoeShape::scale_offset): NVFP4 with `quant_table`, `scale_factor`
// (quantize_block.cuh's), the whole row (parts 1); FP8 per 128 elements, the part's blocks.
__device__ __forceinline__ void moe_quantize_row_to_expert(const MoeRowsArgs& a, int t, int row,
                                                           uint4* out, char* scales,
                                                           const float* quant_table,
                                                           float scale_factor, int part,
                                                           int parts) {
  const MoeShape& s = a.shape;
  int const lane = static_cast<int>(threadIdx.x % 32);
  std::size_t const cols = s.scale_cols();
  if (s.fp8_wire()) {
    // The loads of kBatch blocks are issued before any of their stores: the compiler cannot move
    // a load above a store that may alias it, so one block at a time leaves one load in flight.
    constexpr std::size_t kBatch = 4;
    constexpr std::size_t kLanesPerBlock = kFp8BlockSize / 4;  // 4 elements (8 bytes) per lane
    std::size_t begin = 0, end = 0;
    s.row_part(part, parts, begin, end);
    const auto* token =
        reinterpret_cast<const uint2*>(a.bf16_tokens + static_cast<std::size_t>(t) * s.hidden);
    auto* codes_out = reinterpret_cast<std::uint32_t*>(out);
    for (std::size_t first = begin; first < end; first += kBatch) {
      uint2 v[kBatch];
#pragma unroll
      for (std::size_t u = 0; u < kBatch; ++u) {
        if (first + u < end) v[u] = token[(first + u) * kLanesPerBlock + lane];
      }
#pragma unroll
      for (std::size_t u = 0; u < kBatch; ++u) {
        if (first + u >= end) break;  // the same for every lane: the shuffles see all 32
        std::uint32_t codes = 0;
        float const scale = moe_fp8_block(v[u], codes);
        codes_out[(first + u) * kLanesPerBlock + lane] = codes;
        if (lane == 0) *reinterpret_cast<float*>(scales + s.scale_offset(row, first + u)) = scale;
      }
    }
  } else {
    for (std::size_t b = lane; b < cols; b += 32) {
      Vectors<bf16, 16> in;
      load(a.bf16_tokens, static_cast<std::size_t>(t) * cols + b, in);
      uint2 packed;
      std::uint8_t scale;
      quantize_one_block(in, scale_factor, quant_table, packed, scale);
      reinterpret_cast<uint2*>(out)[b] = packed;
      scales[s.scale_offset(row, b)] = static_cast<char>(scale);
    }
  }
}

// kQuantize: the tokens are BF16, quantized on the way (the wire is NVFP4 or FP8); else they are
// in the wire's format already and copied. Two variants, so that each holds only its own path's
// registers within the 64 that kCtasPerSm resident CTAs allow (the grid cap assumes them).
template <class P, bool kQuantize>
__global__ void __launch_bounds__(kThreads, kCtasPerSm)
    moe_rows_kernel(const __grid_constant__ P peers, const __grid_constant__ MoeRowsArgs a) {
  programmatic_wait(peers);
  __shared__ float quant_table[256];
  const MoeShape& s = a.shape;
  int const me = peers.rank();
  int const L = s.local_experts();
  float scale_factor = 0.0f;
  if (kQuantize && s.wire == DataType::Nvfp4) {
    float const g = *a.global_scale;
    scale_factor = nvfp4_scale_factor(g);
    fill_quant_table(quant_table, g);
  }
  int const pairs = *a.tokens * s.top_k;  // the counts launch placed these only
  int const parts = kQuantize ? s.quantize_row_parts(pairs, grid_warps()) : 1;
  for (int w = global_warp(); w < pairs * parts; w += grid_warps()) {
    int const p = w / parts, part = w % parts;
    int const row = a.pair_row[p];
    if (row < 0) continue;
    int const e = a.topk_idx[p];
    int const dest = e / L, l = e % L;
    std::size_t const slot = static_cast<std::size_t>(l) * s.capacity + row;
    auto* out =
        reinterpret_cast<uint4*>(peers.ptr(SymRef{0, a.layout.rows + slot * s.row_bytes()}, dest));
    char* scales = peers.ptr(SymRef{0, a.layout.scales + l * s.expert_scale_bytes()}, dest);
    if constexpr (kQuantize) {
      moe_quantize_row_to_expert(a, p / s.top_k, row, out, scales, quant_table, scale_factor, part,
                                 parts);
    } else {
      moe_copy_row_to_expert(a, p / s.top_k, row, out, scales);
    }
    if (part == 0 && threadIdx.x % 32 == 0) {
      reinterpret_cast<std::int32_t*>(peers.ptr(SymRef{0, a.layout.origin}, dest))[slot] =
          me * s.pairs() + p;
    }
  }
  if (!peers.barrier()) return;  // every row on its expert's rank before its GEMM
  programmatic_release(peers);
}

// ---- send back: each expert output row to its token's rank -----------------------------------

// The row of slot `i` (an expert's row) to its token's rank, by the 32 lanes of a warp.
template <class P>
__device__ __forceinline__ void moe_send_row_back(const P& peers, const MoeSendBackArgs& a,
                                                  const std::int32_t* origin, int i) {
  const MoeShape& s = a.shape;
  std::size_t const row_bytes = static_cast<std::size_t>(s.hidden) * 2;
  int const o = origin[i];
  int const src = o / s.pairs(), q = o % s.pairs();
  auto* out = reinterpret_cast<uint4*>(
      peers.ptr(SymRef{0, a.layout.back + static_cast<std::size_t>(q) * row_bytes}, src));
  const auto* in = reinterpret_cast<const uint4*>(a.expert_out) + i * (row_bytes / 16);
  warp_copy16(out, in, row_bytes / 16);
}

template <class P>
__global__ void __launch_bounds__(kThreads, kCtasPerSm)
    moe_send_back_kernel(const __grid_constant__ P peers,
                         const __grid_constant__ MoeSendBackArgs a) {
  programmatic_wait(peers);
  const MoeShape& s = a.shape;
  const auto* origin =
      reinterpret_cast<const std::int32_t*>(peers.ptr(SymRef{0, a.layout.origin}, peers.rank()));
  // Each expert's counted rows only (a decode step's few, not L x capacity), the experts' rows
  // taken as one sequence dealt round-robin to the grid's warps.
  int const warp = global_warp(), warps = grid_warps();
  int before = 0;  // counted rows of the experts before l
  for (int l = 0; l < s.local_experts(); ++l) {
    int const count = a.expert_count[l];
    for (int m = ((warp - before) % warps + warps) % warps; m < count; m += warps) {
      moe_send_row_back(peers, a, origin, l * s.capacity + m);
    }
    before += count;
  }
  if (!peers.barrier()) return;  // every row back on its token's rank
  programmatic_release(peers);
}

// ---- pull: each token's rows read in place from its experts' ranks, summed ----------------------

template <class P>
__global__ void __launch_bounds__(kThreads)
    moe_pull_kernel(const __grid_constant__ P peers, const __grid_constant__ MoePullArgs a) {
  programmatic_wait(peers);
  if (!peers.barrier()) return;  // every rank's expert outputs written (its earlier work done)
  const MoeShape& s = a.shape;
  int const L = s.local_experts();
  std::size_t const groups = static_cast<std::size_t>(s.hidden) / 8;  // 8 elements: 16 bytes
  std::size_t const total = static_cast<std::size_t>(*a.tokens) * groups;
  for (std::size_t i = global_thread(); i < total; i += grid_threads()) {
    std::size_t const t = i / groups, g = i % groups;
    float acc[8] = {};
    for (int j = 0; j < s.top_k; ++j) {
      std::size_t const p = t * s.top_k + j;
      int const row = a.pair_row[p];
      if (row < 0) continue;
      int const e = a.pair_expert[p];
      std::size_t const slot = static_cast<std::size_t>(e % L) * s.capacity + row;
      uint4 const v = reinterpret_cast<const uint4*>(
          peers.ptr(SymRef{0, a.layout.expert_out + slot * s.hidden * 2}, e / L))[g];
      add_weighted_bf16x8(acc, a.weights[p], v);
    }
    reinterpret_cast<uint4*>(a.out + t * s.hidden)[g] = packed_bf16x8(acc);
  }
  programmatic_release(peers);
}

// ---- launch bodies ----------------------------------------------------------------------------

inline void check_moe_shape(const MoeShape& s) {
  SYMMCOMM_EXPECTS(s.ranks >= 1 && s.experts % s.ranks == 0 && s.experts <= kMaxMoeExperts &&
                       s.hidden % (s.fp8_wire() ? kFp8BlockSize : 64) == 0 && s.top_k >= 1 &&
                       s.max_tokens >= 1 && s.capacity >= 1,
                   "lsa moe: shape of " << s.experts << " experts over " << s.ranks
                                        << " ranks, hidden " << s.hidden
                                        << " (a bug in symmcomm: MoeGroup checks it)");
}

template <class Desc>
void launch_moe_counts(const Desc& peers, const MoeCountsArgs& a, cudaStream_t stream) {
  check_moe_shape(a.shape);
  SYMMCOMM_EXPECTS(a.phase >= 0 && a.phase <= 2, "lsa moe: phase " << a.phase);
  check_ref(peers, SymRef{0, a.table}, "moe group window");
  with_policy(peers, [&](const auto& p) {
    launch(moe_counts_kernel<std::decay_t<decltype(p)>>, 1, stream, p, a);
  });
}

template <class Desc>
void launch_moe_rows(const Desc& peers, const MoeRowsArgs& a, cudaStream_t stream) {
  check_moe_shape(a.shape);
  SYMMCOMM_EXPECTS(
      a.bf16_tokens == nullptr || a.shape.wire != DataType::Nvfp4 || a.global_scale != nullptr,
      "lsa moe: BF16 tokens without a global scale (a bug in symmcomm)");
  check_ref(peers, SymRef{0, a.layout.rows}, "moe group window");
  std::size_t const bytes = static_cast<std::size_t>(a.shape.pairs()) * a.shape.row_bytes();
  unsigned const grid = grid_for_units(bytes / 64, grid_cap(peers, kCtasPerSm));
  with_policy(peers, [&](const auto& p) {
    using P = std::decay_t<decltype(p)>;
    if (a.bf16_tokens != nullptr) {
      launch_resident(moe_rows_kernel<P, true>, peers.share, grid, stream, p, a);
    } else {
      launch_resident(moe_rows_kernel<P, false>, peers.share, grid, stream, p, a);
    }
  });
}

template <class Desc>
void launch_moe_pull(const Desc& peers, const MoePullArgs& a, cudaStream_t stream) {
  check_moe_shape(a.shape);
  SYMMCOMM_EXPECTS(a.shape.in_place, "lsa moe: a pull without expert outputs in the window");
  check_ref(peers, SymRef{0, a.layout.expert_out}, "moe group window");
  std::size_t const bytes = static_cast<std::size_t>(a.shape.max_tokens) * a.shape.hidden * 2;
  unsigned const grid = grid_for_units(bytes / 64, grid_cap(peers, kCtasPerSm));
  with_policy(peers, [&](const auto& p) {
    launch_resident(moe_pull_kernel<std::decay_t<decltype(p)>>, peers.share, grid, stream, p, a);
  });
}

template <class Desc>
void launch_moe_send_back(const Desc& peers, const MoeSendBackArgs& a, cudaStream_t stream) {
  check_moe_shape(a.shape);
  check_ref(peers, SymRef{0, a.layout.back}, "moe group window");
  std::size_t const bytes = static_cast<std::size_t>(a.shape.pairs()) * a.shape.hidden * 2;
  unsigned const grid = grid_for_units(bytes / 64, grid_cap(peers, kCtasPerSm));
  with_policy(peers, [&](const auto& p) {
    launch_resident(moe_send_back_kernel<std::decay_t<decltype(p)>>, peers.share, grid, stream, p,
                    a);
  });
}

}  // namespace symmcomm::detail::lsa
