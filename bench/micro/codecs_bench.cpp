// Codec throughput (bytes read + written per second) beside a device-to-device copy measured in
// the same run. Sizes >= 256 MiB of bf16 so the data is far beyond L2.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "formats/codecs_internal.hpp"
#include "micro/device_memory.hpp"
#include "micro/device_timer.hpp"
#include "support/ordered_copy.hpp"
#include "symmcomm/formats/codecs.hpp"
#include "symmcomm/runtime.hpp"

namespace symmcomm::bench {
namespace {

void BM_DeviceCopy(benchmark::State& state) {
  std::size_t const bytes = static_cast<std::size_t>(state.range(0));
  DeviceMemory a(bytes), b(bytes);
  support::fill_on(nullptr, a.ptr, 1, bytes);
  time_device(state, nullptr, [&] {
    SYMMCOMM_CUDA_TRY(cudaMemcpyAsync(b.ptr, a.ptr, bytes, cudaMemcpyDeviceToDevice, nullptr));
  });
  report_bandwidth(state, 2.0 * static_cast<double>(bytes));
}

void BM_QuantizeNvfp4(benchmark::State& state) {
  std::size_t const n = static_cast<std::size_t>(state.range(0));
  auto const mode = state.range(1) ? ScaleMode::Compute : ScaleMode::Given;
  DeviceMemory src(n * 2), data(n / 2), scales(n / 16), global(sizeof(float));
  fill_bf16(src, n);
  float const g = nvfp4_global_scale(10.0f);
  support::copy_on(nullptr, global.ptr, &g, sizeof g);
  Nvfp4View const view{data.as<std::uint8_t>(), scales.as<std::uint8_t>(), global.as<float>(), n};
  // Given mode reads the stored scale; Compute overwrites it each time with the same value.
  time_device(state, nullptr, [&] { quantize_nvfp4(src.as<bf16>(), view, mode, nullptr); });
  state.SetLabel(mode == ScaleMode::Compute ? "computed global scale (2 passes)" : "given scale");
  report_bandwidth(state, static_cast<double>(n * 2 + n / 2 + n / 16));
}

// Computed-scale NVFP4 quantize at decode sizes, separate launches (memset, amax, quantize,
// finalise) vs one cooperative launch (detail::QuantizeLaunch), side by side: rows of 7168 bf16,
// eager (20 calls back to back) or one CUDA graph of 20 captured calls; time per iteration (20
// calls). scale_only:1 times the scale alone (detail::scale_from_amax: what the fused quantize +
// gather computes before its LSA kernel; memset, amax, finalise vs one launch).
void BM_QuantizeNvfp4Launches(benchmark::State& state) {
  constexpr int kCalls = 20;
  std::size_t const n = static_cast<std::size_t>(state.range(0)) * 7168;
  auto const launch =
      state.range(1) ? detail::QuantizeLaunch::One : detail::QuantizeLaunch::Separate;
  bool const graph = state.range(2) != 0;
  bool const scale_only = state.range(3) != 0;
  DeviceMemory src(n * 2), data(n / 2), scales(n / 16), global(sizeof(float));
  fill_bf16(src, n);
  Nvfp4View const view{data.as<std::uint8_t>(), scales.as<std::uint8_t>(), global.as<float>(), n};
  cudaStream_t stream = nullptr;
  SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto const calls = [&] {
    for (int i = 0; i < kCalls; ++i) {
      if (scale_only) {
        detail::scale_from_amax(src.as<bf16>(), n, global.as<float>(), DataType::Nvfp4, launch,
                                stream);
      } else {
        detail::quantize_nvfp4(src.as<bf16>(), view, ScaleMode::Compute, launch, stream);
      }
    }
  };
  cudaGraphExec_t exec = nullptr;
  if (graph) {
    cudaGraph_t g = nullptr;
    SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    calls();
    SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(stream, &g));
    SYMMCOMM_CUDA_TRY(cudaGraphInstantiate(&exec, g, 0));
    SYMMCOMM_CUDA_TRY(cudaGraphDestroy(g));
  }
  time_device(state, stream, [&] {
    if (graph) {
      SYMMCOMM_CUDA_TRY(cudaGraphLaunch(exec, stream));
    } else {
      calls();
    }
  });
  if (exec != nullptr) SYMMCOMM_CUDA_TRY(cudaGraphExecDestroy(exec));
  SYMMCOMM_CUDA_TRY(cudaStreamDestroy(stream));
  state.SetLabel(std::string(scale_only ? "scale only, " : "") +
                 (launch == detail::QuantizeLaunch::One ? "one launch" : "separate") +
                 (graph ? ", graph" : ", eager") + ", " + std::to_string(kCalls) +
                 " calls per iteration");
  std::size_t const bytes = scale_only ? n * 2 : n * 2 + n / 2 + n / 16;
  report_bandwidth(state, static_cast<double>(kCalls) * static_cast<double>(bytes));
}

void BM_DequantizeNvfp4(benchmark::State& state) {
  std::size_t const n = static_cast<std::size_t>(state.range(0));
  DeviceMemory src(n * 2), data(n / 2), scales(n / 16), global(sizeof(float)), out(n * 2);
  fill_bf16(src, n);
  Nvfp4View const view{data.as<std::uint8_t>(), scales.as<std::uint8_t>(), global.as<float>(), n};
  quantize_nvfp4(src.as<bf16>(), view, ScaleMode::Compute, nullptr);
  time_device(state, nullptr, [&] { dequantize_nvfp4(view, out.as<bf16>(), nullptr); });
  report_bandwidth(state, static_cast<double>(n * 2 + n / 2 + n / 16));
}

void BM_QuantizeFp8(benchmark::State& state) {
  std::size_t const n = static_cast<std::size_t>(state.range(0));
  DeviceMemory src(n * 2), codes(n), scale(sizeof(float));
  fill_bf16(src, n);
  float const s = 10.0f / kE4m3Max;
  support::copy_on(nullptr, scale.ptr, &s, sizeof s);
  Fp8View const view{codes.as<std::uint8_t>(), scale.as<float>(), n, Fp8Format::E4M3};
  time_device(state, nullptr,
              [&] { quantize_fp8(src.as<bf16>(), view, ScaleMode::Given, nullptr); });
  report_bandwidth(state, static_cast<double>(n * 3));
}

void BM_DequantizeFp8(benchmark::State& state) {
  std::size_t const n = static_cast<std::size_t>(state.range(0));
  DeviceMemory src(n * 2), codes(n), scale(sizeof(float)), out(n * 2);
  fill_bf16(src, n);
  Fp8View const view{codes.as<std::uint8_t>(), scale.as<float>(), n, Fp8Format::E4M3};
  quantize_fp8(src.as<bf16>(), view, ScaleMode::Compute, nullptr);
  time_device(state, nullptr, [&] { dequantize_fp8(view, out.as<bf16>(), nullptr); });
  report_bandwidth(state, static_cast<double>(n * 3));
}

// Stream time of the PDL fence symmcomm enqueues before NCCL's symmetric kernels on NCCL
// 2.28.0-2.30.6: the cost of the mitigation, per collective call.
void BM_PdlFence(benchmark::State& state) {
  time_device(state, nullptr, [] { enqueue_pdl_fence(nullptr); });
}

constexpr std::int64_t kElems = std::int64_t{1} << 28;  // 512 MiB of bf16

BENCHMARK(BM_PdlFence)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DeviceCopy)->Arg(kElems * 2)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_QuantizeNvfp4)
    ->Args({kElems, 0})
    ->Args({kElems, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_QuantizeNvfp4Launches)
    ->ArgsProduct({{1, 8, 64, 512, 2048, 8192}, {0, 1}, {0, 1}, {0, 1}})
    ->ArgNames({"rows", "one_launch", "graph", "scale_only"})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DequantizeNvfp4)->Arg(kElems)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_QuantizeFp8)->Arg(kElems)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DequantizeFp8)->Arg(kElems)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace symmcomm::bench
