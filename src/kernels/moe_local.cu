// The MoE group's fallback kernels (moe.hpp): with every rank's tokens and routing gathered by
// NCCL, each rank places the pairs routed to its own experts - in the LSA path's order (source
// rank, token, top-k slot) and layout, with the same error bits, overflow and counts - and, for
// the combine, sums each gathered token's rows computed here before NCCL's fp32 reduce-scatter.
// No peer memory: plain launches.

#include <cuda_bf16.h>

#include <cstdint>

#include "core/kernel_preload.hpp"
#include "core/launch.cuh"
#include "moe.hpp"
#include "moe_launchers.cuh"
#include "symmcomm/error.hpp"

namespace symmcomm::detail::lsa {
namespace {

// One source's pairs for this rank's experts, by warp 0 in (token, slot) order, 32 at a time;
// run[l] is local expert l's next row (continued over the sources in rank order).
__device__ void place_source(const MoeLocalArgs& a, int src, int n, std::int32_t* run) {
  const MoeShape& s = a.shape;
  int const L = s.local_experts(), first = a.me * L;
  int const lane = static_cast<int>(threadIdx.x);
  unsigned const below = (1u << lane) - 1u;
  const std::int32_t* idx = a.topk_idx + static_cast<std::size_t>(src) * s.pairs();
  std::int32_t* rows = a.pair_row + static_cast<std::size_t>(src) * s.pairs();
  for (int p0 = 0; p0 < s.pairs(); p0 += 32) {
    int const p = p0 + lane;
    int e = -1;
    if (p < s.pairs() && p / s.top_k < n) e = idx[p];
    bool const mine = e >= first && e < first + L;
    unsigned const group = __match_any_sync(0xffffffffu, mine ? e : s.experts + lane);
    int const row = mine ? run[e - first] + __popc(group & below) : -1;
    __syncwarp();
    if (mine && (group & below) == 0) run[e - first] += __popc(group);
    __syncwarp();
    if (p < s.pairs()) rows[p] = row >= 0 && row < s.capacity ? row : -1;
  }
}

// Tokens of source `src` (clamped to 0..max_tokens) and whether its count was outside.
__device__ __forceinline__ int source_tokens(const MoeLocalArgs& a, int src, bool& bad) {
  int const n = a.num_tokens[src];
  bad = n < 0 || n > a.shape.max_tokens;
  return n < 0 ? 0 : (n > a.shape.max_tokens ? a.shape.max_tokens : n);
}

__global__ void __launch_bounds__(kThreads) moe_local_counts_kernel(const MoeLocalArgs a) {
  __shared__ std::int32_t run[kMaxMoeExperts];
  __shared__ std::int32_t error, overflow;
  const MoeShape& s = a.shape;
  int const L = s.local_experts();
  int const tid = static_cast<int>(threadIdx.x), threads = static_cast<int>(blockDim.x);
  for (int l = tid; l < L; l += threads) run[l] = 0;
  if (tid == 0) {
    error = 0;
    overflow = 0;
  }
  __syncthreads();
  std::int32_t bits = 0;
  for (int src = tid; src < s.ranks; src += threads) {
    bool bad = false;
    source_tokens(a, src, bad);
    if (bad) bits |= kMoeErrorNumTokens;
    if (a.global_scales != nullptr &&
        __float_as_int(a.global_scales[src]) != __float_as_int(a.global_scales[0])) {
      bits |= kMoeErrorGlobalScale;
    }
  }
  for (int q = tid; q < s.ranks * s.pairs(); q += threads) {
    bool bad = false;
    int const n = source_tokens(a, q / s.pairs(), bad);
    int const e = a.topk_idx[q];
    if ((q % s.pairs()) / s.top_k < n && (e < -1 || e >= s.experts)) bits |= kMoeErrorExpertId;
  }
  if (bits != 0) atomicOr(&error, bits);
  if (tid < 32) {
    for (int src = 0; src < s.ranks; ++src) {
      bool bad = false;
      place_source(a, src, source_tokens(a, src, bad), run);
    }
  }
  __syncthreads();
  for (int l = tid; l < L; l += threads) {
    a.expert_count[l] = run[l] < s.capacity ? run[l] : s.capacity;
    if (run[l] > s.capacity) atomicAdd(&overflow, run[l] - s.capacity);
  }
  __syncthreads();
  if (tid == 0) {
    *a.overflow = overflow;
    *a.error = error;
    *a.group_scale = a.global_scales != nullptr ? a.global_scales[0] : 0.0f;
  }
}

// Every placed pair's gathered row and scales into this rank's layout, a warp per pair.
__global__ void __launch_bounds__(kThreads) moe_local_rows_kernel(const MoeLocalArgs a) {
  const MoeShape& s = a.shape;
  int const L = s.local_experts(), first = a.me * L;
  MoeRowsArgs rows;
  rows.shape = s;
  rows.data = a.data;
  rows.block_scales = a.block_scales;
  int const all = s.ranks * s.pairs();
  for (int q = global_warp(); q < all; q += grid_warps()) {
    int const row = a.pair_row[q];
    if (row < 0) continue;
    int const l = a.topk_idx[q] - first;
    int const src = q / s.pairs(), t = (q % s.pairs()) / s.top_k;
    std::size_t const slot = static_cast<std::size_t>(l) * s.capacity + row;
    moe_copy_row_to_expert(rows, src * s.max_tokens + t, row,
                           reinterpret_cast<uint4*>(a.rows + slot * s.row_bytes()),
                           reinterpret_cast<char*>(a.scales) + l * s.expert_scale_bytes());
  }
}

// Each gathered token's rows computed here, weighted and summed in fp32 in slot order.
__global__ void __launch_bounds__(kThreadsPerCta) moe_partial_kernel(const MoePartialArgs a) {
  const MoeShape& s = a.shape;
  int const first = a.me * s.local_experts();
  std::size_t const groups = static_cast<std::size_t>(s.hidden) / 8;
  std::size_t const total = static_cast<std::size_t>(s.ranks) * s.max_tokens * groups;
  for (std::size_t i = global_thread(); i < total; i += grid_threads()) {
    std::size_t const token = i / groups, g = i % groups;
    float acc[8] = {};
    for (int j = 0; j < s.top_k; ++j) {
      std::size_t const q = token * s.top_k + j;
      int const row = a.pair_row[q];
      if (row < 0) continue;
      std::size_t const slot = static_cast<std::size_t>(a.topk_idx[q] - first) * s.capacity + row;
      add_weighted_bf16x8(acc, a.topk_weights[q],
                          reinterpret_cast<const uint4*>(a.expert_out + slot * s.hidden)[g]);
    }
    auto* out = reinterpret_cast<float4*>(a.partial + token * s.hidden + g * 8);
    out[0] = make_float4(acc[0], acc[1], acc[2], acc[3]);
    out[1] = make_float4(acc[4], acc[5], acc[6], acc[7]);
  }
}

__global__ void __launch_bounds__(kThreadsPerCta)
    moe_round_kernel(const float* in, bf16* out, std::size_t count) {
  for (std::size_t i = global_thread(); i < count; i += grid_threads()) {
    out[i] = __float2bfloat16_rn(in[i]);
  }
}

__global__ void __launch_bounds__(kThreadsPerCta)
    moe_copy_placed_rows_kernel(MoeShape s, const std::int32_t* expert_count, const uint4* src,
                                uint4* dst) {
  std::size_t const groups = static_cast<std::size_t>(s.hidden) / 8;  // 16 bytes each
  std::size_t const per_expert = static_cast<std::size_t>(s.capacity) * groups;
  std::size_t const total = static_cast<std::size_t>(s.local_experts()) * per_expert;
  for (std::size_t i = global_thread(); i < total; i += grid_threads()) {
    std::size_t const l = i / per_expert, m = i % per_expert / groups;
    if (m < static_cast<std::size_t>(expert_count[l])) dst[i] = src[i];
  }
}

// A warp per (token, 128-element block): its codes and scale, linear.
__global__ void __launch_bounds__(kThreadsPerCta)
    moe_quantize_fp8_kernel(const bf16* in, std::size_t blocks, std::uint8_t* data, float* scales) {
  for (std::size_t b = global_thread() / 32; b < blocks; b += grid_threads() / 32) {
    std::uint32_t codes = 0;
    uint2 const v = reinterpret_cast<const uint2*>(in + b * kFp8BlockSize)[threadIdx.x % 32];
    float const scale = moe_fp8_block(v, codes);
    reinterpret_cast<std::uint32_t*>(data + b * kFp8BlockSize)[threadIdx.x % 32] = codes;
    if (threadIdx.x % 32 == 0) scales[b] = scale;
  }
}

// Loaded with the rest of this module when a communicator is made (core/kernel_preload.hpp).
[[maybe_unused]] const bool kModuleRegistered = register_kernel_module(
    reinterpret_cast<const void*>(&moe_round_kernel), "kernels/moe_local.cu");

}  // namespace

void moe_place_local(const MoeLocalArgs& a, cudaStream_t stream) {
  check_moe_shape(a.shape);
  SYMMCOMM_EXPECTS(a.me >= 0 && a.me < a.shape.ranks, "lsa moe: rank " << a.me);
  moe_local_counts_kernel<<<1, kThreads, 0, stream>>>(a);
  SYMMCOMM_CHECK_LAUNCH();
  std::size_t const units =
      static_cast<std::size_t>(a.shape.ranks) * a.shape.pairs() * a.shape.row_bytes() / 64;
  moe_local_rows_kernel<<<grid_for_units(
                              units, static_cast<unsigned>(kCtasPerSm * current_device_sm_count())),
                          kThreads, 0, stream>>>(a);
  SYMMCOMM_CHECK_LAUNCH();
}

void moe_partial_sums(const MoePartialArgs& a, cudaStream_t stream) {
  check_moe_shape(a.shape);
  std::size_t const items =
      static_cast<std::size_t>(a.shape.ranks) * a.shape.max_tokens * a.shape.hidden / 8;
  moe_partial_kernel<<<grid_for(items), kThreadsPerCta, 0, stream>>>(a);
  SYMMCOMM_CHECK_LAUNCH();
}

void moe_round_bf16(const float* in, bf16* out, std::size_t count, cudaStream_t stream) {
  moe_round_kernel<<<grid_for(count), kThreadsPerCta, 0, stream>>>(in, out, count);
  SYMMCOMM_CHECK_LAUNCH();
}

void moe_quantize_fp8(const bf16* in, int tokens, int hidden, std::uint8_t* data, float* scales,
                      cudaStream_t stream) {
  SYMMCOMM_EXPECTS(tokens >= 0 && hidden % kFp8BlockSize == 0,
                   "lsa moe: fp8 quantize of " << tokens << " x " << hidden);
  std::size_t const blocks = static_cast<std::size_t>(tokens) * hidden / kFp8BlockSize;
  if (blocks == 0) return;
  moe_quantize_fp8_kernel<<<grid_for(blocks * 32), kThreadsPerCta, 0, stream>>>(in, blocks, data,
                                                                                scales);
  SYMMCOMM_CHECK_LAUNCH();
}

void moe_copy_placed_rows(const MoeShape& shape, const std::int32_t* expert_count, const bf16* src,
                          bf16* dst, cudaStream_t stream) {
  std::size_t const groups = static_cast<std::size_t>(shape.local_experts()) * shape.capacity *
                             (static_cast<std::size_t>(shape.hidden) / 8);
  moe_copy_placed_rows_kernel<<<grid_for(groups), kThreadsPerCta, 0, stream>>>(
      shape, expert_count, reinterpret_cast<const uint4*>(src), reinterpret_cast<uint4*>(dst));
  SYMMCOMM_CHECK_LAUNCH();
}

}  // namespace symmcomm::detail::lsa
