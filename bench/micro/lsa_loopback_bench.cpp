// symmcomm's LSA kernels over N virtual ranks on one GPU (loopback), in bytes read + written
// per second beside the device-to-device copy measured in the same run (counter vs_copy) and
// beside a ceiling with the kernel's own read/write mix (vs_mix, micro/mix_ceiling.hpp).
// One iteration runs all N ranks' launches. Sizes put ~144 MiB of quantized data in every
// rank's receive (all-gather) or send (reduce-scatter) buffer, far beyond L2.

#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "formats/codecs_internal.hpp"
#include "micro/device_memory.hpp"
#include "micro/device_timer.hpp"
#include "micro/mix_ceiling.hpp"
#include "support/ordered_copy.hpp"
#include "symmcomm/formats/codecs.hpp"
#include "symmcomm/formats/scale_layout.hpp"
#include "symmcomm/testing/loopback.hpp"

namespace symmcomm::bench {
namespace {

constexpr std::size_t kTotalElems = std::size_t{1} << 28;  // gathered (or reduced) elements

// One NVFP4 tensor of `count` elements in device memory.
struct Nvfp4Memory {
  explicit Nvfp4Memory(std::size_t elements)
      : data(elements / 2), scales(elements / 16), global(64 * sizeof(float)), count(elements) {}
  Nvfp4View view() const {
    return Nvfp4View{data.as<std::uint8_t>(), scales.as<std::uint8_t>(), global.as<float>(), count};
  }
  DeviceMemory data, scales, global;
  std::size_t count;
};

// Quantized bf16 data (valid codes and scales, so decoders see realistic input).
void quantize_fill(const Nvfp4Memory& m) {
  DeviceMemory src(m.count * 2);
  fill_bf16(src, m.count);
  quantize_nvfp4(src.as<bf16>(), m.view(), ScaleMode::Compute, nullptr);
  SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
}

// All-gather NVFP4 (data + block scales + global scales): each rank reads its part once and
// writes it to all N ranks.
void BM_LoopbackAllGatherNvfp4(benchmark::State& state) {
  int const n = static_cast<int>(state.range(0));
  std::size_t const per_rank = kTotalElems / static_cast<std::size_t>(n);
  std::vector<std::unique_ptr<Nvfp4Memory>> s, r;
  std::vector<Nvfp4View> send, recv;
  for (int i = 0; i < n; ++i) {
    s.push_back(std::make_unique<Nvfp4Memory>(per_rank));
    quantize_fill(*s.back());
    r.push_back(std::make_unique<Nvfp4Memory>(kTotalElems));
    send.push_back(s.back()->view());
    recv.push_back(r.back()->view());
  }
  time_device(state, nullptr, [&] { loopback::all_gather(send, recv, nullptr); });
  double const part = static_cast<double>(per_rank / 2 + per_rank / 16 + sizeof(float));
  report_bandwidth(state, n * part * (1.0 + n));
  report_mix(state, n * part * (1.0 + n), Mix{8, 1, 8, 1, 1, n, kTotalElems / 16});
  state.SetLabel(std::to_string(n) + " virtual ranks");
}

// One-shot NVFP4 reduce-scatter into bf16: each rank reads its shard from all N ranks and
// writes its bf16 output.
void BM_LoopbackReduceScatterNvfp4(benchmark::State& state) {
  int const n = static_cast<int>(state.range(0));
  std::size_t const shard = kTotalElems / static_cast<std::size_t>(n);
  std::vector<std::unique_ptr<Nvfp4Memory>> s;
  std::vector<std::unique_ptr<DeviceMemory>> o;
  std::vector<Nvfp4View> send;
  std::vector<Bf16Span> recv;
  for (int i = 0; i < n; ++i) {
    s.push_back(std::make_unique<Nvfp4Memory>(kTotalElems));
    quantize_fill(*s.back());
    o.push_back(std::make_unique<DeviceMemory>(shard * 2));
    send.push_back(s.back()->view());
    recv.push_back(Bf16Span{o.back()->as<bf16>(), shard});
  }
  time_device(state, nullptr, [&] { loopback::reduce_scatter(send, recv, nullptr); });
  double const read = static_cast<double>(n) * static_cast<double>(shard / 2 + shard / 16);
  report_bandwidth(state, n * (read + static_cast<double>(shard * 2)));
  report_mix(state, n * (read + static_cast<double>(shard * 2)),
             Mix{8, 1, 32, 0, n, 1, kTotalElems / 16});
  state.SetLabel(std::to_string(n) + " virtual ranks");
}

// One-shot FP8 reduce-scatter into bf16.
void BM_LoopbackReduceScatterFp8(benchmark::State& state) {
  int const n = static_cast<int>(state.range(0));
  std::size_t const shard = kTotalElems / static_cast<std::size_t>(n);
  std::vector<std::unique_ptr<DeviceMemory>> codes, scales, o;
  std::vector<Fp8View> send;
  std::vector<Bf16Span> recv;
  DeviceMemory src(kTotalElems * 2);
  fill_bf16(src, kTotalElems);
  for (int i = 0; i < n; ++i) {
    codes.push_back(std::make_unique<DeviceMemory>(kTotalElems));
    scales.push_back(std::make_unique<DeviceMemory>(sizeof(float)));
    send.push_back(Fp8View{codes.back()->as<std::uint8_t>(), scales.back()->as<float>(),
                           kTotalElems, Fp8Format::E4M3});
    quantize_fp8(src.as<bf16>(), send.back(), ScaleMode::Compute, nullptr);
    o.push_back(std::make_unique<DeviceMemory>(shard * 2));
    recv.push_back(Bf16Span{o.back()->as<bf16>(), shard});
  }
  SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
  time_device(state, nullptr, [&] { loopback::reduce_scatter(send, recv, nullptr); });
  double const bytes =
      n * (static_cast<double>(n) * static_cast<double>(shard) + static_cast<double>(shard * 2));
  report_bandwidth(state, bytes);
  report_mix(state, bytes, Mix{16, 0, 32, 0, n, 1, kTotalElems / 16});
  state.SetLabel(std::to_string(n) + " virtual ranks");
}

// Fused bf16 -> NVFP4 quantize + all-gather: each rank reads its bf16 input and writes the
// quantized part to all N ranks. kComputed: each rank's global scale is computed from its
// input first, as quantize_all_gather does without a given scale (an amax pass over the
// input, not counted in the bytes: the figure shows its cost); else given.
template <bool kComputed>
void BM_LoopbackQuantizeAllGatherNvfp4(benchmark::State& state) {
  int const n = static_cast<int>(state.range(0));
  std::size_t const per_rank = kTotalElems / static_cast<std::size_t>(n);
  std::vector<std::unique_ptr<DeviceMemory>> in, g;
  std::vector<std::unique_ptr<Nvfp4Memory>> r;
  std::vector<Bf16Span> input;
  std::vector<const float*> scale;
  std::vector<Nvfp4View> recv;
  float const global = nvfp4_global_scale(10.0f);
  for (int i = 0; i < n; ++i) {
    in.push_back(std::make_unique<DeviceMemory>(per_rank * 2));
    fill_bf16(*in.back(), per_rank);
    g.push_back(std::make_unique<DeviceMemory>(sizeof(float)));
    support::copy_on(nullptr, g.back()->ptr, &global, sizeof global);
    r.push_back(std::make_unique<Nvfp4Memory>(kTotalElems));
    input.push_back(Bf16Span{in.back()->as<bf16>(), per_rank});
    scale.push_back(g.back()->as<float>());
    recv.push_back(r.back()->view());
  }
  time_device(state, nullptr, [&] {
    if constexpr (kComputed) {
      for (int i = 0; i < n; ++i) {
        detail::scale_from_amax(input[static_cast<std::size_t>(i)].data, per_rank,
                                g[static_cast<std::size_t>(i)]->as<float>(), DataType::Nvfp4,
                                nullptr);
      }
    }
    loopback::quantize_all_gather(input, scale, recv, nullptr);
  });
  double const part = static_cast<double>(per_rank / 2 + per_rank / 16 + sizeof(float));
  report_bandwidth(state, n * (static_cast<double>(per_rank * 2) + n * part));
  report_mix(state, n * (static_cast<double>(per_rank * 2) + n * part),
             Mix{32, 0, 8, 1, 1, n, kTotalElems / 16});
  state.SetLabel(std::to_string(n) + " virtual ranks, " + (kComputed ? "computed" : "given") +
                 " scale");
}

// Fused bf16 -> FP8 (e4m3, per-tensor scale) quantize + all-gather: each rank reads its bf16
// input and writes its FP8 codes and scale to all N ranks.
void BM_LoopbackQuantizeAllGatherFp8(benchmark::State& state) {
  int const n = static_cast<int>(state.range(0));
  std::size_t const per_rank = kTotalElems / static_cast<std::size_t>(n);
  std::vector<std::unique_ptr<DeviceMemory>> in, g, codes, scales;
  std::vector<Bf16Span> input;
  std::vector<const float*> scale;
  std::vector<Fp8View> recv;
  float const s = 10.0f / 448.0f;
  for (int i = 0; i < n; ++i) {
    in.push_back(std::make_unique<DeviceMemory>(per_rank * 2));
    fill_bf16(*in.back(), per_rank);
    g.push_back(std::make_unique<DeviceMemory>(sizeof(float)));
    support::copy_on(nullptr, g.back()->ptr, &s, sizeof s);
    codes.push_back(std::make_unique<DeviceMemory>(kTotalElems));
    scales.push_back(std::make_unique<DeviceMemory>(64 * sizeof(float)));
    input.push_back(Bf16Span{in.back()->as<bf16>(), per_rank});
    scale.push_back(g.back()->as<float>());
    recv.push_back(Fp8View{codes.back()->as<std::uint8_t>(), scales.back()->as<float>(),
                           kTotalElems, Fp8Format::E4M3});
  }
  time_device(state, nullptr, [&] { loopback::quantize_all_gather(input, scale, recv, nullptr); });
  double const part = static_cast<double>(per_rank + sizeof(float));
  report_bandwidth(state, n * (static_cast<double>(per_rank * 2) + n * part));
  report_mix(state, n * (static_cast<double>(per_rank * 2) + n * part),
             Mix{32, 0, 16, 0, 1, n, kTotalElems / 16});
  state.SetLabel(std::to_string(n) + " virtual ranks");
}

// NVFP4 all-gather whose block scales must end in the GEMMs' swizzled layout
// (Nvfp4View::scale_layout), MoE-dispatch shaped: rows of 7168 elements (448 scale columns),
// `tokens` rows per rank. kInto: the gather kernel writes the scales swizzled in place. Else
// what engines do today: gather linear scales, then one swizzle pass per rank
// (swizzle_nvfp4_scales). Bytes counted as the plain gather's, so the two rows compare directly.
template <bool kInto>
void BM_LoopbackAllGatherNvfp4Swizzled(benchmark::State& state) {
  int const n = static_cast<int>(state.range(0));
  std::size_t const tokens = static_cast<std::size_t>(state.range(1));
  std::size_t const row = 7168, cols = row / 16;
  std::size_t const per_rank = tokens * row, total = per_rank * static_cast<std::size_t>(n);
  std::size_t const rows = total / row;
  std::vector<std::unique_ptr<Nvfp4Memory>> s, r;
  std::vector<std::unique_ptr<DeviceMemory>> swizzled;
  std::vector<Nvfp4View> send, recv, recv_swizzled;
  for (int i = 0; i < n; ++i) {
    s.push_back(std::make_unique<Nvfp4Memory>(per_rank));
    quantize_fill(*s.back());
    r.push_back(std::make_unique<Nvfp4Memory>(total));
    swizzled.push_back(std::make_unique<DeviceMemory>(swizzled_scale_bytes(rows, cols)));
    send.push_back(s.back()->view());
    recv.push_back(r.back()->view());
    Nvfp4View v = r.back()->view();
    v.block_scales = swizzled.back()->as<std::uint8_t>();
    recv_swizzled.push_back(v.with_swizzled_scales(row));
  }
  time_device(state, nullptr, [&] {
    if constexpr (kInto) {
      loopback::all_gather(send, recv_swizzled, nullptr);
    } else {
      loopback::all_gather(send, recv, nullptr);
      for (int i = 0; i < n; ++i) {
        auto const k = static_cast<std::size_t>(i);
        swizzle_nvfp4_scales(recv[k].block_scales, rows, cols, swizzled[k]->as<std::uint8_t>(),
                             nullptr);
      }
    }
  });
  double const part = static_cast<double>(per_rank / 2 + per_rank / 16 + sizeof(float));
  report_bandwidth(state, n * part * (1.0 + n));
  state.SetLabel(std::to_string(n) + " virtual ranks, " + std::to_string(tokens) +
                 " tokens each, " + (kInto ? "swizzled in the gather" : "gather, then swizzle"));
}

void rank_counts(benchmark::internal::Benchmark* b) {
  b->Arg(2)->Arg(4)->Arg(8)->UseManualTime()->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_LoopbackAllGatherNvfp4)->Apply(rank_counts);
BENCHMARK(BM_LoopbackReduceScatterNvfp4)->Apply(rank_counts);
BENCHMARK(BM_LoopbackReduceScatterFp8)->Apply(rank_counts);
BENCHMARK(BM_LoopbackQuantizeAllGatherNvfp4<false>)->Apply(rank_counts);
BENCHMARK(BM_LoopbackQuantizeAllGatherNvfp4<true>)->Apply(rank_counts);
BENCHMARK(BM_LoopbackQuantizeAllGatherFp8)->Apply(rank_counts);

void dispatch_shapes(benchmark::internal::Benchmark* b) {
  for (int tokens : {128, 1024, 4096}) b->Args({8, tokens});
  b->UseManualTime()->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_LoopbackAllGatherNvfp4Swizzled<true>)->Apply(dispatch_shapes);
BENCHMARK(BM_LoopbackAllGatherNvfp4Swizzled<false>)->Apply(dispatch_shapes);

}  // namespace
}  // namespace symmcomm::bench
