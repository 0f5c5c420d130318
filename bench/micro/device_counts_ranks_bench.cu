// DP attention's device-count gather three ways, side by side over N real NCCL ranks sharing this
// process's GPU (NCCL >= 2.30, NCCL_MULTI_RANK_GPU_ENABLE=1; skipped otherwise, saying why):
// NVFP4 rows of 7168 elements (a DeepSeek-class hidden size), per-rank token counts Zipf-like
// around a mean (1, 2, 4, 8, 64, 256, 1024), capacity twice the mean.
//
// BM_DeviceCountsGather, variant (third argument):
//   0  counts on the device on NCCL's path (Options::path = Fallback: every rank's rows at
//      capacity through NCCL, then compaction; symmcomm/collectives/device_counts.hpp);
//   1  padded to capacity: all_gather of capacity rows per rank (what engines do to keep one
//      graph), the path symmcomm picks for pool buffers;
//   2  host counts: all_gatherv with the counts as a host vector (a graph per count pattern);
//   3  counts on the device through symmcomm's one-launch LSA kernel (Options::path =
//      LsaKernel, Auto's choice where it runs; the counts arrays in the pool's windows): only
//      the counted rows move;
//   4  variant 3 with counts in the scratch lines (lsa::ll_device_counts_gather, switched on for
//   the
//      case): no barrier and no count exchange before the rows; only where capacity rows fit a
//      slot (decode sizes: means 1 to 8 here);
//   5  padded to capacity on NCCL's all-gather (Options::path = Fallback: NCCL takes its
//      symmetric kernel on the pool's windows), beside variant 1's Auto: the padded layer an
//      engine gets from NCCL alone.
// Variants 0, 3 and 4 are what one captured graph serves for every step's counts.
// Fourth argument: 1 = the calls captured in one CUDA graph per rank and replayed (every variant
// but 2, which cannot replay with other counts and is eager only). Time per call, the slowest
// rank's, host launch cost excluded (rank_world.hpp); counters: rows gathered, bytes the counts
// need, and bytes moved at capacity.

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "micro/device_counts_timing.hpp"
#include "micro/rank_world.hpp"
#include "support/ordered_copy.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/device_counts.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm::bench {
namespace {

constexpr std::size_t kHidden = 7168;

// One case's tensors on every rank (NVFP4 rows of kHidden at capacity) and its counts.
struct DeviceCountsCase {
  int variant = 0;  // 0 device counts, 1 padded, 2 host counts, 3 one launch, 4 counts in lines,
                    // 5 padded on NCCL's call
  std::size_t capacity = 0, cap_elems = 0, rows = 0;
  std::vector<std::int32_t> counts;
  std::vector<std::size_t> host_counts;
  std::vector<std::uint8_t*> data, scales, global, rdata, rscales, rglobal;
  std::unique_ptr<RankDeviceCounts> dc;  // written by peers' kernels for variants 3 and 4
};

DeviceCountsCase device_counts_case(RankWorld& w, RankBuffers& b, std::size_t mean, int variant) {
  auto const n = static_cast<std::size_t>(w.size());
  DeviceCountsCase k;
  k.variant = variant;
  k.capacity = 2 * mean;
  k.counts = zipf_counts(w.size(), mean, k.capacity);
  k.cap_elems = k.capacity * kHidden;
  k.data = b.get(k.cap_elems / 2, true);
  k.scales = b.get(k.cap_elems / 16, true);
  k.global = b.get(4, true);
  k.rdata = b.get(n * k.cap_elems / 2, true);
  k.rscales = b.get(n * k.cap_elems / 16, true);
  k.rglobal = b.get(4 * n, true);
  k.dc = std::make_unique<RankDeviceCounts>(b, w.size(), k.capacity, variant == 3 || variant == 4);
  for (std::int32_t c : k.counts) {
    k.host_counts.push_back(static_cast<std::size_t>(c) * kHidden);
    k.rows += static_cast<std::size_t>(c);
  }
  on_every_rank(w.size(), [&](int r) {
    auto const i = static_cast<std::size_t>(r);
    k.dc->upload(w, r, k.counts);
    support::upload_value_on(w.ranks[i].stream, k.global[i], 1.0f);
    SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(w.ranks[i].stream));
  });
  return k;
}

// Rank r's call of the case's variant; the path it took.
Path device_counts_call(RankWorld& w, const DeviceCountsCase& k, int r) {
  auto const i = static_cast<std::size_t>(r);
  auto const n = static_cast<std::size_t>(w.size());
  Rank& me = w.ranks[i];
  auto* g = reinterpret_cast<float*>(k.global[i]);
  auto* rg = reinterpret_cast<float*>(k.rglobal[i]);
  if (k.variant == 0 || k.variant == 3 || k.variant == 4) {
    Options options;
    options.path = k.variant >= 3 ? PathChoice::LsaKernel : PathChoice::Fallback;
    DeviceCounts const dc = k.dc->of(r);
    return all_gatherv(me.comm, Nvfp4View{k.data[i], k.scales[i], g, k.cap_elems},
                       Nvfp4View{k.rdata[i], k.rscales[i], rg, n * k.cap_elems}, kHidden, dc,
                       me.stream, options)
        .path;
  }
  if (k.variant == 1 || k.variant == 5) {
    Options options;
    options.path = k.variant == 5 ? PathChoice::Fallback : PathChoice::Auto;
    return all_gather(me.comm, Nvfp4View{k.data[i], k.scales[i], g, k.cap_elems},
                      Nvfp4View{k.rdata[i], k.rscales[i], rg, n * k.cap_elems}, me.stream, options)
        .path;
  }
  std::size_t total = 0;
  for (std::size_t c : k.host_counts) total += c;
  return all_gatherv(me.comm, Nvfp4View{k.data[i], k.scales[i], g, k.host_counts[i]},
                     Nvfp4View{k.rdata[i], k.rscales[i], rg, total}, k.host_counts, me.stream)
      .path;
}

void BM_DeviceCountsGather(benchmark::State& state) {
  RankWorld* const w = world_or_skip(state);
  if (w == nullptr) return;
  auto const n = static_cast<std::size_t>(w->size());
  int const variant = static_cast<int>(state.range(2));
  bool const graph = state.range(3) != 0;
  RankBuffers b(*w);
  DeviceCountsCase const k =
      device_counts_case(*w, b, static_cast<std::size_t>(state.range(1)), variant);
  CountsInLines const lines(variant == 4);  // variant 4: the counts-in-lines kernel
  std::atomic<int> taken{static_cast<int>(Path::Fallback)};
  auto const call = [&](int r) { taken.store(static_cast<int>(device_counts_call(*w, k, r))); };
  warm_up_ranks(*w, call);
  time_device_counts(state, *w, call, graph);
  static const char* const kNames[] = {"device counts",
                                       "padded to capacity",
                                       "host counts",
                                       "device counts, one launch",
                                       "device counts in the lines",
                                       "padded, NCCL's all-gather"};
  state.SetLabel(std::to_string(n) + " ranks, " + kNames[variant] + ", " +
                 to_string(static_cast<Path>(taken.load())) + (graph ? ", graph" : ", eager"));
  state.counters["rows"] = static_cast<double>(k.rows);
  state.counters["bytes_needed"] = static_cast<double>(k.rows * (kHidden / 2 + kHidden / 16));
  state.counters["bytes_at_capacity"] =
      static_cast<double>(n * k.capacity * (kHidden / 2 + kHidden / 16));
}

// Args: ranks, mean tokens per rank, variant, graph.
void device_counts_args(benchmark::internal::Benchmark* b) {
  for (int n : {2, 4, 8}) {
    for (std::int64_t mean : {1, 2, 4, 8, 64, 256, 1024}) {
      for (int variant : {0, 1, 2, 3, 4, 5}) {
        for (int graph : {0, 1}) {
          if (variant == 2 && graph == 1) continue;  // host counts: a graph per count pattern
          if (variant == 4 && mean > 8) continue;    // capacity rows past a scratch slot
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

BENCHMARK(BM_DeviceCountsGather)->Apply(device_counts_args);

}  // namespace
}  // namespace symmcomm::bench
