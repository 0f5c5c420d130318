#include "micro/mix_ceiling.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/launch.cuh"
#include "micro/device_memory.hpp"
#include "support/ordered_copy.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm::bench {

bool Mix::operator<(const Mix& o) const {
  return std::tie(in_bytes, side_in, out_bytes, side_out, inputs, outputs, items) <
         std::tie(o.in_bytes, o.side_in, o.out_bytes, o.side_out, o.inputs, o.outputs, o.items);
}

namespace {

constexpr int kMaxBuffers = 8;
constexpr int kThreads = 512;

struct MixArgs {
  const std::uint8_t* in[kMaxBuffers];
  const std::uint8_t* side_in[kMaxBuffers];
  std::uint8_t* out[kMaxBuffers];
  std::uint8_t* side_out[kMaxBuffers];
  int inputs, outputs;
  std::size_t items;
};

// 16-byte accesses where the item allows them, else 8-byte ones (the kernels' own widths).
template <int kBytes>
using Chunk = std::conditional_t<kBytes % 16 == 0, uint4, uint2>;

template <int kIn, int kSideIn, int kOut, int kSideOut>
__global__ void __launch_bounds__(kThreads) mix_kernel(const __grid_constant__ MixArgs a) {
  using In = Chunk<kIn>;
  using Out = Chunk<kOut>;
  constexpr int kInChunks = kIn / static_cast<int>(sizeof(In));
  constexpr int kOutChunks = kOut / static_cast<int>(sizeof(Out));
  std::size_t const stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < a.items;
       i += stride) {
    // Combine everything read so that no load can be dropped; write a function of it.
    std::uint32_t acc = 0;
    for (int p = 0; p < a.inputs; ++p) {
      const In* src = reinterpret_cast<const In*>(a.in[p] + i * kIn);
#pragma unroll
      for (int c = 0; c < kInChunks; ++c) {
        In const v = src[c];
        acc += v.x ^ v.y;
      }
      if constexpr (kSideIn > 0) acc += a.side_in[p][i];
    }
    for (int q = 0; q < a.outputs; ++q) {
      Out* dst = reinterpret_cast<Out*>(a.out[q] + i * kOut);
#pragma unroll
      for (int c = 0; c < kOutChunks; ++c) {
        Out v{};
        v.x = acc + static_cast<std::uint32_t>(c);
        v.y = acc;
        dst[c] = v;
      }
      if constexpr (kSideOut > 0) a.side_out[q][i] = static_cast<std::uint8_t>(acc);
    }
  }
}

using Kernel = void (*)(MixArgs);

Kernel kernel_for(const Mix& m) {
  auto const is = [&](int in, int side_in, int out, int side_out) {
    return m.in_bytes == in && m.side_in == side_in && m.out_bytes == out && m.side_out == side_out;
  };
  if (is(8, 1, 32, 0)) return mix_kernel<8, 1, 32, 0>;
  if (is(16, 0, 32, 0)) return mix_kernel<16, 0, 32, 0>;
  if (is(8, 1, 8, 1)) return mix_kernel<8, 1, 8, 1>;
  if (is(32, 0, 8, 1)) return mix_kernel<32, 0, 8, 1>;
  if (is(32, 0, 16, 0)) return mix_kernel<32, 0, 16, 0>;
  SYMMCOMM_FAIL("mix_ceiling: no ceiling kernel for items of "
                << m.in_bytes << "+" << m.side_in << " bytes in, " << m.out_bytes << "+"
                << m.side_out << " out");
}

double measure(const Mix& m) {
  SYMMCOMM_EXPECTS(
      m.inputs >= 1 && m.inputs <= kMaxBuffers && m.outputs >= 1 && m.outputs <= kMaxBuffers,
      "mix_ceiling: " << m.inputs << " inputs, " << m.outputs << " outputs");
  Kernel const kernel = kernel_for(m);
  std::vector<std::unique_ptr<DeviceMemory>> memory;
  MixArgs a{};
  auto const buffer = [&](std::size_t bytes) {
    memory.push_back(std::make_unique<DeviceMemory>(std::max<std::size_t>(bytes, 1)));
    support::fill_on(nullptr, memory.back()->ptr, 1, std::max<std::size_t>(bytes, 1));
    return memory.back()->as<std::uint8_t>();
  };
  for (int p = 0; p < m.inputs; ++p) {
    a.in[p] = buffer(m.items * static_cast<std::size_t>(m.in_bytes));
    a.side_in[p] = m.side_in > 0 ? buffer(m.items) : nullptr;
  }
  for (int q = 0; q < m.outputs; ++q) {
    a.out[q] = buffer(m.items * static_cast<std::size_t>(m.out_bytes));
    a.side_out[q] = m.side_out > 0 ? buffer(m.items) : nullptr;
  }
  a.inputs = m.inputs;
  a.outputs = m.outputs;
  a.items = m.items;
  int resident = 0;
  SYMMCOMM_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &resident, reinterpret_cast<const void*>(kernel), kThreads, 0));
  std::size_t const wanted = (m.items + kThreads - 1) / kThreads;
  auto const grid = static_cast<unsigned>(
      std::min<std::size_t>(wanted, static_cast<std::size_t>(detail::current_device_sm_count()) *
                                        static_cast<std::size_t>(std::max(resident, 1))));
  cudaEvent_t start, stop;
  SYMMCOMM_CUDA_TRY(cudaEventCreate(&start));
  SYMMCOMM_CUDA_TRY(cudaEventCreate(&stop));
  std::vector<float> ms(10);
  for (int i = -3; i < static_cast<int>(ms.size()); ++i) {
    SYMMCOMM_CUDA_TRY(cudaEventRecord(start));
    kernel<<<grid, kThreads>>>(a);
    SYMMCOMM_CUDA_TRY(cudaGetLastError());
    SYMMCOMM_CUDA_TRY(cudaEventRecord(stop));
    SYMMCOMM_CUDA_TRY(cudaEventSynchronize(stop));
    if (i >= 0)
      SYMMCOMM_CUDA_TRY(cudaEventElapsedTime(&ms[static_cast<std::size_t>(i)], start, stop));
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return m.bytes() / (static_cast<double>(ms[ms.size() / 2]) / 1e3);
}

}  // namespace

double mix_ceiling_bytes_per_second(const Mix& mix) {
  static std::mutex mutex;
  static std::map<Mix, double> measured;
  std::lock_guard<std::mutex> lock(mutex);
  auto const it = measured.find(mix);
  if (it != measured.end()) return it->second;
  double const bandwidth = measure(mix);
  measured.emplace(mix, bandwidth);
  return bandwidth;
}

void report_mix(benchmark::State& state, double bytes_per_iteration, const Mix& mix) {
  double const ceiling = mix_ceiling_bytes_per_second(mix);
  state.counters["mix_GBps"] = ceiling / 1e9;
  state.counters["vs_mix"] =
      benchmark::Counter(bytes_per_iteration * static_cast<double>(state.iterations()) / ceiling,
                         benchmark::Counter::kIsRate);
}

}  // namespace symmcomm::bench
