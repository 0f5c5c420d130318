// symmcomm-bench's moe-dp scenario: the communication of one DP-attention + expert-parallel
// MoE layer of DeepSeek-R1 (NVFP4 dispatch all-gather with routing tensors, reduce-scatter
// combine), per tokens-per-rank value and path (every rank at the row's tokens: what padding to
// that capacity moves), and the same layer with uneven tokens at that capacity: "host-counts"
// (all_gatherv / reduce_scatterv with host counts), "device-counts" (counts on the device,
// NCCL's path: the counts array lies outside any window), "device-counts-lsa" (the counts array
// in the pool's window: the dispatch and, for a BF16 combine, the combine in symmcomm's
// one-launch LSA kernels).

#include <nccl.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bench_support.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/device_counts.hpp"
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

// How the uneven layer's dispatch gets its counts.
enum class Uneven {
  HostCounts,       // NCCL's all_gatherv with host counts (activations, ids, weights)
  DeviceCounts,     // device counts, NCCL's path (counts, data at capacity, compaction)
  DeviceCountsLsa,  // device counts, symmcomm's one-launch LSA kernel
};

const char* to_string(Uneven u) {
  switch (u) {
    case Uneven::HostCounts:
      return "host-counts";
    case Uneven::DeviceCounts:
      return "device-counts";
    case Uneven::DeviceCountsLsa:
      return "device-counts-lsa";
  }
  return "?";
}

// Rank r's tokens in the uneven layer: 100, 75, 50, 25% of the capacity (r % 4).
std::size_t uneven_tokens(int rank, int capacity) {
  return static_cast<std::size_t>(capacity - (rank % 4) * capacity / 4);
}

// After a device-count layer: every rank's count as the dispatch gathered it must be the one
// that rank was given, and nothing overflowed - else the row timed other work than it says.
void expect_gathered_counts(cudaStream_t s, const DeviceCounts& dc,
                            const std::vector<std::size_t>& rows, const std::string& what) {
  auto const counts = support::download_on<std::int32_t>(s, dc.counts, rows.size());
  auto const overflow = support::download_on<std::int32_t>(s, dc.overflow, 1);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    SYMMCOMM_EXPECTS(counts[r] == static_cast<std::int32_t>(rows[r]),
                     what << ": the dispatch gathered " << counts[r] << " rows for rank " << r
                          << ", which holds " << rows[r]);
  }
  SYMMCOMM_EXPECTS(overflow[0] == 0, what << ": a count over the capacity was reported");
}

// DP attention's uneven tokens (uneven_tokens): the dispatch gathers the NVFP4 activations with
// the routing tensors, the combine reduce-scatters each rank's own rows back. With device
// counts (device_counts.hpp) the routing tensors are row items of the same call and one captured
// graph would serve any counts; with host counts every rank knows every count on the host (what a
// graph would freeze), and the routing tensors go in calls of their own.
MoeResult run_moe_uneven(const Config& c, Ranks& ranks, int capacity, Uneven how) {
  int const n = ranks.world();
  std::size_t const local = static_cast<std::size_t>(ranks.local());
  std::size_t const hidden = static_cast<std::size_t>(c.moe_hidden);
  std::size_t const topk = static_cast<std::size_t>(c.moe_topk);
  auto const cap = static_cast<std::size_t>(capacity);
  std::size_t const count = cap * hidden;  // room per rank
  std::size_t const route_row = topk * 4;
  bool const lsa = how == Uneven::DeviceCountsLsa;
  std::vector<std::size_t> rows(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) rows[static_cast<std::size_t>(r)] = uneven_tokens(r, capacity);
  auto const scaled = [&](std::size_t per_row) {
    std::vector<std::size_t> v(rows);
    for (auto& x : v) x *= per_row;
    return v;
  };
  std::vector<std::size_t> const elements = scaled(hidden);
  std::vector<std::size_t> const route_halves = scaled(route_row / 2);  // as bf16 elements
  std::vector<double> dispatch(local), combine(local);
  Barrier barrier(ranks.local(), ranks.mpi);
  parallel(ranks, [&](int r) {
    auto& comm = ranks.comms[static_cast<std::size_t>(r)];
    cudaStream_t const s = ranks.streams[static_cast<std::size_t>(r)];
    std::size_t const mine = rows[static_cast<std::size_t>(comm.rank())];
    Buffers b(*ranks.pools[static_cast<std::size_t>(r)]);
    Nvfp4View const send{b.get(count / 2, true), b.get(count / 16, true), b.get<float>(4, true),
                         how == Uneven::HostCounts ? mine * hidden : count};
    Nvfp4View recv{b.get(count / 2 * n, true), b.get(count / 16 * n, true),
                   b.get<float>(4 * n, true), count * n};
    auto* ids = b.get(cap * route_row, true);
    auto* ids_all = b.get(cap * route_row * n, true);
    auto* weights = b.get(cap * route_row, true);
    auto* weights_all = b.get(cap * route_row * n, true);
    // The counts array is written by peers on the LSA path: in the pool's window there.
    auto* ints = b.get<std::int32_t>(sizeof(std::int32_t) * (2 * n + 2), lsa);
    support::upload_value_on(s, ints, static_cast<std::int32_t>(mine));
    support::upload_value_on(s, ints + 1, std::int32_t{0});
    fill(s, send.global_scale, 4, repeat(1.0f));
    fill(s, send.block_scales, count / 16, repeat(std::uint8_t{0x38}));
    DeviceCounts const dc{ints, cap, ints + 2, ints + 2 + n, ints + 1};
    std::vector<RowItem> const items{RowItem{ids, ids_all, route_row, "topk_ids"},
                                     RowItem{weights, weights_all, route_row, "topk_weights"}};
    Options dispatch_options;
    dispatch_options.path = lsa ? PathChoice::LsaKernel : PathChoice::Fallback;
    // Host counts: NCCL's all_gatherv (a broadcast per rank), what engines call today. Also
    // keeps one phase's kernels of one kind: ranks sharing a GPU in one process must not spin in
    // symmcomm's kernels while a peer waits for room for NCCL's (bench_support.hpp).
    Options nccl_path;
    nccl_path.path = PathChoice::Fallback;
    std::size_t total_rows = 0;
    for (std::size_t x : rows) total_rows += x;
    if (how == Uneven::HostCounts) recv.count = total_rows * hidden;
    std::function<void()> run_dispatch = [&] {
      if (how == Uneven::HostCounts) {
        all_gatherv(comm, send, recv, elements, s, nccl_path);
        all_gatherv(comm, Bf16Span{reinterpret_cast<bf16*>(ids), mine * route_row / 2},
                    Bf16Span{reinterpret_cast<bf16*>(ids_all), total_rows * route_row / 2},
                    route_halves, s, nccl_path);
        all_gatherv(comm, Bf16Span{reinterpret_cast<bf16*>(weights), mine * route_row / 2},
                    Bf16Span{reinterpret_cast<bf16*>(weights_all), total_rows * route_row / 2},
                    route_halves, s, nccl_path);
      } else {
        all_gatherv(comm, send, recv, hidden, items, dc, s, dispatch_options);
      }
    };
    auto* combined = b.get<bf16>(count * 2, true);
    Bf16Span const out{combined, how == Uneven::HostCounts ? mine * hidden : count};
    std::function<void()> run_combine;
    if (c.moe_combine == DataType::Nvfp4) {
      Nvfp4View const partial{b.get(count * n / 2, true), b.get(count * n / 16, true),
                              b.get<float>(4, true),
                              how == Uneven::HostCounts ? total_rows * hidden : count * n};
      fill(s, partial.global_scale, 4, repeat(1.0f));
      fill(s, partial.block_scales, count * n / 16, repeat(std::uint8_t{0x38}));
      run_combine = [&, partial] {
        if (how == Uneven::HostCounts) {
          reduce_scatterv(comm, partial, out, elements, s, nccl_path);
        } else {
          reduce_scatterv(comm, partial, out, hidden, dc, s);
        }
      };
    } else {
      auto* partial = b.get<bf16>(count * n * 2, true);
      run_combine = [&, partial] {
        if (how == Uneven::HostCounts) {
          reduce_scatterv(comm, Bf16Span{partial, total_rows * hidden}, out, elements, s,
                          nccl_path);
        } else {
          reduce_scatterv(comm, Bf16Span{partial, count * n}, out, hidden, dc, s);
        }
      };
    }
    std::string const what = std::string("moe-dp ") + to_string(how) + ", capacity " +
                             std::to_string(capacity) + " on rank " + std::to_string(comm.rank());
    time_layer(c, barrier, s, run_dispatch, run_combine, what,
               dispatch[static_cast<std::size_t>(r)], combine[static_cast<std::size_t>(r)]);
    if (how != Uneven::HostCounts) expect_gathered_counts(s, dc, rows, what);
  });
  return moe_result(c, ranks, capacity, to_string(how), dispatch, combine);
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
        if (c.moe_combine == DataType::Nvfp4 && path != BenchPath::Nccl) {
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
                     "[symmcomm-bench] moe-dp: capacity %d tokens per rank, uneven (host and "
                     "device counts)\n",
                     tokens);
      }
      results.push_back(run_moe_uneven(c, ranks, tokens, Uneven::HostCounts));
      results.push_back(run_moe_uneven(c, ranks, tokens, Uneven::DeviceCounts));
      if (ranks.comms[0].capabilities().lsa_covers(n)) {
        results.push_back(run_moe_uneven(c, ranks, tokens, Uneven::DeviceCountsLsa));
      }
    }
  }
  return results;
}

}  // namespace symmcomm::bench
