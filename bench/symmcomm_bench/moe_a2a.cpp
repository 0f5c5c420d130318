// symmcomm-bench's moe-a2a scenario: one MoE layer by expert (DeepSeek-R1's shapes: hidden
// 7168, 256 experts, top-8 of group-limited routing - the experts of the top 4 of 8 groups),
// per tokens-per-rank value T, side by side in one run:
//   "moe-group-lsa" symmcomm::MoeGroup on its LSA kernels (each routed NVFP4 row written once
//                   into its expert's rank, each expert output sent back and summed in fp32),
//                   where they can run;
//   "moe-lsa-in-place" the same with MoeConfig::combine_in_place, the expert outputs written
//                   into the group's window and read there by the tokens' ranks;
//   "moe-lsa-in-place-bf16" (NVFP4 wire) the same from BF16 tokens, quantized to NVFP4 inside
//                   the dispatch with the layer's static global scale;
//   "moe-lsa-at-max" the LSA path with one group made for --moe-max-tokens, dispatching T of
//                   them (as an engine decodes below its largest batch);
//   "moe-group-fallback" the group's fallback over NCCL (all-gathers, local placement, fp32
//                   reduce-scatter);
//   "ag-rs"         moe-dp's all-gather / reduce-scatter layer at T tokens per rank on Auto's
//                   path (every token to every rank);
//   "nccl-alltoall" ncclAlltoAll padded, as engines without a dispatch kernel do: T rows of
//                   NVFP4 data + block scales (fp8 codes + scales, or bf16 rows, with
//                   --moe-wire fp8e4m3 or bf16) to every peer,
//                   and T bf16 output rows back.
// The group's capacity per expert is twice the mean rows an expert gets (at least 8); pairs past
// it are dropped and counted, as an engine sizing its buffers would see.

#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "runner.hpp"
#include "symmcomm/collectives/moe.hpp"

namespace symmcomm::bench {

namespace {

constexpr int kGroups = 8, kTopGroups = 4;

// One rank's routing of `tokens` tokens: top_k experts of the kTopGroups best groups (a group's
// score: its two best experts), weights normalised; int32 ids and float weights [tokens][top_k].
void group_limited_routing(int rank, int tokens, int experts, int top_k,
                           std::vector<std::int32_t>& ids, std::vector<float>& weights) {
  std::mt19937 rng(static_cast<unsigned>(1000 + rank));
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  int const groups = experts % kGroups == 0 && experts / kGroups >= 2 ? kGroups : 1;
  int const per_group = experts / groups;
  int const keep = std::min(kTopGroups, groups);
  ids.assign(static_cast<std::size_t>(tokens * top_k), -1);
  weights.assign(ids.size(), 0.0f);
  std::vector<float> score(static_cast<std::size_t>(experts));
  std::vector<int> order(static_cast<std::size_t>(experts)), group_order(groups);
  for (int t = 0; t < tokens; ++t) {
    for (float& v : score) v = uniform(rng);
    std::vector<float> group_score(static_cast<std::size_t>(groups));
    for (int g = 0; g < groups; ++g) {
      auto first = score.begin() + g * per_group;
      std::vector<float> in(first, first + per_group);
      std::partial_sort(in.begin(), in.begin() + 2, in.end(), std::greater<float>());
      group_score[static_cast<std::size_t>(g)] = in[0] + in[1];
    }
    std::iota(group_order.begin(), group_order.end(), 0);
    std::partial_sort(group_order.begin(), group_order.begin() + keep, group_order.end(),
                      [&](int a, int b) { return group_score[a] > group_score[b]; });
    std::vector<int> candidates;
    for (int k = 0; k < keep; ++k) {
      for (int e = 0; e < per_group; ++e) candidates.push_back(group_order[k] * per_group + e);
    }
    int const take = std::min<int>(top_k, static_cast<int>(candidates.size()));
    std::partial_sort(candidates.begin(), candidates.begin() + take, candidates.end(),
                      [&](int a, int b) { return score[a] > score[b]; });
    float sum = 0.0f;
    for (int j = 0; j < take; ++j) sum += score[static_cast<std::size_t>(candidates[j])];
    for (int j = 0; j < take; ++j) {
      ids[static_cast<std::size_t>(t * top_k + j)] = candidates[static_cast<std::size_t>(j)];
      weights[static_cast<std::size_t>(t * top_k + j)] =
          score[static_cast<std::size_t>(candidates[j])] / sum;
    }
  }
}

// The group's capacity per expert at `tokens` per rank: twice the mean, at least 8.
int group_capacity(int ranks, int tokens, int experts, int top_k) {
  double const mean = static_cast<double>(ranks) * tokens * top_k / experts;
  return std::max(8, static_cast<int>(2.0 * mean + 0.999));
}

// One row of the MoE group: its path, its name, whether its combine reads the expert outputs
// where the group holds them (the GEMM writing there), the most tokens it is made for (0:
// the tokens dispatched; an engine makes one group for its largest batch and decodes below it),
// and, on an NVFP4 wire, whether the tokens come as BF16 and are quantized inside the dispatch
// (an engine's natural call) instead of already NVFP4.
struct GroupRow {
  PathChoice path;
  const char* name;
  bool in_place = false;
  int max_tokens = 0;
  bool bf16_tokens = false;
};

MoeResult run_group(const Config& c, Ranks& ranks, int tokens, const GroupRow& row) {
  std::size_t const local = static_cast<std::size_t>(ranks.local());
  std::vector<double> dispatch(local), combine(local);
  Barrier barrier(ranks.local(), ranks.mpi);
  parallel(ranks, [&](int r) {
    auto& comm = ranks.comms[static_cast<std::size_t>(r)];
    cudaStream_t const s = ranks.streams[static_cast<std::size_t>(r)];
    MoeConfig cfg;
    cfg.num_experts = c.moe_experts;
    cfg.top_k = c.moe_topk;
    cfg.hidden = c.moe_hidden;
    int const most = std::max(tokens, row.max_tokens);
    cfg.max_tokens_per_rank = most;
    cfg.capacity = group_capacity(comm.size(), most, c.moe_experts, c.moe_topk);
    cfg.wire = c.moe_wire;
    cfg.combine_in_place = row.in_place;
    MoeGroup group(comm, cfg, s, row.path);
    Buffers b(*ranks.pools[static_cast<std::size_t>(r)]);
    std::size_t const count = static_cast<std::size_t>(most) * c.moe_hidden;
    ConstNvfp4View x{b.get(count / 2, false), b.get(count / 16, false), b.get<float>(4, false),
                     count};
    ConstBf16Span const x16{b.get<bf16>(count * 2, false), count};
    fill(s, const_cast<float*>(x.global_scale), 4, repeat(1.0f));
    // BF16 tokens of 1.0 (the FP8 and BF16 wires and the NVFP4 rows quantized in the dispatch
    // read them): finite values, as an engine's activations are.
    fill(s, const_cast<bf16*>(x16.data), x16.data_bytes(), repeat(std::uint16_t{0x3f80}));
    fill(s, const_cast<std::uint8_t*>(x.block_scales), count / 16, repeat(std::uint8_t{0x38}));
    std::vector<std::int32_t> ids;
    std::vector<float> weights;
    group_limited_routing(comm.rank(), most, c.moe_experts, c.moe_topk, ids, weights);
    auto* d_ids = b.get<std::int32_t>(ids.size() * 4, false);
    auto* d_weights = b.get<float>(weights.size() * 4, false);
    auto* d_tokens = b.get<std::int32_t>(4, false);
    support::upload_on(s, d_ids, ids);
    support::upload_on(s, d_weights, weights);
    support::upload_value_on(s, d_tokens, static_cast<std::int32_t>(tokens));
    std::size_t const out_rows = static_cast<std::size_t>(group.local_experts()) * cfg.capacity;
    auto* y =
        row.in_place ? group.buffers().expert_out : b.get<bf16>(out_rows * c.moe_hidden * 2, false);
    auto* out = b.get<bf16>(count * 2, false);
    fill(s, y, out_rows * c.moe_hidden * 2, repeat(std::uint16_t{0x3f80}));
    std::string const what = "moe-a2a " + std::string(row.name) + ", " + std::to_string(tokens) +
                             " tokens per rank on rank " + std::to_string(comm.rank());
    auto const run_dispatch = [&] {
      if (c.moe_wire != DataType::Nvfp4) {  // bf16 rows moved, or quantized per 128 (fp8)
        group.dispatch(x16, nullptr, d_ids, d_weights, d_tokens, s);
      } else if (row.bf16_tokens) {  // quantized to NVFP4 inside the dispatch
        group.dispatch(x16, x.global_scale, d_ids, d_weights, d_tokens, s);
      } else {
        group.dispatch(x, d_ids, d_weights, d_tokens, s);
      }
    };
    time_layer(
        c, barrier, s, run_dispatch, [&] { group.combine(y, out, s); }, what,
        dispatch[static_cast<std::size_t>(r)], combine[static_cast<std::size_t>(r)]);
    group.check(s);  // bad routing would have timed other work than this row says
  });
  return moe_result(c, ranks, tokens, row.name, dispatch, combine);
}

MoeResult run_alltoall(const Config& c, Ranks& ranks, int tokens) {
  std::size_t const local = static_cast<std::size_t>(ranks.local());
  std::vector<double> dispatch(local), combine(local);
  Barrier barrier(ranks.local(), ranks.mpi);
  parallel(ranks, [&](int r) {
    auto& comm = ranks.comms[static_cast<std::size_t>(r)];
    cudaStream_t const s = ranks.streams[static_cast<std::size_t>(r)];
    Buffers b(*ranks.pools[static_cast<std::size_t>(r)]);
    auto const n = static_cast<std::size_t>(comm.size());
    auto const h = static_cast<std::size_t>(c.moe_hidden);
    std::size_t const row = c.moe_wire == DataType::Bf16      ? h * 2
                            : c.moe_wire == DataType::Fp8E4M3 ? h + h / 128 * 4
                                                              : h / 2 + h / 16;
    std::size_t const rows = static_cast<std::size_t>(tokens);
    auto* send = b.get(rows * row * n, false);
    auto* recv = b.get(rows * row * n, false);
    auto* y_send = b.get(rows * c.moe_hidden * 2 * n, false);
    auto* y_recv = b.get(rows * c.moe_hidden * 2 * n, false);
    ncclComm_t const raw = comm.get();
    std::string const what = "moe-a2a nccl-alltoall, " + std::to_string(tokens) +
                             " tokens per rank on rank " + std::to_string(comm.rank());
    time_layer(
        c, barrier, s,
        [&] { SYMMCOMM_NCCL_TRY(ncclAlltoAll(send, recv, rows * row, ncclUint8, raw, s)); },
        [&] {
          SYMMCOMM_NCCL_TRY(
              ncclAlltoAll(y_send, y_recv, rows * c.moe_hidden, ncclBfloat16, raw, s));
        },
        what, dispatch[static_cast<std::size_t>(r)], combine[static_cast<std::size_t>(r)]);
  });
  return moe_result(c, ranks, tokens, "nccl-alltoall", dispatch, combine);
}

}  // namespace

std::vector<MoeResult> run_moe_a2a(const Config& c, Ranks& ranks) {
  std::vector<MoeResult> results;
  int const n = ranks.world();
  SYMMCOMM_EXPECTS(c.moe_experts % n == 0, "--moe-experts " << c.moe_experts
                                                            << " is not a multiple of the " << n
                                                            << " ranks");
  std::string why;
  bool const lsa = MoeGroup::supported(ranks.comms[0], &why);
  if (!lsa && ranks.prints()) {
    std::fprintf(stderr, "[symmcomm-bench] moe-a2a: no moe-group-lsa rows: %s\n", why.c_str());
  }
  for (int tokens = c.moe_min_tokens; tokens <= c.moe_max_tokens; tokens *= 2) {
    if (ranks.prints()) {
      std::fprintf(stderr, "[symmcomm-bench] moe-a2a: %d tokens per rank\n", tokens);
    }
    if (lsa) {
      results.push_back(run_group(c, ranks, tokens, {PathChoice::LsaKernel, "moe-group-lsa"}));
      results.push_back(
          run_group(c, ranks, tokens, {PathChoice::LsaKernel, "moe-lsa-in-place", true}));
      if (c.moe_wire == DataType::Nvfp4) {
        results.push_back(run_group(
            c, ranks, tokens, {PathChoice::LsaKernel, "moe-lsa-in-place-bf16", true, 0, true}));
      }
      if (tokens < c.moe_max_tokens) {
        results.push_back(run_group(
            c, ranks, tokens, {PathChoice::LsaKernel, "moe-lsa-at-max", false, c.moe_max_tokens}));
      }
    }
    results.push_back(run_group(c, ranks, tokens, {PathChoice::Fallback, "moe-group-fallback"}));
    MoeResult ag_rs = run_moe_padded(c, ranks, tokens, BenchPath::Auto);
    ag_rs.path = "ag-rs";
    results.push_back(ag_rs);
    results.push_back(run_alltoall(c, ranks, tokens));
  }
  return results;
}

}  // namespace symmcomm::bench
