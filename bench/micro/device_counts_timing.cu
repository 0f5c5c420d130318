// The device-count benchmarks' shared parts (device_counts_timing.hpp).

#include "micro/device_counts_timing.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>

#include "support/ordered_copy.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm::bench {

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

void time_device_counts(benchmark::State& state, RankWorld& w, const std::function<void(int)>& call,
                        bool graph) {
  if (!graph) {
    time_gated(
        state, w,
        [&] {
          on_every_rank(w.size(), [&](int r) {
            for (int k = 0; k < kDeviceCountsCalls; ++k) call(r);
          });
        },
        kDeviceCountsCalls);
    return;
  }
  std::vector<cudaGraph_t> graphs(static_cast<std::size_t>(w.size()));
  on_every_rank(w.size(), [&](int r) {
    Rank& me = w.ranks[static_cast<std::size_t>(r)];
    SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(me.stream, cudaStreamCaptureModeThreadLocal));
    for (int k = 0; k < kDeviceCountsCalls; ++k) call(r);
    SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(me.stream, &graphs[static_cast<std::size_t>(r)]));
  });
  time_graphs_gated(state, w, graphs, kDeviceCountsCalls);
}

void warm_up_ranks(RankWorld& w, const std::function<void(int)>& call) {
  on_every_rank(w.size(), [&](int r) {
    call(r);
    SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(w.ranks[static_cast<std::size_t>(r)].stream));
  });
}

RankDeviceCounts::RankDeviceCounts(RankBuffers& b, int ranks, std::size_t capacity_rows,
                                   bool counts_in_window)
    : count(b.get(4, false)),
      all_counts(b.get(4 * static_cast<std::size_t>(ranks), counts_in_window)),
      offsets(b.get(4 * static_cast<std::size_t>(ranks), false)),
      overflow(b.get(4, false)),
      capacity(capacity_rows) {}

void RankDeviceCounts::upload(RankWorld& w, int r, const std::vector<std::int32_t>& counts) const {
  auto const i = static_cast<std::size_t>(r);
  support::upload_value_on(w.ranks[i].stream, count[i], counts[i]);
  support::upload_on(w.ranks[i].stream, all_counts[i], counts);
  support::upload_value_on(w.ranks[i].stream, overflow[i], std::int32_t{0});
}

DeviceCounts RankDeviceCounts::of(int r, bool gathered) const {
  auto const i = static_cast<std::size_t>(r);
  return DeviceCounts{gathered ? nullptr : reinterpret_cast<std::int32_t*>(count[i]), capacity,
                      reinterpret_cast<std::int32_t*>(all_counts[i]),
                      reinterpret_cast<std::int32_t*>(offsets[i]),
                      reinterpret_cast<std::int32_t*>(overflow[i])};
}

}  // namespace symmcomm::bench
