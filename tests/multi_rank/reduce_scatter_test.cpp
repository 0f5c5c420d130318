// Reduce-scatters across real ranks, every path the mode allows, against host references
// computed independently on every rank: quantized inputs to fp32, bf16 and re-quantized output,
// under graph capture, and exact bf16 sums.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "multi_rank/checks.hpp"
#include "multi_rank/world.hpp"
#include "support/gpu_test.hpp"
#include "support/reference.hpp"
#include "support/tensors.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/comm/wait.hpp"
#include "symmcomm/formats/bf16.hpp"

namespace symmcomm::test {
namespace {

// ---- reduce-scatter ------------------------------------------------------------------------

// Re-quantized output (the input's format, scale computed from the sum): bit-identical to the
// host quantizing the same path's fp32 result, data, block scales and scale alike.
template <class Run>
void check_requantized(const std::vector<HostNvfp4>&, const std::vector<float>& fp32, Run& run,
                       const Options& o, Path expected, const std::string& at) {
  std::size_t const shard = fp32.size();
  DeviceArray<std::uint8_t> data(shard / 2), scales(shard / kNvfp4BlockSize);
  DeviceArray<float> global(1);
  settle();
  Plan const p = run(Nvfp4View{data.get(), scales.get(), global.get(), shard}, o);
  sync();
  EXPECT_EQ(p.path, expected) << at << " re-quantized";
  HostNvfp4 const want = HostNvfp4::quantize(fp32);
  std::vector<std::uint8_t> got_data(shard / 2), got_scales(shard / kNvfp4BlockSize);
  float got_global = 0.0f;
  copy_sync(got_data.data(), data.get(), got_data.size());
  copy_sync(got_scales.data(), scales.get(), got_scales.size());
  copy_sync(&got_global, global.get(), sizeof(float));
  EXPECT_EQ(got_global, want.global_scale) << at << " re-quantized global scale";
  EXPECT_SAME_VECTORS(got_scales, want.scales, at + " re-quantized block scales");
  EXPECT_SAME_VECTORS(got_data, want.data, at + " re-quantized data");
}

template <class Run>
void check_requantized(const std::vector<HostFp8>& all, const std::vector<float>& fp32, Run& run,
                       const Options& o, Path expected, const std::string& at) {
  std::size_t const shard = fp32.size();
  Fp8Format const f = all.front().format;
  DeviceArray<std::uint8_t> codes(shard);
  DeviceArray<float> scale(1);
  settle();
  Plan const p = run(Fp8View{codes.get(), scale.get(), shard, f}, o);
  sync();
  EXPECT_EQ(p.path, expected) << at << " re-quantized";
  HostFp8 const want = HostFp8::quantize(fp32, f);
  std::vector<std::uint8_t> got(shard);
  float got_scale = 0.0f;
  copy_sync(got.data(), codes.get(), shard);
  copy_sync(&got_scale, scale.get(), sizeof(float));
  EXPECT_EQ(got_scale, want.scale) << at << " re-quantized scale";
  EXPECT_SAME_VECTORS(got, want.codes, at + " re-quantized codes");
}

// Reduce-scatter of a quantized input to fp32, bf16 and its own format on every path: fp32
// against the host's rank-order fp32 sum, bf16 bit-identical to the same path's fp32 result
// rounded once, the re-quantized output as check_requantized says.
template <class Q, class Run>
void check_quantized_reduce(const std::vector<Q>& all, std::size_t shard, const char* what,
                            Run&& run) {
  World& w = world();
  std::size_t const first = static_cast<std::size_t>(w.rank) * shard;
  auto const want = reduce_like_kernel(all, first, shard);
  DeviceArray<float> out32(shard);
  DeviceArray<bf16> out16(shard);
  settle();
  for (PathChoice choice : paths_to_try(false, lsa_can())) {
    Options o;
    o.path = choice;
    poison_on_stream(out32.get(), out32.bytes());
    poison_on_stream(out16.get(), out16.bytes());
    Plan const p32 = run(Fp32Span{out32.get(), shard}, o);
    Plan const p16 = run(Bf16Span{out16.get(), shard}, o);
    sync();
    std::string const at =
        std::string(what) + " (" + to_string(choice) + " -> " + to_string(p32.path) + ")";
    EXPECT_EQ(p16.path, p32.path) << at;
    expect_path(choice, p32.path, at);
    std::vector<float> got(shard);
    std::vector<bf16> got16(shard);
    copy_sync(got.data(), out32.get(), out32.bytes());
    copy_sync(got16.data(), out16.get(), out16.bytes());
    std::size_t bad = 0, bad16 = 0;
    for (std::size_t i = 0; i < shard; ++i) {
      if (!(std::fabs(got[i] - want[i]) <= fma_bound(all, first + i))) ++bad;
      std::uint16_t bits = 0;
      std::memcpy(&bits, &got16[i], 2);
      if (bits != float_to_bf16_bits(got[i])) ++bad16;
    }
    EXPECT_EQ(bad, 0u) << at << ": fp32 elements off the host's rank-order sum";
    EXPECT_EQ(bad16, 0u) << at << ": bf16 elements not the fp32 result rounded once";
    check_requantized(all, got, run, o, p32.path, at);
  }
}

// Every rank's input as random floats, quantized on the host.
std::vector<float> reduce_input(int rank, std::size_t total) {
  return random_floats(total, seed_of(rank, 5), 1.0f + static_cast<float>(rank));
}
constexpr std::size_t kReduceShard = 16 * 2048;

TEST(MultiRankReduceScatter, Nvfp4ToFp32Bf16AndNvfp4OnEveryPath) {
  World& w = world();
  std::size_t const total = kReduceShard * static_cast<std::size_t>(w.size);
  std::vector<HostNvfp4> q;
  for (int r = 0; r < w.size; ++r) q.push_back(HostNvfp4::quantize(reduce_input(r, total)));
  HostNvfp4 const& mine = q[static_cast<std::size_t>(w.rank)];
  PoolArray<std::uint8_t> data(total / 2), scales(total / kNvfp4BlockSize);
  PoolArray<float> global(1);
  data.upload(mine.data);
  scales.upload(mine.scales);
  global.upload({mine.global_scale});
  Nvfp4View const send{data.get(), scales.get(), global.get(), total};
  check_quantized_reduce(q, kReduceShard, "nvfp4 reduce_scatter", [&](auto out, const Options& o) {
    return reduce_scatter(w.comm, send, out, w.stream, o);
  });
}

TEST(MultiRankReduceScatter, Fp8ToFp32Bf16AndFp8OnEveryPath) {
  World& w = world();
  std::size_t const total = kReduceShard * static_cast<std::size_t>(w.size);
  std::vector<HostFp8> q8;
  for (int r = 0; r < w.size; ++r) {
    q8.push_back(HostFp8::quantize(reduce_input(r, total), Fp8Format::E4M3));
  }
  PoolArray<std::uint8_t> codes(total);
  PoolArray<float> scale8(1);
  codes.upload(q8[static_cast<std::size_t>(w.rank)].codes);
  scale8.upload({q8[static_cast<std::size_t>(w.rank)].scale});
  Fp8View const send8{codes.get(), scale8.get(), total, Fp8Format::E4M3};
  check_quantized_reduce(q8, kReduceShard, "fp8 reduce_scatter", [&](auto out, const Options& o) {
    return reduce_scatter(w.comm, send8, out, w.stream, o);
  });
}

// Grows the communicator's workspace past what any earlier call needed: an eager fallback
// reduce-scatter of `shard` elements per rank from plain memory.
void grow_workspace(std::size_t shard) {
  World& w = world();
  std::size_t const total = shard * static_cast<std::size_t>(w.size);
  DeviceArray<std::uint8_t> data(total / 2), scales(total / kNvfp4BlockSize);
  DeviceArray<float> global(1), out(shard);
  settle();
  float const one = 1.0f;
  copy_sync(global.get(), &one, sizeof one);
  Options o;
  o.path = PathChoice::Fallback;
  reduce_scatter(w.comm, Nvfp4View{data.get(), scales.get(), global.get(), total},
                 Fp32Span{out.get(), shard}, w.stream, o);
  sync();
}

// A quantized reduce-scatter captured in a CUDA graph and replayed with new inputs each time:
// every replay matches the host's sum of that replay's inputs (not only the eager run), on every
// path, also after a larger call grew the communicator's workspace between replays (the graph
// still holds the old one). The LSA kernel's barrier epochs must survive replays too.
TEST(MultiRankReduceScatter, Nvfp4GraphReplaysMatchTheHost) {
  World& w = world();
  std::size_t const shard = 16 * 512;
  std::size_t const total = shard * static_cast<std::size_t>(w.size);
  std::size_t const first = static_cast<std::size_t>(w.rank) * shard;
  PoolArray<std::uint8_t> data(total / 2), scales(total / kNvfp4BlockSize);
  PoolArray<float> global(1), out(shard);
  Nvfp4View const send{data.get(), scales.get(), global.get(), total};
  std::size_t growth = 4 * kReduceShard;
  for (PathChoice choice : paths_to_try(false, lsa_can())) {
    Options o;
    o.path = choice;
    // As a user would: once eagerly (the workspace cannot grow during capture), then capture.
    reduce_scatter(w.comm, send, Fp32Span{out.get(), shard}, w.stream, o);
    sync();
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(w.stream, cudaStreamCaptureModeThreadLocal));
    Plan const plan = reduce_scatter(w.comm, send, Fp32Span{out.get(), shard}, w.stream, o);
    SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(w.stream, &graph));
    SYMMCOMM_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
    std::string const at = std::string("captured nvfp4 reduce_scatter (") + to_string(choice) + ")";
    expect_path(choice, plan.path, at);
    for (int replay = 0; replay < 3; ++replay) {
      if (replay == 2) {
        grow_workspace(growth);
        growth += kReduceShard;
      }
      std::vector<HostNvfp4> q;
      for (int r = 0; r < w.size; ++r) {
        q.push_back(HostNvfp4::quantize(
            random_floats(total, seed_of(r, 40 + replay), 1.0f + static_cast<float>(replay))));
      }
      HostNvfp4 const& mine = q[static_cast<std::size_t>(w.rank)];
      data.upload(mine.data);
      scales.upload(mine.scales);
      global.upload({mine.global_scale});
      out.poison();
      SYMMCOMM_CUDA_TRY(cudaGraphLaunch(exec, w.stream));
      sync();
      auto const want = reduce_like_kernel(q, first, shard);
      std::vector<float> const got = out.download();
      std::size_t bad = 0;
      for (std::size_t i = 0; i < shard; ++i) {
        if (!(std::fabs(got[i] - want[i]) <= fma_bound(q, first + i))) ++bad;
      }
      EXPECT_EQ(bad, 0u) << at << ", replay " << replay << ": elements off the host's sum";
    }
    SYMMCOMM_CUDA_TRY(cudaGraphExecDestroy(exec));
    SYMMCOMM_CUDA_TRY(cudaGraphDestroy(graph));
  }
}

TEST(MultiRankReduceScatter, Bf16SumsAreExactOnEveryPath) {
  World& w = world();
  std::size_t const shard = 1 << 15;
  std::size_t const total = shard * static_cast<std::size_t>(w.size);
  // Small integers: every partial sum is exact in bf16, whatever order NCCL adds in.
  auto const value = [](int rank, std::size_t i) {
    return static_cast<float>(static_cast<int>((i * 7 + static_cast<std::size_t>(rank) * 13) % 17) -
                              8);
  };
  std::vector<float> mine(total);
  for (std::size_t i = 0; i < total; ++i) mine[i] = value(w.rank, i);
  PoolArray<std::uint16_t> send(total), recv(shard);
  send.upload(to_bf16_bits(mine));
  std::vector<std::uint16_t> want(shard);
  for (std::size_t i = 0; i < shard; ++i) {
    float s = 0.0f;
    for (int r = 0; r < w.size; ++r) s += value(r, static_cast<std::size_t>(w.rank) * shard + i);
    want[i] = float_to_bf16_bits(s);
  }
  for (PathChoice choice : paths_to_try(caps().symmetric_memory, false)) {
    recv.poison();
    Options o;
    o.path = choice;
    Plan const plan =
        reduce_scatter(w.comm, Bf16Span{reinterpret_cast<bf16*>(send.get()), total},
                       Bf16Span{reinterpret_cast<bf16*>(recv.get()), shard}, w.stream, o);
    sync();
    std::string const at = std::string("bf16 reduce_scatter (") + to_string(choice) + ")";
    expect_path(choice, plan.path, at);
    EXPECT_SAME_VECTORS(recv.download(), want, at);
  }
}

}  // namespace
}  // namespace symmcomm::test
