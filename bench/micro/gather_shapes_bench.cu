// Launch shapes of the push all-gather's inner loop and of the fused bf16 -> NVFP4 quantize +
// all-gather (src/kernels/lsa_gather.cuh) over N virtual ranks on one GPU, beside the
// device-to-device copy of the same run: loads in flight per thread, evict-first (streaming)
// stores, register cap, and CTAs per SM in the grid. The library runs copy_to_peers<uint4, 4,
// true> and quantize_gather_nvfp4_body<true> on kCtasPerSm = 2 CTAs per SM of the GPU. Bytes
// counted as in BM_LoopbackAllGatherNvfp4 and BM_LoopbackQuantizeAllGatherNvfp4. BM_WriteCeiling
// gives the rate of a write-only stream (cudaMemsetAsync), the bound that a gather writing N times
// what it reads approaches as N grows.

#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "core/launch.cuh"
#include "kernels/lsa.hpp"
#include "kernels/lsa_gather.cuh"
#include "micro/device_memory.hpp"
#include "micro/device_timer.hpp"
#include "support/ordered_copy.hpp"
#include "symmcomm/formats/nvfp4.hpp"
#include "testing/src/lsa_loopback_policy.cuh"

namespace symmcomm::bench {
namespace {

using detail::lsa::kMaxRanks;
using detail::lsa::kThreads;

struct Destinations {
  char* ptr[kMaxRanks];
};

template <int kUnroll, bool kStreaming>
__global__ void __launch_bounds__(kThreads)
    shaped_gather(const __grid_constant__ Destinations d, const void* src, std::size_t units,
                  int me, int n) {
  __shared__ char* dst[kMaxRanks];
  for (int p = static_cast<int>(threadIdx.x); p < n; p += static_cast<int>(blockDim.x)) {
    dst[p] = d.ptr[p];
  }
  __syncthreads();
  detail::lsa::copy_to_peers<uint4, kUnroll, kStreaming>(src, dst, units, me, n);
}

constexpr std::size_t kGathered = std::size_t{151} << 20;  // ~NVFP4 of 2^28 elements

// Template: loads in flight per thread, streaming stores. Args: N, CTAs per SM in the grid.
template <int kUnroll, bool kStreaming>
void BM_GatherShape(benchmark::State& state) {
  int const n = static_cast<int>(state.range(0));
  int const ctas_per_sm = static_cast<int>(state.range(1));
  std::size_t const part = kGathered / static_cast<std::size_t>(n) / 16 * 16;
  std::vector<std::unique_ptr<DeviceMemory>> send, recv;
  for (int r = 0; r < n; ++r) {
    send.push_back(std::make_unique<DeviceMemory>(part));
    recv.push_back(std::make_unique<DeviceMemory>(part * static_cast<std::size_t>(n)));
    support::fill_on(nullptr, send.back()->ptr, 0x5a, part);
  }
  unsigned const grid = static_cast<unsigned>(detail::current_device_sm_count() * ctas_per_sm);
  time_device(state, nullptr, [&] {
    for (int r = 0; r < n; ++r) {
      Destinations d{};
      for (int p = 0; p < n; ++p) d.ptr[p] = recv[p]->as<char>() + part * r;
      shaped_gather<kUnroll, kStreaming><<<grid, kThreads>>>(d, send[r]->ptr, part / 16, r, n);
    }
    SYMMCOMM_CUDA_TRY(cudaGetLastError());
  });
  report_bandwidth(state, static_cast<double>(n) * static_cast<double>(part) * (1.0 + n));
  state.SetLabel(std::to_string(n) + " virtual ranks");
}

void gather_args(benchmark::internal::Benchmark* b) {
  for (int n : {2, 4, 8}) {
    for (int per_sm : {1, 2, 3, 4}) b->Args({n, per_sm});
  }
  b->UseManualTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_GatherShape<4, false>)->Apply(gather_args);
BENCHMARK(BM_GatherShape<4, true>)->Apply(gather_args);  // the library's loop
BENCHMARK(BM_GatherShape<8, true>)->Apply(gather_args);

template <bool kStreaming, int kMinCtas>
__global__ void __launch_bounds__(kThreads, kMinCtas)
    shaped_quantize_gather(const __grid_constant__ detail::lsa::LoopbackPolicy p,
                           const __grid_constant__ detail::lsa::QuantizeGatherArgs a) {
  detail::lsa::quantize_gather_nvfp4_body<kStreaming>(p, a);
}

// Template: streaming stores, CTAs per SM the register cap allows. Args: N, CTAs per SM in
// the grid.
template <bool kStreaming, int kMinCtas = 1>
void BM_QuantizeGatherShape(benchmark::State& state) {
  constexpr std::size_t kTotal = std::size_t{1} << 28;  // gathered elements
  int const n = static_cast<int>(state.range(0));
  int const ctas_per_sm = static_cast<int>(state.range(1));
  std::size_t const per_rank = kTotal / static_cast<std::size_t>(n);
  std::vector<std::unique_ptr<DeviceMemory>> in, scale, data, scales, globals;
  detail::lsa::LoopbackPolicy policy{};
  policy.my_size = n;
  float const global = 2000.0f;
  for (int r = 0; r < n; ++r) {
    in.push_back(std::make_unique<DeviceMemory>(per_rank * 2));
    fill_bf16(*in.back(), per_rank);
    scale.push_back(std::make_unique<DeviceMemory>(sizeof(float)));
    support::copy_on(nullptr, scale.back()->ptr, &global, sizeof global);
    data.push_back(std::make_unique<DeviceMemory>(kTotal / 2));
    scales.push_back(std::make_unique<DeviceMemory>(kTotal / 16));
    globals.push_back(std::make_unique<DeviceMemory>(64 * sizeof(float)));
    policy.base[0][r] = data.back()->as<char>();
    policy.base[1][r] = scales.back()->as<char>();
    policy.base[2][r] = globals.back()->as<char>();
  }
  unsigned const grid = static_cast<unsigned>(detail::current_device_sm_count() * ctas_per_sm);
  time_device(state, nullptr, [&] {
    for (int r = 0; r < n; ++r) {
      detail::lsa::QuantizeGatherArgs a;
      a.src = in[r]->as<bf16>();
      a.scale = scale[r]->as<float>();
      a.count = per_rank;
      a.data = {0, per_rank / 2 * r};
      a.block_scales = {1, per_rank / 16 * r};
      a.scale_dst = {2, sizeof(float) * r};
      a.grid_count = per_rank;
      policy.my_rank = r;
      shaped_quantize_gather<kStreaming, kMinCtas><<<grid, kThreads>>>(policy, a);
    }
    SYMMCOMM_CUDA_TRY(cudaGetLastError());
  });
  double const part = static_cast<double>(per_rank / 2 + per_rank / 16 + sizeof(float));
  report_bandwidth(state, n * (static_cast<double>(per_rank * 2) + n * part));
  cudaFuncAttributes attr{};
  SYMMCOMM_CUDA_TRY(cudaFuncGetAttributes(&attr, shaped_quantize_gather<kStreaming, kMinCtas>));
  state.counters["regs"] = attr.numRegs;
  state.counters["spill_B"] = static_cast<double>(attr.localSizeBytes);
  state.SetLabel(std::to_string(n) + " virtual ranks");
}

void quantize_gather_args(benchmark::internal::Benchmark* b) {
  for (int n : {2, 4, 8}) {
    for (int per_sm : {2, 3}) b->Args({n, per_sm});
  }
  b->UseManualTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_QuantizeGatherShape<false>)->Apply(quantize_gather_args);
BENCHMARK(BM_QuantizeGatherShape<true>)->Apply(quantize_gather_args);  // the library's

void BM_WriteCeiling(benchmark::State& state) {
  std::size_t const bytes = std::size_t{1} << 30;
  DeviceMemory m(bytes);
  time_device(state, nullptr, [&] { SYMMCOMM_CUDA_TRY(cudaMemsetAsync(m.ptr, 0x11, bytes)); });
  report_bandwidth(state, static_cast<double>(bytes));
}
BENCHMARK(BM_WriteCeiling)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace symmcomm::bench
