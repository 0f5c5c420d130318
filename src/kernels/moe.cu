// The MoE dispatch and combine kernels (moe.hpp) for production peers: the launch bodies of
// moe_launchers.cuh instantiated for Peers, the window layout, and the local sum.

#include <cuda_bf16.h>
#include "core/kernel_preload.hpp"

#include "core/launch.cuh"
#include "moe.hpp"
#include "moe_launchers.cuh"
#include "symmcomm/error.hpp"

namespace symmcomm::detail::lsa {
namespace {

// Each token's rows weighted and summed in fp32 in top-k slot order, rounded once (local).

__global__ void __launch_bounds__(kThreadsPerCta)
    moe_sum_kernel(const __grid_constant__ MoeSumArgs a) {
  const MoeShape& s = a.shape;
  std::size_t const groups = static_cast<std::size_t>(s.hidden) / 8;  // 8 elements: 16 bytes
  // Only the tokens dispatched: the rows past them are left as they were, so a decode step of
  // few tokens writes few rows, not max_tokens.
  std::size_t const total = static_cast<std::size_t>(*a.tokens) * groups;
  for (std::size_t i = global_thread(); i < total; i += grid_threads()) {
    std::size_t const t = i / groups, g = i % groups;
    float acc[8] = {};
    for (int j = 0; j < s.top_k; ++j) {
      std::size_t const p = t * s.top_k + j;
      if (a.pair_row[p] < 0) continue;
      add_weighted_bf16x8(acc, a.weights[p],
                          reinterpret_cast<const uint4*>(a.back + p * s.hidden)[g]);
    }
    reinterpret_cast<uint4*>(a.out + t * s.hidden)[g] = packed_bf16x8(acc);
  }
}

// Loaded with the rest of this module when a communicator is made (core/kernel_preload.hpp).
[[maybe_unused]] const bool kModuleRegistered =
    register_kernel_module(reinterpret_cast<const void*>(&moe_sum_kernel), "kernels/moe.cu");

std::size_t aligned16(std::size_t bytes) {
  return round_up_to(bytes, 16);
}

}  // namespace

MoeLayout MoeLayout::of(const MoeShape& s) {
  auto const L = static_cast<std::size_t>(s.local_experts());
  auto const cap = static_cast<std::size_t>(s.capacity);
  MoeLayout l;
  l.table = 0;
  l.rows = aligned16(2 * static_cast<std::size_t>(s.ranks) * s.table_words() * 4);
  l.scales = l.rows + aligned16(L * cap * s.row_bytes());
  l.origin = l.scales + aligned16(L * s.expert_scale_bytes());
  l.back = l.origin + aligned16(L * cap * 4);
  auto const pairs = static_cast<std::size_t>(s.pairs());
  l.expert_out = l.back + aligned16(pairs * s.hidden * 2);
  l.pair_row = l.expert_out + (s.in_place ? aligned16(L * cap * s.hidden * 2) : 0);
  l.pair_expert = l.pair_row + aligned16(pairs * 4);
  l.weights = l.pair_expert + aligned16(pairs * 4);
  l.expert_count = l.weights + aligned16(pairs * 4);
  l.words = l.expert_count + aligned16(L * 4);
  l.epoch = l.words + 16;
  l.bytes = l.epoch + 16;
  return l;
}

void moe_counts(const Peers& peers, const MoeCountsArgs& args, cudaStream_t stream) {
  launch_moe_counts(peers, args, stream);
}

void moe_rows(const Peers& peers, const MoeRowsArgs& args, cudaStream_t stream) {
  launch_moe_rows(peers, args, stream);
}

void moe_send_back(const Peers& peers, const MoeSendBackArgs& args, cudaStream_t stream) {
  launch_moe_send_back(peers, args, stream);
}

void moe_pull(const Peers& peers, const MoePullArgs& args, cudaStream_t stream) {
  launch_moe_pull(peers, args, stream);
}

void moe_sum(const MoeSumArgs& args, cudaStream_t stream) {
  check_moe_shape(args.shape);
  std::size_t const items = static_cast<std::size_t>(args.shape.max_tokens) * args.shape.hidden / 8;
  moe_sum_kernel<<<grid_for(items), kThreadsPerCta, 0, stream>>>(args);
  SYMMCOMM_CHECK_LAUNCH();
}

}  // namespace symmcomm::detail::lsa
