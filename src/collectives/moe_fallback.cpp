// The MoE group's fallback path (moe_group_impl.hpp), for communicators where symmcomm's LSA
// kernels cannot run: the dispatch all-gathers every rank's rows (NVFP4, FP8 with its block
// scales, or BF16) and routing with one NCCL call (symmcomm's all_gather, on its NCCL path: the
// buffers are not in windows), then this rank places the pairs routed to its experts
// (kernels/moe_local.cu: the LSA path's order, layout, counts and error bits); the combine sums
// each gathered token's rows computed here in fp32, reduce-scatters the sums in fp32 and rounds
// them once to bf16.

#include <cuda_runtime_api.h>

#include <vector>

#include "collectives/moe_group_impl.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/codecs.hpp"

namespace symmcomm {

namespace detail {

DeviceBlock::DeviceBlock(std::size_t bytes) {
  SYMMCOMM_CUDA_TRY(cudaMalloc(&ptr_, bytes > 0 ? bytes : 16));
}

DeviceBlock::~DeviceBlock() {
  if (ptr_ != nullptr) cudaFree(ptr_);
}

MoeFallbackLayout MoeFallbackLayout::of(const lsa::MoeShape& s) {
  auto const W = static_cast<std::size_t>(s.ranks);
  auto const T = static_cast<std::size_t>(s.max_tokens);
  auto const H = static_cast<std::size_t>(s.hidden);
  auto const L = static_cast<std::size_t>(s.local_experts());
  auto const pairs = static_cast<std::size_t>(s.pairs());
  MoeFallbackLayout l;
  std::size_t at = 0;
  auto const take = [&](std::size_t& field, std::size_t bytes) {
    field = at;
    at += round_up_to(bytes, 16);
  };
  take(l.rows, L * static_cast<std::size_t>(s.capacity) * s.row_bytes());
  take(l.scales, L * s.expert_scale_bytes());
  take(l.expert_count, L * 4);
  take(l.words, 16);
  take(l.data_all, W * T * s.row_bytes());
  take(l.scales_all, W * T * s.token_scale_bytes());
  take(l.global_all, W * 4);
  take(l.idx_all, W * pairs * 4);
  take(l.weights_all, W * pairs * 4);
  take(l.tokens_all, W * 4);
  take(l.pair_row_all, W * pairs * 4);
  take(l.stage_data, s.bf16_wire() ? 0 : T * s.row_bytes());
  take(l.stage_scales, T * s.token_scale_bytes());
  take(l.partial, W * T * H * 4);
  take(l.sums, T * H * 4);
  take(l.expert_out, s.in_place ? L * static_cast<std::size_t>(s.capacity) * H * 2 : 0);
  l.bytes = at;
  return l;
}

}  // namespace detail

void MoeGroup::Impl::make_fallback(cudaStream_t stream) {
  fallback = detail::MoeFallbackLayout::of(shape);
  block = detail::DeviceBlock(fallback.bytes);
  comm = std::make_unique<detail::CommAlias>(state);
  char* base = block.get();
  set_buffers(base, fallback.rows, fallback.scales, fallback.expert_count, fallback.words);
  if (shape.in_place) {
    buffers.expert_out = reinterpret_cast<bf16*>(base + fallback.expert_out);
    SYMMCOMM_CUDA_TRY(cudaMemsetAsync(base + fallback.expert_out, 0,
                                      fallback.bytes - fallback.expert_out, stream));
  }
  // Nothing dispatched yet: no pair placed (row -1), no rows, no error.
  SYMMCOMM_CUDA_TRY(cudaMemsetAsync(base, 0, fallback.pair_row_all, stream));
  SYMMCOMM_CUDA_TRY(cudaMemsetAsync(base + fallback.pair_row_all, 0xff,
                                    fallback.stage_data - fallback.pair_row_all, stream));
}

void MoeGroup::Impl::dispatch_fallback(detail::lsa::MoeRowsArgs rows, const float* global_scale,
                                       const std::int32_t* topk_idx, const float* topk_weights,
                                       const std::int32_t* num_tokens, cudaStream_t stream) {
  char* base = block.get();
  std::size_t const n = tokens_elements();
  auto const W = static_cast<std::size_t>(shape.ranks);
  auto const pair_bytes = static_cast<std::size_t>(shape.pairs()) * 4;
  std::vector<GatherItem> routing = {
      GatherItem{topk_idx, base + fallback.idx_all, pair_bytes, "topk_idx"},
      GatherItem{topk_weights, base + fallback.weights_all, pair_bytes, "topk_weights"},
      GatherItem{num_tokens, base + fallback.tokens_all, 4, "num_tokens"}};
  auto* data_all = reinterpret_cast<std::uint8_t*>(base + fallback.data_all);
  const float* global_all = nullptr;
  const std::uint8_t* scales_all = nullptr;
  if (shape.bf16_wire()) {
    // BF16 rows gathered as bytes with the routing, in one call.
    routing.push_back(GatherItem{rows.data, data_all, n * 2, "x"});
    all_gather(comm->get(), routing, stream);
  } else if (shape.fp8_wire()) {
    // Quantized here per 128-element block as the LSA path's launch does, then the codes and
    // their linear scales gathered as bytes with the routing, in one call.
    auto* stage = reinterpret_cast<std::uint8_t*>(base + fallback.stage_data);
    auto* stage_scales = reinterpret_cast<float*>(base + fallback.stage_scales);
    detail::lsa::moe_quantize_fp8(rows.bf16_tokens, shape.max_tokens, shape.hidden, stage,
                                  stage_scales, stream);
    auto const T = static_cast<std::size_t>(shape.max_tokens);
    routing.push_back(GatherItem{stage, data_all, T * shape.row_bytes(), "x"});
    routing.push_back(GatherItem{stage_scales, base + fallback.scales_all,
                                 T * shape.token_scale_bytes(), "x scales"});
    all_gather(comm->get(), routing, stream);
    scales_all = reinterpret_cast<const std::uint8_t*>(base + fallback.scales_all);
  } else {
    ConstNvfp4View mine{rows.data, rows.block_scales, global_scale, n};
    if (rows.bf16_tokens != nullptr) {
      // Quantized here with the layer's scale, as the LSA path quantizes inside its launch.
      Nvfp4View const staged{reinterpret_cast<std::uint8_t*>(base + fallback.stage_data),
                             reinterpret_cast<std::uint8_t*>(base + fallback.stage_scales),
                             const_cast<float*>(global_scale), n};
      quantize_nvfp4(rows.bf16_tokens, staged, ScaleMode::Given, stream);
      mine = staged;
    }
    Nvfp4View const all{data_all, reinterpret_cast<std::uint8_t*>(base + fallback.scales_all),
                        reinterpret_cast<float*>(base + fallback.global_all), n * W};
    all_gather(comm->get(), mine, all, routing, stream);
    global_all = all.global_scale;
    scales_all = all.block_scales;
  }
  detail::lsa::MoeLocalArgs a;
  a.shape = shape;
  a.me = state->rank;
  a.topk_idx = reinterpret_cast<const std::int32_t*>(base + fallback.idx_all);
  a.num_tokens = reinterpret_cast<const std::int32_t*>(base + fallback.tokens_all);
  a.global_scales = global_all;
  a.data = data_all;
  a.block_scales = scales_all;
  a.pair_row = reinterpret_cast<std::int32_t*>(base + fallback.pair_row_all);
  a.expert_count = buffers.expert_count;
  a.overflow = buffers.overflow;
  a.error = buffers.error;
  a.group_scale = buffers.global_scale;
  a.rows = buffers.data;
  a.scales = buffers.block_scales;
  detail::lsa::moe_place_local(a, stream);
}

void MoeGroup::Impl::combine_fallback(const bf16* expert_out, bf16* out, cudaStream_t stream) {
  char* base = block.get();
  std::size_t const n = tokens_elements();
  auto const W = static_cast<std::size_t>(shape.ranks);
  detail::lsa::MoePartialArgs a;
  a.shape = shape;
  a.me = state->rank;
  a.expert_out = expert_out;
  a.topk_idx = reinterpret_cast<const std::int32_t*>(base + fallback.idx_all);
  a.topk_weights = reinterpret_cast<const float*>(base + fallback.weights_all);
  a.pair_row = reinterpret_cast<const std::int32_t*>(base + fallback.pair_row_all);
  a.partial = reinterpret_cast<float*>(base + fallback.partial);
  detail::lsa::moe_partial_sums(a, stream);
  auto* sums = reinterpret_cast<float*>(base + fallback.sums);
  reduce_scatter(comm->get(), ConstFp32Span{a.partial, n * W}, Fp32Span{sums, n}, stream);
  detail::lsa::moe_round_bf16(sums, out, n, stream);
}

}  // namespace symmcomm
