// The MoE combine after DP attention's uneven dispatch, side by side over N real NCCL ranks
// sharing this process's GPU (NCCL >= 2.30, NCCL_MULTI_RANK_GPU_ENABLE=1; skipped otherwise,
// saying why): each rank sums its own rows of every rank's expert output, rows of 7168 elements,
// per-rank token counts Zipf-like around a mean, capacity twice the mean.
//
// BM_DeviceCountsCombine, variant (third argument):
//   0  counts on the device on symmcomm's fallback (reduce_scatterv with DeviceCounts,
//      Options::path = Fallback: the shards laid out at capacity, NCCL's reduce-scatter);
//   1  padded to capacity: reduce_scatter of capacity rows per rank, Auto's path (what engines
//      do to keep one graph);
//   3  counts on the device through symmcomm's one-launch LSA kernel (Options::path = LsaKernel:
//      the send and counts arrays in the pool's windows): only the counted rows are read;
//   4  variant 3 with counts in the scratch lines (lsa::ll_device_counts_reduce, switched on for
//   the
//      case): no barrier and no count exchange before the rows; only where capacity rows fit a
//      slot;
//   6  variant 4 with the counts gathered before the call (DeviceCounts::count null, as the
//      dispatch's all_gatherv leaves them): the rows go out at once, no count exchange first;
//   5  padded to capacity on NCCL's BF16 reduce-scatter (Options::path = Fallback; NCCL takes its
//      symmetric kernel on the pool's windows): the BF16 baseline of the same element count for
//      both inputs (NCCL has no NVFP4).
// Fourth argument: 0 BF16 expert outputs, 1 NVFP4 (per-rank global scales, summed in fp32 into
// BF16); variant 5 runs once, under 0. Fifth: 1 = the calls captured in one CUDA graph per rank and
// replayed. Time per call, the slowest rank's, host launch cost excluded (rank_world.hpp);
// counters: the rows this case sums on the busiest rank and the rows at capacity.

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/lsa_ll_device_counts.hpp"
#include "micro/device_counts_timing.hpp"
#include "micro/rank_world.hpp"
#include "support/ordered_copy.hpp"
#include "symmcomm/collectives/device_counts.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm::bench {
namespace {

constexpr std::size_t kHidden = 7168;

enum Variant {
  kDeviceCounts = 0,
  kPadded = 1,
  kOneLaunch = 3,
  kInLines = 4,
  kPaddedNccl = 5,
  kGathered = 6
};

// One case's tensors on every rank and its counts: `send` holds comm.size() x capacity rows
// (compact for device counts, rank r's shard at r x capacity when padded), `recv` capacity rows.
struct CombineCase {
  int variant = 0;
  bool nvfp4 = false;
  std::size_t capacity = 0, cap_elems = 0;
  std::vector<std::int32_t> counts;
  std::vector<std::uint8_t*> send, scales, global, recv;
  std::unique_ptr<RankDeviceCounts> dc;  // written by peers' kernels for variants 3 and 4
};

CombineCase combine_case(RankWorld& w, RankBuffers& b, std::size_t mean, int variant, bool nvfp4) {
  auto const n = static_cast<std::size_t>(w.size());
  CombineCase k;
  k.variant = variant;
  k.nvfp4 = nvfp4 && variant != kPaddedNccl;
  k.capacity = 2 * mean;
  k.counts = zipf_counts(w.size(), mean, k.capacity);
  k.cap_elems = k.capacity * kHidden;
  std::size_t const all = n * k.cap_elems;
  k.send = b.get(k.nvfp4 ? all / 2 : all * 2, true);
  k.scales = b.get(all / 16, true);
  k.global = b.get(4, true);
  k.recv = b.get(k.cap_elems * 2, true);
  k.dc = std::make_unique<RankDeviceCounts>(b, w.size(), k.capacity,
                                            variant == kOneLaunch || variant >= kInLines);
  on_every_rank(w.size(), [&](int r) {
    auto const i = static_cast<std::size_t>(r);
    cudaStream_t const s = w.ranks[i].stream;
    k.dc->upload(w, r, k.counts);
    support::upload_value_on(s, k.global[i], 1.0f);
    // Block scale codes of 1.0 (e4m3 0x38), so NVFP4 sums are finite.
    SYMMCOMM_CUDA_TRY(cudaMemsetAsync(k.scales[i], 0x38, all / 16, s));
    SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(s));
  });
  return k;
}

// Rank r's call of the case's variant; the path it took.
Path combine_call(RankWorld& w, const CombineCase& k, int r) {
  auto const i = static_cast<std::size_t>(r);
  auto const n = static_cast<std::size_t>(w.size());
  Rank& me = w.ranks[i];
  Bf16Span const out{reinterpret_cast<bf16*>(k.recv[i]), k.cap_elems};
  Nvfp4View const nv{k.send[i], k.scales[i], reinterpret_cast<float*>(k.global[i]),
                     n * k.cap_elems};
  Bf16Span const bf{reinterpret_cast<bf16*>(k.send[i]), n * k.cap_elems};
  Options options;
  if (k.variant == kPadded || k.variant == kPaddedNccl) {
    options.path = k.variant == kPaddedNccl ? PathChoice::Fallback : PathChoice::Auto;
    return (k.nvfp4 ? reduce_scatter(me.comm, nv, out, me.stream, options)
                    : reduce_scatter(me.comm, bf, out, me.stream, options))
        .path;
  }
  options.path = k.variant == kDeviceCounts ? PathChoice::Fallback : PathChoice::LsaKernel;
  DeviceCounts const dc = k.dc->of(r, k.variant == kGathered);
  return (k.nvfp4 ? reduce_scatterv(me.comm, nv, out, kHidden, dc, me.stream, options)
                  : reduce_scatterv(me.comm, bf, out, kHidden, dc, me.stream, options))
      .path;
}

void BM_DeviceCountsCombine(benchmark::State& state) {
  RankWorld* const w = world_or_skip(state);
  if (w == nullptr) return;
  auto const n = static_cast<std::size_t>(w->size());
  int const variant = static_cast<int>(state.range(2));
  bool const nvfp4 = state.range(3) != 0;
  bool const graph = state.range(4) != 0;
  RankBuffers b(*w);
  CombineCase const k =
      combine_case(*w, b, static_cast<std::size_t>(state.range(1)), variant, nvfp4);
  CountsInLines const lines(variant == kInLines || variant == kGathered);
  std::atomic<int> taken{static_cast<int>(Path::Fallback)};
  auto const call = [&](int r) { taken.store(static_cast<int>(combine_call(*w, k, r))); };
  warm_up_ranks(*w, call);
  time_device_counts(state, *w, call, graph);
  const char* const name = variant == kDeviceCounts ? "device counts"
                           : variant == kPadded     ? "padded to capacity"
                           : variant == kOneLaunch  ? "device counts, one launch"
                           : variant == kInLines    ? "device counts in the lines"
                           : variant == kGathered   ? "device counts in the lines, gathered before"
                                                    : "padded, NCCL's bf16 reduce-scatter";
  state.SetLabel(std::to_string(n) + " ranks, " + (k.nvfp4 ? "nvfp4 in, " : "bf16 in, ") + name +
                 ", " + to_string(static_cast<Path>(taken.load())) +
                 (graph ? ", graph" : ", eager"));
  std::int32_t most = 0;
  for (std::int32_t c : k.counts) most = c > most ? c : most;
  state.counters["rows"] = static_cast<double>(most);
  state.counters["rows_at_capacity"] = static_cast<double>(k.capacity);
}

// Args: ranks, mean tokens per rank, variant, nvfp4, graph. Counts in the lines only where
// capacity rows fit a scratch slot.
void combine_args(benchmark::internal::Benchmark* b) {
  for (int n : {2, 4, 8}) {
    for (std::int64_t mean : {1, 2, 4, 8, 64}) {
      for (int nvfp4 : {0, 1}) {
        DataType const type = nvfp4 != 0 ? DataType::Nvfp4 : DataType::Bf16;
        bool const fits = detail::lsa::ll_device_counts_reduce_lines(
                              type, 2 * static_cast<std::size_t>(mean), kHidden) <=
                          detail::kLlMaxBytesPerRank / detail::kLlLineData;
        for (int variant : {kDeviceCounts, kPadded, kOneLaunch, kInLines, kPaddedNccl, kGathered}) {
          if ((variant == kInLines || variant == kGathered) && !fits) continue;
          if (variant == kPaddedNccl && nvfp4 != 0) continue;  // one BF16 baseline per row
          for (int graph : {0, 1}) b->Args({n, mean, variant, nvfp4, graph});
        }
      }
    }
  }
  b->ArgNames({"ranks", "mean_tokens", "variant", "nvfp4", "graph"})
      ->Iterations(10)
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_DeviceCountsCombine)->Apply(combine_args);

}  // namespace
}  // namespace symmcomm::bench
