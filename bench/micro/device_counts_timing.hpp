#pragma once
// What the device-count benchmarks share: Zipf-like token counts per rank, timing a
// case's calls eager or from one captured graph per rank, and the switch that turns symmcomm's
// counts-in-the-lines kernels on for one case.

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/lsa_ll_device_counts.hpp"
#include "micro/rank_world.hpp"
#include "symmcomm/collectives/device_counts.hpp"

namespace symmcomm::bench {

/// Calls per rank per timed iteration (and per captured graph).
inline constexpr int kDeviceCountsCalls = 10;

/// Zipf-like counts (weights 1/(r+1)^0.8) scaled to `mean` on average, at most `capacity`.
std::vector<std::int32_t> zipf_counts(int ranks, std::size_t mean, std::size_t capacity);

/// kDeviceCountsCalls calls of `call(rank)` per rank, each rank from its own thread (NCCL calls of
/// several ranks from one thread would need a group, and a device-count call runs outside one),
/// eager or captured (each rank its own stream on its own thread, every capture ended before any
/// graph is instantiated); the gate keeps host time out.
void time_device_counts(benchmark::State& state, RankWorld& w, const std::function<void(int)>& call,
                        bool graph);

/// First calls from every rank's thread at once: NCCL connects peers on a communicator's first
/// collectives, which one thread driving every rank in turn cannot complete.
void warm_up_ranks(RankWorld& w, const std::function<void(int)>& call);

/// Every rank's device-count arrays of one case (DeviceCounts): this rank's count, every rank's
/// counts and offsets, the overflow flag; the counts array in the pool's windows where peers'
/// kernels write it (`counts_in_window`).
struct RankDeviceCounts {
  std::vector<std::uint8_t*> count, all_counts, offsets, overflow;
  std::size_t capacity = 0;
  RankDeviceCounts(RankBuffers& b, int ranks, std::size_t capacity, bool counts_in_window);
  /// Uploads rank r's count (counts[r]), every rank's count into its counts array (as a gather
  /// before the call leaves it) and a clear overflow flag on its stream (not waited for).
  void upload(RankWorld& w, int r, const std::vector<std::int32_t>& counts) const;
  /// Rank r's counts; `gathered`: count null, the counts array already holding every rank's.
  DeviceCounts of(int r, bool gathered = false) const;
};

/// symmcomm's counts-in-the-lines kernels (kernels/lsa_ll_device_counts.hpp) on or off for one
/// case, restored after it (the same for every rank: one process).
using CountsInLines = detail::lsa::ScopedLlCounts;

}  // namespace symmcomm::bench
