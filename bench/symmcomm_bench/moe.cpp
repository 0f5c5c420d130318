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
#include "runner.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/device_counts.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/comm/group.hpp"

namespace symmcomm::bench {

namespace {

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

// One rank's layer: the dispatch and the combine, ready to time.
struct Layer {
  std::function<void()> dispatch, combine;
};

// The padded layer at `tokens` per rank on `path`: every rank at the row's tokens (what padding
// to that capacity moves). Plain NCCL gathers the tensors in one group; symmcomm gathers them in
// one call with the routing tensors as extra items.
Layer padded_layer(const Config& c, Communicator& comm, cudaStream_t s, Buffers& b, int tokens,
                   BenchPath path) {
  auto const n = static_cast<std::size_t>(comm.size());
  std::size_t const count =
      static_cast<std::size_t>(tokens) * static_cast<std::size_t>(c.moe_hidden);
  bool const sym = path != BenchPath::Nccl;
  Nvfp4View const send{b.get(count / 2, sym), b.get(count / 16, sym), b.get<float>(4, sym), count};
  Nvfp4View const recv{b.get(count / 2 * n, sym), b.get(count / 16 * n, sym),
                       b.get<float>(4 * n, sym), count * n};
  std::size_t const route_bytes = static_cast<std::size_t>(tokens * c.moe_topk) * 4;
  auto* ids = b.get(route_bytes, sym);
  auto* ids_all = b.get(route_bytes * n, sym);
  auto* weights = b.get(route_bytes, sym);
  auto* weights_all = b.get(route_bytes * n, sym);
  fill(s, send.global_scale, 4, repeat(1.0f));
  fill(s, send.block_scales, count / 16, repeat(std::uint8_t{0x38}));
  Options options;
  options.path = path == BenchPath::Fallback ? PathChoice::Fallback : PathChoice::Auto;
  ncclComm_t const raw = comm.get();
  Layer layer;
  layer.dispatch = [=, &comm] {
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
  Bf16Span const out{b.get<bf16>(count * 2, sym), count};
  if (c.moe_combine == DataType::Nvfp4 && path != BenchPath::Nccl) {
    Nvfp4View const partial{b.get(count * n / 2, sym), b.get(count * n / 16, sym),
                            b.get<float>(4, sym), count * n};
    fill(s, partial.global_scale, 4, repeat(1.0f));
    fill(s, partial.block_scales, count * n / 16, repeat(std::uint8_t{0x38}));
    layer.combine = [=, &comm] { reduce_scatter(comm, partial, out, s, options); };
  } else {
    Bf16Span const partial{b.get<bf16>(count * n * 2, sym), count * n};
    layer.combine = [=, &comm] {
      if (path == BenchPath::Nccl) {
        SYMMCOMM_NCCL_TRY(
            ncclReduceScatter(partial.data, out.data, count, ncclBfloat16, ncclSum, raw, s));
      } else {
        reduce_scatter(comm, partial, out, s, options);
      }
    };
  }
  return layer;
}

// The shapes of the uneven layer at one capacity: every rank's rows and what they make.
struct UnevenShape {
  Uneven how;
  std::size_t hidden = 0, cap = 0, count = 0, route_row = 0, total_rows = 0;
  std::vector<std::size_t> rows, elements, route_halves;
};

UnevenShape uneven_shape(const Config& c, int n, int capacity, Uneven how) {
  UnevenShape u;
  u.how = how;
  u.hidden = static_cast<std::size_t>(c.moe_hidden);
  u.cap = static_cast<std::size_t>(capacity);
  u.count = u.cap * u.hidden;  // room per rank
  u.route_row = static_cast<std::size_t>(c.moe_topk) * 4;
  for (int r = 0; r < n; ++r) {
    u.rows.push_back(uneven_tokens(r, capacity));
    u.total_rows += u.rows.back();
    u.elements.push_back(u.rows.back() * u.hidden);
    u.route_halves.push_back(u.rows.back() * u.route_row / 2);  // as bf16 elements
  }
  return u;
}

// The uneven dispatch: host counts through NCCL's all_gatherv (activations, ids and weights in
// calls of their own: what engines call today), or device counts in one call with the routing
// tensors as row items (NCCL's path, or symmcomm's one-launch LSA kernel).
std::function<void()> uneven_dispatch(Communicator& comm, cudaStream_t s, Buffers& b,
                                      const UnevenShape& u, const DeviceCounts& dc) {
  auto const n = static_cast<std::size_t>(comm.size());
  std::size_t const mine = u.rows[static_cast<std::size_t>(comm.rank())];
  bool const host = u.how == Uneven::HostCounts;
  Nvfp4View const send{b.get(u.count / 2, true), b.get(u.count / 16, true), b.get<float>(4, true),
                       host ? mine * u.hidden : u.count};
  Nvfp4View const recv{b.get(u.count / 2 * n, true), b.get(u.count / 16 * n, true),
                       b.get<float>(4 * n, true), host ? u.total_rows * u.hidden : u.count * n};
  auto* ids = b.get(u.cap * u.route_row, true);
  auto* ids_all = b.get(u.cap * u.route_row * n, true);
  auto* weights = b.get(u.cap * u.route_row, true);
  auto* weights_all = b.get(u.cap * u.route_row * n, true);
  fill(s, send.global_scale, 4, repeat(1.0f));
  fill(s, send.block_scales, u.count / 16, repeat(std::uint8_t{0x38}));
  // Host counts keep one phase's kernels of one kind: ranks sharing a GPU in one process must
  // not spin in symmcomm's kernels while a peer waits for room for NCCL's (bench_support.hpp).
  Options options;
  options.path = u.how == Uneven::DeviceCountsLsa ? PathChoice::LsaKernel : PathChoice::Fallback;
  std::vector<RowItem> const items{RowItem{ids, ids_all, u.route_row, "topk_ids"},
                                   RowItem{weights, weights_all, u.route_row, "topk_weights"}};
  std::size_t const half_row = u.route_row / 2;
  return [=, &comm] {
    if (!host) {
      all_gatherv(comm, send, recv, u.hidden, items, dc, s, options);
      return;
    }
    all_gatherv(comm, send, recv, u.elements, s, options);
    all_gatherv(comm, Bf16Span{reinterpret_cast<bf16*>(ids), mine * half_row},
                Bf16Span{reinterpret_cast<bf16*>(ids_all), u.total_rows * half_row}, u.route_halves,
                s, options);
    all_gatherv(comm, Bf16Span{reinterpret_cast<bf16*>(weights), mine * half_row},
                Bf16Span{reinterpret_cast<bf16*>(weights_all), u.total_rows * half_row},
                u.route_halves, s, options);
  };
}

// The uneven combine: each rank's own rows reduce-scattered back (host counts on NCCL's path,
// device counts on Auto's choice), from BF16 or NVFP4 partial outputs. Device counts reuse the
// counts the dispatch gathered (count null), as an engine's combine does.
std::function<void()> uneven_combine(const Config& c, Communicator& comm, cudaStream_t s,
                                     Buffers& b, const UnevenShape& u, DeviceCounts dc) {
  dc.count = nullptr;
  auto const n = static_cast<std::size_t>(comm.size());
  std::size_t const mine = u.rows[static_cast<std::size_t>(comm.rank())];
  bool const host = u.how == Uneven::HostCounts;
  Bf16Span const out{b.get<bf16>(u.count * 2, true), host ? mine * u.hidden : u.count};
  Options nccl_path;
  nccl_path.path = PathChoice::Fallback;
  std::size_t const in_count = host ? u.total_rows * u.hidden : u.count * n;
  if (c.moe_combine == DataType::Nvfp4) {
    Nvfp4View const partial{b.get(u.count * n / 2, true), b.get(u.count * n / 16, true),
                            b.get<float>(4, true), in_count};
    fill(s, partial.global_scale, 4, repeat(1.0f));
    fill(s, partial.block_scales, u.count * n / 16, repeat(std::uint8_t{0x38}));
    return [=, &comm] {
      if (host) {
        reduce_scatterv(comm, partial, out, u.elements, s, nccl_path);
      } else {
        reduce_scatterv(comm, partial, out, u.hidden, dc, s);
      }
    };
  }
  Bf16Span const partial{b.get<bf16>(u.count * n * 2, true), in_count};
  return [=, &comm] {
    if (host) {
      reduce_scatterv(comm, partial, out, u.elements, s, nccl_path);
    } else {
      reduce_scatterv(comm, partial, out, u.hidden, dc, s);
    }
  };
}

// DP attention's uneven tokens (uneven_tokens) at `capacity`: the dispatch gathers the NVFP4
// activations with the routing tensors, the combine reduce-scatters each rank's own rows back.
// With device counts (device_counts.hpp) one captured graph would serve any counts; with host
// counts every rank knows every count on the host (what a graph would freeze).
MoeResult run_moe_uneven(const Config& c, Ranks& ranks, int capacity, Uneven how) {
  int const n = ranks.world();
  std::size_t const local = static_cast<std::size_t>(ranks.local());
  UnevenShape const u = uneven_shape(c, n, capacity, how);
  std::vector<double> dispatch(local), combine(local);
  Barrier barrier(ranks.local(), ranks.mpi);
  parallel(ranks, [&](int r) {
    auto& comm = ranks.comms[static_cast<std::size_t>(r)];
    cudaStream_t const s = ranks.streams[static_cast<std::size_t>(r)];
    Buffers b(*ranks.pools[static_cast<std::size_t>(r)]);
    // The counts array is written by peers on the LSA path: in the pool's window there.
    auto* ints =
        b.get<std::int32_t>(sizeof(std::int32_t) * (2 * n + 2), how == Uneven::DeviceCountsLsa);
    support::upload_value_on(
        s, ints, static_cast<std::int32_t>(u.rows[static_cast<std::size_t>(comm.rank())]));
    support::upload_value_on(s, ints + 1, std::int32_t{0});
    DeviceCounts const dc{ints, u.cap, ints + 2, ints + 2 + n, ints + 1};
    std::function<void()> const run_dispatch = uneven_dispatch(comm, s, b, u, dc);
    std::function<void()> const run_combine = uneven_combine(c, comm, s, b, u, dc);
    std::string const what = std::string("moe-dp ") + to_string(how) + ", capacity " +
                             std::to_string(capacity) + " on rank " + std::to_string(comm.rank());
    time_layer(c, barrier, s, run_dispatch, run_combine, what,
               dispatch[static_cast<std::size_t>(r)], combine[static_cast<std::size_t>(r)]);
    if (how != Uneven::HostCounts) expect_gathered_counts(s, dc, u.rows, what);
  });
  return moe_result(c, ranks, capacity, to_string(how), dispatch, combine);
}

}  // namespace

MoeResult run_moe_padded(const Config& c, Ranks& ranks, int tokens, BenchPath path) {
  std::size_t const local = static_cast<std::size_t>(ranks.local());
  std::vector<double> dispatch(local), combine(local);
  Barrier barrier(ranks.local(), ranks.mpi);
  parallel(ranks, [&](int r) {
    auto& comm = ranks.comms[static_cast<std::size_t>(r)];
    cudaStream_t const s = ranks.streams[static_cast<std::size_t>(r)];
    Buffers b(*ranks.pools[static_cast<std::size_t>(r)]);
    Layer const layer = padded_layer(c, comm, s, b, tokens, path);
    std::string const what = "moe-dp " + std::to_string(tokens) + " tokens per rank on rank " +
                             std::to_string(comm.rank());
    time_layer(c, barrier, s, layer.dispatch, layer.combine, what,
               dispatch[static_cast<std::size_t>(r)], combine[static_cast<std::size_t>(r)]);
  });
  return moe_result(c, ranks, tokens, to_string(path), dispatch, combine);
}

std::vector<MoeResult> run_moe(const Config& c, Ranks& ranks) {
  std::vector<MoeResult> results;
  int const n = ranks.world();
  for (int tokens = c.moe_min_tokens; tokens <= c.moe_max_tokens; tokens *= 2) {
    for (BenchPath path : {BenchPath::Auto, BenchPath::Fallback, BenchPath::Nccl}) {
      if (ranks.prints()) {
        std::fprintf(stderr, "[symmcomm-bench] moe-dp: %d tokens per rank, %s\n", tokens,
                     to_string(path));
      }
      results.push_back(run_moe_padded(c, ranks, tokens, path));
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
