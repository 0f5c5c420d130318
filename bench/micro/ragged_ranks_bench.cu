// DP attention's ragged gather three ways, side by side over N real NCCL ranks sharing this
// process's GPU (NCCL >= 2.30, NCCL_MULTI_RANK_GPU_ENABLE=1; skipped otherwise, saying why):
// NVFP4 rows of 7168 elements (a DeepSeek-class hidden size), per-rank token counts Zipf-like
// around a mean (64, 256, 1024), capacity twice the mean.
//
// BM_RaggedGather, variant (third argument):
//   0  counts on the device on NCCL's path (Options::path = Fallback: every rank's rows at
//      capacity through NCCL, then compaction; symmcomm/collectives/device_counts.hpp);
//   1  padded to capacity: all_gather of capacity rows per rank (what engines do to keep one
//      graph), the path symmcomm picks for pool buffers;
//   2  host counts: all_gatherv with the counts as a host vector (a graph per count pattern);
//   3  counts on the device through symmcomm's one-launch LSA kernel (Options::path =
//      LsaKernel, Auto's choice where it runs; the counts arrays in the pool's windows): only
//      the counted rows move.
// Variants 0 and 3 are what one captured graph serves for every step's counts.
// Fourth argument: 1 = the calls captured in one CUDA graph per rank and replayed (variants 0,
// 1 and 3; 2 cannot replay with other counts and is eager only). Time per call, the slowest
// rank's, host launch cost excluded (rank_world.hpp); counters: rows gathered, bytes the counts
// need, and bytes moved at capacity.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "micro/rank_world.hpp"
#include "support/ordered_copy.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/device_counts.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm::bench {
namespace {

constexpr std::size_t kHidden = 7168;
constexpr int kCalls = 10;  // calls per rank per timed iteration (and per captured graph)

// Zipf-like counts (weights 1/(r+1)^0.8) scaled to `mean` on average, at most `capacity`.
std::vector<std::int32_t> zipf_counts(int ranks, std::size_t mean, std::size_t capacity) {
  std::vector<double> w;
  double sum = 0;
  for (int r = 0; r < ranks; ++r) {
    w.push_back(1.0 / std::pow(r + 1.0, 0.8));
    sum += w.back();
  }
  std::vector<std::int32_t> c;
  for (int r = 0; r < ranks; ++r) {
    double const x = static_cast<double>(mean) * ranks * w[static_cast<std::size_t>(r)] / sum;
    c.push_back(static_cast<std::int32_t>(std::min<double>(std::round(x), capacity)));
  }
  return c;
}

void BM_RaggedGather(benchmark::State& state) {
  RankWorld* const w = world_or_skip(state);
  if (w == nullptr) return;
  auto const mean = static_cast<std::size_t>(state.range(1));
  int const variant = static_cast<int>(state.range(2));
  bool const graph = state.range(3) != 0;
  auto const n = static_cast<std::size_t>(w->size());
  std::size_t const capacity = 2 * mean;
  auto const counts = zipf_counts(w->size(), mean, capacity);
  std::size_t const cap_elems = capacity * kHidden;
  RankBuffers b(*w);
  auto const data = b.get(cap_elems / 2, true), scales = b.get(cap_elems / 16, true),
             global = b.get(4, true);
  auto const rdata = b.get(n * cap_elems / 2, true), rscales = b.get(n * cap_elems / 16, true),
             rglobal = b.get(4 * n, true);
  auto const count = b.get(4, false), all_counts = b.get(4 * n, variant == 3),
             offsets = b.get(4 * n, false), overflow = b.get(4, false);
  std::vector<std::size_t> host_counts;
  std::size_t rows = 0;
  for (std::int32_t c : counts) {
    host_counts.push_back(static_cast<std::size_t>(c) * kHidden);
    rows += static_cast<std::size_t>(c);
  }
  on_every_rank(w->size(), [&](int r) {
    auto const i = static_cast<std::size_t>(r);
    support::upload_value_on(w->ranks[i].stream, count[i], counts[i]);
    std::int32_t const zero = 0;
    support::upload_value_on(w->ranks[i].stream, overflow[i], zero);
    float const one = 1.0f;
    support::upload_value_on(w->ranks[i].stream, global[i], one);
    SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(w->ranks[i].stream));
  });
  std::atomic<int> taken_value{static_cast<int>(Path::Fallback)};
  auto const call = [&](int r) {
    auto const i = static_cast<std::size_t>(r);
    Rank& me = w->ranks[i];
    auto* g = reinterpret_cast<float*>(global[i]);
    auto* rg = reinterpret_cast<float*>(rglobal[i]);
    Path taken = Path::Fallback;
    if (variant == 0 || variant == 3) {
      Options options;
      options.path = variant == 3 ? PathChoice::LsaKernel : PathChoice::Fallback;
      DeviceCounts const dc{reinterpret_cast<std::int32_t*>(count[i]), capacity,
                            reinterpret_cast<std::int32_t*>(all_counts[i]),
                            reinterpret_cast<std::int32_t*>(offsets[i]),
                            reinterpret_cast<std::int32_t*>(overflow[i])};
      taken = all_gatherv(me.comm, Nvfp4View{data[i], scales[i], g, cap_elems},
                          Nvfp4View{rdata[i], rscales[i], rg, n * cap_elems}, kHidden, dc,
                          me.stream, options)
                  .path;
    } else if (variant == 1) {
      taken = all_gather(me.comm, Nvfp4View{data[i], scales[i], g, cap_elems},
                         Nvfp4View{rdata[i], rscales[i], rg, n * cap_elems}, me.stream)
                  .path;
    } else {
      std::size_t const mine = host_counts[i];
      std::size_t total = 0;
      for (std::size_t c : host_counts) total += c;
      taken = all_gatherv(me.comm, Nvfp4View{data[i], scales[i], g, mine},
                          Nvfp4View{rdata[i], rscales[i], rg, total}, host_counts, me.stream)
                  .path;
    }
    taken_value.store(static_cast<int>(taken));
  };
  // First calls from every rank's thread at once: NCCL connects peers on a communicator's first
  // collectives, which one thread driving every rank in turn cannot complete.
  on_every_rank(w->size(), [&](int r) {
    call(r);
    SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(w->ranks[static_cast<std::size_t>(r)].stream));
  });
  // Each rank's calls from its own thread (NCCL calls of several ranks from one thread would
  // need a group, and a device-count gather runs outside one); the gate keeps host time out.
  auto const eager = [&] {
    on_every_rank(w->size(), [&](int r) {
      for (int k = 0; k < kCalls; ++k) call(r);
    });
  };
  if (!graph) {
    time_gated(state, *w, eager, kCalls);
  } else {
    // Each rank captures its own stream on its own thread; every capture ends before any graph
    // is instantiated.
    std::vector<cudaGraph_t> graphs(n);
    on_every_rank(w->size(), [&](int r) {
      Rank& me = w->ranks[static_cast<std::size_t>(r)];
      SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(me.stream, cudaStreamCaptureModeThreadLocal));
      for (int k = 0; k < kCalls; ++k) call(r);
      SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(me.stream, &graphs[static_cast<std::size_t>(r)]));
    });
    time_graphs_gated(state, *w, graphs, kCalls);
  }
  static const char* const kNames[] = {"device counts", "padded to capacity", "host counts",
                                       "device counts, one launch"};
  state.SetLabel(std::to_string(n) + " ranks, " + kNames[variant] + ", " +
                 to_string(static_cast<Path>(taken_value.load())) +
                 (graph ? ", graph" : ", eager"));
  state.counters["rows"] = static_cast<double>(rows);
  state.counters["bytes_needed"] = static_cast<double>(rows * (kHidden / 2 + kHidden / 16));
  state.counters["bytes_at_capacity"] =
      static_cast<double>(n * capacity * (kHidden / 2 + kHidden / 16));
}

// Args: ranks, mean tokens per rank, variant, graph.
void ragged_args(benchmark::internal::Benchmark* b) {
  for (int n : {2, 4, 8}) {
    for (std::int64_t mean : {64, 256, 1024}) {
      for (int variant : {0, 1, 2, 3}) {
        for (int graph : {0, 1}) {
          if (variant == 2 && graph == 1) continue;  // host counts: a graph per count pattern
          b->Args({n, mean, variant, graph});
        }
      }
    }
  }
  b->ArgNames({"ranks", "mean_tokens", "variant", "graph"})
      ->Iterations(10)
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_RaggedGather)->Apply(ragged_args);

}  // namespace
}  // namespace symmcomm::bench
