// Launch shapes of the one-shot quantized reduce kernel (src/kernels/lsa_reduce.cuh), NVFP4
// into bf16 over N shards on one GPU, beside the device-to-device copy of the same run: which
// threads per CTA, register cap, CTAs per SM, peers-in-flight batch and item size feed memory
// best. The library's NVFP4 kernel is BM_ReduceShape<512, 3, 2, 8> on a grid of 3 CTAs per SM
// (for exactly 8 peers BM_ReduceShape<512, 3, 4, 8, 8>); these runs are how those shapes were
// chosen (bench/results/). Bytes counted as in
// BM_LoopbackReduceScatterNvfp4. The production kernel (LsaPolicy: NCCL windows and barriers,
// 2 peers in flight for 8 peers) is timed over real NCCL ranks sharing the GPU by
// BM_RanksReduceScatterNvfp4 (lsa_ranks_bench.cu), in the same units.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/launch.cuh"
#include "kernels/lsa_policy.cuh"
#include "kernels/lsa_reduce.cuh"
#include "micro/device_memory.hpp"
#include "micro/device_timer.hpp"
#include "symmcomm/formats/codecs.hpp"

namespace symmcomm::bench {
namespace {

using detail::lsa::ReduceArgs;
using detail::lsa::ShardTablePolicy;

template <int kThreadsPerCta, int kMinCtas, int kBatch, int kBytes, int kPeers>
__global__ void __launch_bounds__(kThreadsPerCta, kMinCtas)
    shaped_reduce(const __grid_constant__ ShardTablePolicy p,
                  const __grid_constant__ ReduceArgs a) {
  detail::lsa::reduce_body<ShardTablePolicy, bf16, true, kBytes, kBatch, kPeers>(p, a);
}

constexpr std::size_t kTotalElems = std::size_t{1} << 28;  // read per launch, all shards

// N NVFP4 shards of kTotalElems / N elements, quantized from bf16 test data.
struct Shards {
  explicit Shards(int n) : elems(kTotalElems / static_cast<std::size_t>(n)), out(elems * 2) {
    DeviceMemory src(elems * 2);
    fill_bf16(src, elems);
    for (int r = 0; r < n; ++r) {
      data.push_back(std::make_unique<DeviceMemory>(elems / 2));
      scales.push_back(std::make_unique<DeviceMemory>(elems / 16));
      global.push_back(std::make_unique<DeviceMemory>(sizeof(float)));
      quantize_nvfp4(src.as<bf16>(),
                     Nvfp4View{data.back()->as<std::uint8_t>(), scales.back()->as<std::uint8_t>(),
                               global.back()->as<float>(), elems},
                     ScaleMode::Compute, nullptr);
      table.data[r] = data.back()->as<std::uint8_t>();
      table.block_scales[r] = scales.back()->as<std::uint8_t>();
      table.scale[r] = global.back()->as<float>();
    }
    table.ranks = n;
    SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
  }
  std::size_t elems;
  std::vector<std::unique_ptr<DeviceMemory>> data, scales, global;
  DeviceMemory out;
  detail::lsa::ShardTable table;
};

// Template: threads per CTA, CTAs per SM the register cap allows, peers in flight, bytes per
// load. Args: N, CTAs per SM in the grid, and optionally the grid-stride rounds to run in
// hundredths (0 or absent: the whole shard, kTotalElems / N elements), to price a launch's
// last, partly idle round.
// kPeers > 0: the peer loop compiled for exactly that many shards (the benchmark's N must
// match; others skip).
template <int kThreadsPerCta, int kMinCtas, int kBatch, int kBytes = 16, int kPeers = 0>
void BM_ReduceShape(benchmark::State& state) {
  int const n = static_cast<int>(state.range(0));
  int const ctas_per_sm = static_cast<int>(state.range(1));
  std::int64_t const centi_rounds = state.range(2);
  if (kPeers > 0 && n != kPeers) {
    state.SkipWithError("compiled for another shard count");
    return;
  }
  Shards s(n);
  unsigned const grid = static_cast<unsigned>(detail::current_device_sm_count() * ctas_per_sm);
  std::size_t count = s.elems;
  if (centi_rounds > 0) {
    std::size_t const elems_per_round = std::size_t{grid} * kThreadsPerCta * (2 * kBytes);
    count =
        std::min(count, elems_per_round * static_cast<std::size_t>(centi_rounds) / 100 / 16 * 16);
  }
  ReduceArgs a;
  a.data = {0, 0};
  a.block_scales = {1, 0};
  a.scale = {2, 0};
  a.count = count;
  a.grid_count = count;
  a.out = s.out.ptr;
  ShardTablePolicy const policy{s.table};
  int resident = 0;
  auto* kernel = shaped_reduce<kThreadsPerCta, kMinCtas, kBatch, kBytes, kPeers>;
  SYMMCOMM_CUDA_TRY(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kThreadsPerCta, 0));
  cudaFuncAttributes attr{};
  SYMMCOMM_CUDA_TRY(cudaFuncGetAttributes(&attr, kernel));
  time_device(state, nullptr, [&] {
    kernel<<<grid, kThreadsPerCta>>>(policy, a);
    SYMMCOMM_CUDA_TRY(cudaGetLastError());
  });
  double const read = static_cast<double>(n) * static_cast<double>(count / 2 + count / 16);
  report_bandwidth(state, read + static_cast<double>(count * 2));
  state.counters["rounds"] =
      static_cast<double>(count) / (static_cast<double>(grid) * kThreadsPerCta * (2 * kBytes));
  state.counters["regs"] = attr.numRegs;
  state.counters["spill_B"] = static_cast<double>(attr.localSizeBytes);
  state.counters["resident"] = resident;
  state.SetLabel(std::to_string(n) + " shards");
}

void shape_args(benchmark::internal::Benchmark* b) {
  for (int n : {2, 4, 8}) {
    for (int per_sm : {1, 2, 3, 4}) b->Args({n, per_sm});
  }
  b->UseManualTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_ReduceShape<512, 1, 4>)->Apply(shape_args);
BENCHMARK(BM_ReduceShape<512, 2, 2>)->Apply(shape_args);
BENCHMARK(BM_ReduceShape<512, 2, 2, 8>)->Apply(shape_args);
BENCHMARK(BM_ReduceShape<512, 3, 2, 8>)->Apply(shape_args);  // the library's NVFP4 shape
BENCHMARK(BM_ReduceShape<512, 3, 4, 8>)->Apply(shape_args);
BENCHMARK(BM_ReduceShape<512, 2, 4, 8>)->Apply(shape_args);
BENCHMARK(BM_ReduceShape<512, 3, 8, 8>)->Apply(shape_args);

// Exactly 8 shards with the peer loop compiled for 8 (kPeers), 2 or 4 peers' loads in
// flight: the library's NVFP4 kernel for 8 peers is BM_ReduceShape<512, 3, 4, 8, 8>.
BENCHMARK(BM_ReduceShape<512, 3, 2, 8, 8>)
    ->Args({8, 3})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReduceShape<512, 3, 4, 8, 8>)
    ->Args({8, 3})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// The library's shape at 8 shards over whole rounds (10, 11) against the full shard (10.34
// rounds on 132 SMs): what the last, partly idle round costs.
BENCHMARK(BM_ReduceShape<512, 3, 2, 8>)
    ->Args({8, 3, 1000})
    ->Args({8, 3, 1100})
    ->Args({8, 3, 0})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace symmcomm::bench
