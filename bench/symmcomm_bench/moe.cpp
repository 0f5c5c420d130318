// symmcomm-bench's moe-dp scenario: the communication of one DP-attention + expert-parallel
// MoE layer of DeepSeek-R1 (NVFP4 dispatch all-gather with routing tensors, reduce-scatter
// combine), per tokens-per-rank value and path, and the same layer with uneven tokens whose
// counts are on the device ("device-counts" rows: NCCL's path, capacity = the row's tokens per
// rank; "device-counts-lsa": the dispatch in symmcomm's one-launch LSA kernel, where it can run).

#include <nccl.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bench_support.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/ragged.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/comm/group.hpp"

namespace symmcomm::bench {

namespace {

// Times one rank's dispatch and combine into its slots of `dispatch` / `combine`, then waits for
// the other ranks.
void time_layer(const Config& c, Barrier& barrier, cudaStream_t s,
                const std::function<void()>& run_dispatch, const std::function<void()>& run_combine,
                const std::string& what, double& dispatch_us, double& combine_us) {
  dispatch_us = time_iterations(s, barrier, Timing::of(c), run_dispatch, what + " (dispatch)");
  combine_us = time_iterations(s, barrier, Timing::of(c), run_combine, what + " (combine)");
  SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(s));
  barrier.wait();
}

// The row of one layer's timings over the ranks.
MoeResult moe_result(const Config& c, Ranks& ranks, int tokens, std::string path,
                     const std::vector<double>& dispatch, const std::vector<double>& combine) {
  MoeResult m;
  m.tokens_per_rank = tokens;
  m.path = std::move(path);
  m.dispatch_us = combine_times(ranks, dispatch, c.average);
  m.combine_us = combine_times(ranks, combine, c.average);
  return m;
}

// DP attention's uneven tokens with the counts on the device (ragged.hpp): rank r holds
// `capacity` - (r % 4) x capacity / 4 tokens (100, 75, 50, 25% of the capacity), the dispatch
// gathers the NVFP4 activations with the routing tensors as row items, the combine
// reduce-scatters each rank's own rows back; one captured graph would serve any counts.
// `lsa`: the dispatch through symmcomm's one-launch LSA kernel (Options::path = LsaKernel; the
// combine has no such kernel and stays on the fallback).
MoeResult run_moe_device_counts(const Config& c, Ranks& ranks, int capacity, bool lsa) {
  int const n = ranks.world();
  std::size_t const local = static_cast<std::size_t>(ranks.local());
  std::size_t const hidden = static_cast<std::size_t>(c.moe_hidden);
  std::size_t const topk = static_cast<std::size_t>(c.moe_topk);
  auto const cap = static_cast<std::size_t>(capacity);
  std::size_t const count = cap * hidden;  // room per rank
  std::vector<double> dispatch(local), combine(local);
  Barrier barrier(ranks.local(), ranks.mpi);
  parallel(ranks, [&](int r) {
    auto& comm = ranks.comms[static_cast<std::size_t>(r)];
    cudaStream_t const s = ranks.streams[static_cast<std::size_t>(r)];
    Buffers b(*ranks.pools[static_cast<std::size_t>(r)]);
    Nvfp4View const send{b.get(count / 2, true), b.get(count / 16, true), b.get<float>(4, true),
                         count};
    Nvfp4View const recv{b.get(count / 2 * n, true), b.get(count / 16 * n, true),
                         b.get<float>(4 * n, true), count * n};
    std::size_t const route_row = topk * 4;
    auto* ids = b.get(cap * route_row, true);
    auto* ids_all = b.get(cap * route_row * n, true);
    auto* weights = b.get(cap * route_row, true);
    auto* weights_all = b.get(cap * route_row * n, true);
    // The counts array is written by peers on the LSA path: in the pool's window there.
    auto* ints = b.get<std::int32_t>(sizeof(std::int32_t) * (2 * n + 2), lsa);
    std::int32_t const mine = capacity - (comm.rank() % 4) * capacity / 4;
    fill(s, ints, 1, repeat(mine));
    fill(s, ints + 1, 1, repeat(std::int32_t{0}));
    fill(s, send.global_scale, 4, repeat(1.0f));
    fill(s, send.block_scales, count / 16, repeat(std::uint8_t{0x38}));
    DeviceCounts const dc{ints, cap, ints + 2, ints + 2 + n, ints + 1};
    std::vector<RowItem> const items{RowItem{ids, ids_all, route_row, "topk_ids"},
                                     RowItem{weights, weights_all, route_row, "topk_weights"}};
    Options dispatch_options;
    dispatch_options.path = lsa ? PathChoice::LsaKernel : PathChoice::Fallback;
    std::function<void()> run_dispatch = [&] {
      all_gatherv(comm, send, recv, hidden, items, dc, s, dispatch_options);
    };
    auto* combined = b.get<bf16>(count * 2, true);
    std::function<void()> run_combine;
    if (c.moe_combine == Dtype::Nvfp4) {
      Nvfp4View const partial{b.get(count * n / 2, true), b.get(count * n / 16, true),
                              b.get<float>(4, true), count * n};
      fill(s, partial.global_scale, 4, repeat(1.0f));
      fill(s, partial.block_scales, count * n / 16, repeat(std::uint8_t{0x38}));
      run_combine = [&, partial] {
        reduce_scatterv(comm, partial, Bf16Span{combined, count}, hidden, dc, s);
      };
    } else {
      auto* partial = b.get<bf16>(count * n * 2, true);
      run_combine = [&, partial] {
        reduce_scatterv(comm, Bf16Span{partial, count * n}, Bf16Span{combined, count}, hidden, dc,
                        s);
      };
    }
    std::string const what = "moe-dp device counts, capacity " + std::to_string(capacity) +
                             " on rank " + std::to_string(comm.rank());
    time_layer(c, barrier, s, run_dispatch, run_combine, what,
               dispatch[static_cast<std::size_t>(r)], combine[static_cast<std::size_t>(r)]);
  });
  return moe_result(c, ranks, capacity, lsa ? "device-counts-lsa" : "device-counts", dispatch,
                    combine);
}

}  // namespace

std::vector<MoeResult> run_moe(const Config& c, Ranks& ranks) {
  std::vector<MoeResult> results;
  int const n = ranks.world();
  std::size_t const local = static_cast<std::size_t>(ranks.local());
  std::size_t const hidden = static_cast<std::size_t>(c.moe_hidden);
  std::size_t const topk = static_cast<std::size_t>(c.moe_topk);
  for (int tokens = 1; tokens <= c.moe_max_tokens; tokens *= 2) {
    for (BenchPath path : {BenchPath::Auto, BenchPath::Fallback, BenchPath::Nccl}) {
      if (ranks.prints()) {
        std::fprintf(stderr, "[symmcomm-bench] moe-dp: %d tokens per rank, %s\n", tokens,
                     to_string(path));
      }
      std::size_t const count = static_cast<std::size_t>(tokens) * hidden;  // per rank
      std::vector<double> dispatch(local), combine(local);
      Barrier barrier(ranks.local(), ranks.mpi);
      parallel(ranks, [&](int r) {
        auto& comm = ranks.comms[static_cast<std::size_t>(r)];
        cudaStream_t const s = ranks.streams[static_cast<std::size_t>(r)];
        bool const sym = path != BenchPath::Nccl;
        Buffers b(*ranks.pools[static_cast<std::size_t>(r)]);
        Nvfp4View const send{b.get(count / 2, sym), b.get(count / 16, sym), b.get<float>(4, sym),
                             count};
        Nvfp4View const recv{b.get(count / 2 * n, sym), b.get(count / 16 * n, sym),
                             b.get<float>(4 * n, sym), count * n};
        std::size_t const route_bytes = static_cast<std::size_t>(tokens) * topk * 4;
        auto* ids = b.get(route_bytes, sym);
        auto* ids_all = b.get(route_bytes * n, sym);
        auto* weights = b.get(route_bytes, sym);
        auto* weights_all = b.get(route_bytes * n, sym);
        fill(s, send.global_scale, 4, repeat(1.0f));
        fill(s, send.block_scales, count / 16, repeat(std::uint8_t{0x38}));
        Options options;
        options.path = path == BenchPath::Fallback ? PathChoice::Fallback : PathChoice::Auto;
        ncclComm_t const raw = comm.get();
        std::function<void()> run_dispatch = [&] {
          if (path == BenchPath::Nccl) {
            Group g;
            SYMMCOMM_NCCL_TRY(ncclAllGather(send.data, recv.data, count / 2, ncclUint8, raw, s));
            SYMMCOMM_NCCL_TRY(
                ncclAllGather(send.block_scales, recv.block_scales, count / 16, ncclUint8, raw, s));
            SYMMCOMM_NCCL_TRY(
                ncclAllGather(send.global_scale, recv.global_scale, 1, ncclFloat32, raw, s));
            SYMMCOMM_NCCL_TRY(ncclAllGather(ids, ids_all, route_bytes, ncclUint8, raw, s));
            SYMMCOMM_NCCL_TRY(ncclAllGather(weights, weights_all, route_bytes, ncclUint8, raw, s));
          } else {
            all_gather(comm, send, recv,
                       {GatherItem{ids, ids_all, route_bytes, "topk_ids"},
                        GatherItem{weights, weights_all, route_bytes, "topk_weights"}},
                       s, options);
          }
        };
        // Combine: every rank holds outputs for all gathered tokens and reduce-scatters them.
        std::function<void()> run_combine;
        auto* combined = b.get<bf16>(count * 2, sym);
        if (c.moe_combine == Dtype::Nvfp4 && path != BenchPath::Nccl) {
          Nvfp4View const partial{b.get(count * n / 2, sym), b.get(count * n / 16, sym),
                                  b.get<float>(4, sym), count * n};
          fill(s, partial.global_scale, 4, repeat(1.0f));
          fill(s, partial.block_scales, count * n / 16, repeat(std::uint8_t{0x38}));
          run_combine = [&, partial] {
            reduce_scatter(comm, partial, Bf16Span{combined, count}, s, options);
          };
        } else {
          auto* partial = b.get<bf16>(count * n * 2, sym);
          run_combine = [&, partial] {
            if (path == BenchPath::Nccl) {
              SYMMCOMM_NCCL_TRY(
                  ncclReduceScatter(partial, combined, count, ncclBfloat16, ncclSum, raw, s));
            } else {
              reduce_scatter(comm, Bf16Span{partial, count * n}, Bf16Span{combined, count}, s,
                             options);
            }
          };
        }
        std::string const what = "moe-dp " + std::to_string(tokens) + " tokens per rank on rank " +
                                 std::to_string(comm.rank());
        time_layer(c, barrier, s, run_dispatch, run_combine, what,
                   dispatch[static_cast<std::size_t>(r)], combine[static_cast<std::size_t>(r)]);
      });
      results.push_back(moe_result(c, ranks, tokens, to_string(path), dispatch, combine));
    }
    // Uneven tokens with the counts on the device (capacity = this row's tokens per rank).
    if (tokens >= 4) {
      if (ranks.prints()) {
        std::fprintf(stderr,
                     "[symmcomm-bench] moe-dp: capacity %d tokens per rank, device counts\n",
                     tokens);
      }
      results.push_back(run_moe_device_counts(c, ranks, tokens, false));
      if (ranks.comms[0].capabilities().lsa_covers(n)) {
        results.push_back(run_moe_device_counts(c, ranks, tokens, true));
      }
    }
  }
  return results;
}

}  // namespace symmcomm::bench
