#pragma once
// Timing of device work for Google Benchmark's manual-time mode, and the device-to-device copy
// bandwidth measured in the same process (the ceiling memory-bound kernels are compared with).

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <functional>

#include "symmcomm/error.hpp"

namespace symmcomm::bench {

/// Runs `work` (which enqueues on `stream`) once per iteration and reports event-timed seconds.
inline void time_device(benchmark::State& state, cudaStream_t stream,
                        const std::function<void()>& work) {
  cudaEvent_t start, stop;
  SYMMCOMM_CUDA_TRY(cudaEventCreate(&start));
  SYMMCOMM_CUDA_TRY(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) work();  // warm-up
  for (auto _ : state) {
    SYMMCOMM_CUDA_TRY(cudaEventRecord(start, stream));
    work();
    SYMMCOMM_CUDA_TRY(cudaEventRecord(stop, stream));
    SYMMCOMM_CUDA_TRY(cudaEventSynchronize(stop));
    float ms = 0.0f;
    SYMMCOMM_CUDA_TRY(cudaEventElapsedTime(&ms, start, stop));
    state.SetIterationTime(static_cast<double>(ms) / 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

/// Device-to-device cudaMemcpy bandwidth (bytes read + written per second) on 1 GiB, measured
/// once per process (median of 20 copies).
double copy_bandwidth_bytes_per_second();

/// Adds bytes/s and the ratio to the copy bandwidth measured in this run.
inline void report_bandwidth(benchmark::State& state, double bytes_per_iteration) {
  state.SetBytesProcessed(
      static_cast<int64_t>(bytes_per_iteration * static_cast<double>(state.iterations())));
  state.counters["bytes_per_iter"] = bytes_per_iteration;
  state.counters["vs_copy"] =
      benchmark::Counter(bytes_per_iteration * static_cast<double>(state.iterations()) /
                             copy_bandwidth_bytes_per_second(),
                         benchmark::Counter::kIsRate);
}

}  // namespace symmcomm::bench
