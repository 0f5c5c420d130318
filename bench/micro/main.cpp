// symmcomm_micro_bench: Google Benchmark micro-benchmarks. Exits non-zero, saying so, when the
// machine has no GPU (the device benchmarks are the point of this program).

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "micro/device_timer.hpp"
#include "micro/lsa_ranks.hpp"
#include "support/ordered_copy.hpp"
#include "symmcomm/runtime.hpp"

namespace symmcomm::bench {

double copy_bandwidth_bytes_per_second() {
  static double const bandwidth = [] {
    std::size_t const bytes = std::size_t{1} << 30;
    void *a = nullptr, *b = nullptr;
    SYMMCOMM_CUDA_TRY(cudaMalloc(&a, bytes));
    SYMMCOMM_CUDA_TRY(cudaMalloc(&b, bytes));
    support::fill_on(nullptr, a, 1, bytes);
    cudaEvent_t start, stop;
    SYMMCOMM_CUDA_TRY(cudaEventCreate(&start));
    SYMMCOMM_CUDA_TRY(cudaEventCreate(&stop));
    std::vector<float> ms(20);
    for (int i = -3; i < 20; ++i) {
      SYMMCOMM_CUDA_TRY(cudaEventRecord(start));
      SYMMCOMM_CUDA_TRY(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
      SYMMCOMM_CUDA_TRY(cudaEventRecord(stop));
      SYMMCOMM_CUDA_TRY(cudaEventSynchronize(stop));
      if (i >= 0) SYMMCOMM_CUDA_TRY(cudaEventElapsedTime(&ms[i], start, stop));
    }
    std::sort(ms.begin(), ms.end());
    cudaFree(a);
    cudaFree(b);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return 2.0 * static_cast<double>(bytes) / (static_cast<double>(ms[10]) / 1e3);
  }();
  return bandwidth;
}

}  // namespace symmcomm::bench

int main(int argc, char** argv) {
  int devices = 0;
  cudaError_t const e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    std::fprintf(stderr,
                 "symmcomm_micro_bench: no CUDA GPU on this machine (%s); the benchmarks measure "
                 "GPU kernels and cannot run here.\n",
                 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 2;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  auto const nccl = symmcomm::nccl_runtime_version();
  benchmark::AddCustomContext("gpu", prop.name);
  benchmark::AddCustomContext("gpu_count", std::to_string(devices));
  benchmark::AddCustomContext("nccl", std::to_string(nccl.major) + "." +
                                          std::to_string(nccl.minor) + "." +
                                          std::to_string(nccl.patch));
  benchmark::AddCustomContext(
      "copy_bandwidth_GBps",
      std::to_string(symmcomm::bench::copy_bandwidth_bytes_per_second() / 1e9));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  symmcomm::bench::release_rank_worlds();
  benchmark::Shutdown();
  return 0;
}
