// Launch shapes of the one-shot quantized reduce kernel (src/kernels/lsa_reduce.cuh), NVFP4
// into bf16 over N shards on one GPU, beside the device-to-device copy of the same run: which
// threads per CTA, register cap, CTAs per SM, peers-in-flight batch and item size feed memory
// best. The library's NVFP4 kernel is BM_ReduceShape<512, 3, 2, 8> on a grid of 3 CTAs per SM;
// these runs are how that shape was chosen (bench/results/). Bytes counted as in
// BM_LoopbackReduceScatterNvfp4.

#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "kernels/launch.cuh"
#include "kernels/lsa_policy.cuh"
#include "kernels/lsa_reduce.cuh"
#include "micro/device_memory.hpp"
#include "micro/device_timer.hpp"
#include "symmcomm/formats/codecs.hpp"

namespace symmcomm::bench {
namespace {

using detail::lsa::ReduceArgs;
using detail::lsa::ShardTablePolicy;

template <int kThreadsPerCta, int kMinCtas, int kBatch, int kBytes>
__global__ void __launch_bounds__(kThreadsPerCta, kMinCtas)
    shaped_reduce(const __grid_constant__ ShardTablePolicy p,
                  const __grid_constant__ ReduceArgs a) {
  detail::lsa::reduce_body<ShardTablePolicy, bf16, true, kBytes, kBatch>(p, a);
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
  QuantizedShards table;
};

// Template: threads per CTA, CTAs per SM the register cap allows, peers in flight, bytes per
// load. Args: N, CTAs per SM in the grid.
template <int kThreadsPerCta, int kMinCtas, int kBatch, int kBytes = 16>
void BM_ReduceShape(benchmark::State& state) {
  int const n = static_cast<int>(state.range(0));
  int const ctas_per_sm = static_cast<int>(state.range(1));
  Shards s(n);
  ReduceArgs a;
  a.data = {0, 0};
  a.block_scales = {1, 0};
  a.scale = {2, 0};
  a.count = s.elems;
  a.grid_count = s.elems;
  a.out = s.out.ptr;
  ShardTablePolicy const policy{s.table};
  int resident = 0;
  auto* kernel = shaped_reduce<kThreadsPerCta, kMinCtas, kBatch, kBytes>;
  SYMMCOMM_CUDA_TRY(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kThreadsPerCta, 0));
  cudaFuncAttributes attr{};
  SYMMCOMM_CUDA_TRY(cudaFuncGetAttributes(&attr, kernel));
  unsigned const grid = static_cast<unsigned>(detail::current_device_sm_count() * ctas_per_sm);
  time_device(state, nullptr, [&] {
    kernel<<<grid, kThreadsPerCta>>>(policy, a);
    SYMMCOMM_CUDA_TRY(cudaGetLastError());
  });
  double const read = static_cast<double>(n) * static_cast<double>(s.elems / 2 + s.elems / 16);
  report_bandwidth(state, read + static_cast<double>(s.elems * 2));
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

}  // namespace
}  // namespace symmcomm::bench
