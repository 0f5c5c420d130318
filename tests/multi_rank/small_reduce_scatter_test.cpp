// The push-model small BF16 reduce-scatter (src/kernels/lsa_ll.hpp, LlReduceArgs): every rank
// writes the shard each peer owns into that peer's scratch lines with flags, each sums its own
// shard in fp32 in rank order and rounds once - no barrier. Checked bit for bit against the
// host's fp32 rank-order sum across real ranks: shards from one value to the limit, odd tails,
// unaligned buffers, every call twice with no host wait, one past the limit refused when forced,
// and one CUDA graph replayed with new inputs. The device call counter says which calls took the
// kernel.

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "collectives/scratch.hpp"
#include "collectives/thresholds.hpp"
#include "comm/comm_state.hpp"
#include "kernels/lsa_ll.hpp"
#include "multi_rank/checks.hpp"
#include "multi_rank/world.hpp"
#include "support/reference.hpp"
#include "support/tensors.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm::test {
namespace {

bool has_push_kernel() {
  const char* off = std::getenv("SYMMCOMM_LSA_LL");
  if (!lsa_can() || (off != nullptr && std::string(off) == "0")) return false;
  return detail::scratch_of(*detail::state_of(world().comm)).window.window != nullptr;
}

Options forced() {
  Options o;
  o.path = PathChoice::LsaKernel;
  return o;
}

// One call's tensors: `shard` bf16 values per rank, both buffers `skew` values into a pool
// allocation (unaligned for skew > 0), inputs that differ per rank, salt and round.
struct Call {
  std::size_t shard, skew;
  int salt;
  std::unique_ptr<PoolArray<std::uint16_t>> send, recv;
  Call(std::size_t s, std::size_t k, int salt_)
      : shard(s),
        skew(k),
        salt(salt_),
        send(std::make_unique<PoolArray<std::uint16_t>>(s * world().size + k)),
        recv(std::make_unique<PoolArray<std::uint16_t>>(s + k)) {}
  std::vector<float> input(int rank, int round) const {
    return random_floats(shard * static_cast<std::size_t>(world().size),
                         seed_of(rank, salt * 100 + round));
  }
  void upload(int round) {
    std::vector<std::uint16_t> host(skew, 0);
    auto const bits = to_bf16_bits(input(world().rank, round));
    host.insert(host.end(), bits.begin(), bits.end());
    send->upload(host);
    recv->poison();
  }
  Plan run(const Options& o) {
    World& w = world();
    return reduce_scatter(
        w.comm, Bf16Span{reinterpret_cast<bf16*>(send->get() + skew), shard * w.size},
        Bf16Span{reinterpret_cast<bf16*>(recv->get() + skew), shard}, w.stream, o);
  }
  // This rank's shard of the sum: fp32 in rank order over the bf16 inputs, rounded once.
  void expect_summed(int round, const std::string& what) const {
    World& w = world();
    std::vector<float> sum(shard, 0.0f);
    for (int r = 0; r < w.size; ++r) {
      auto const bits = to_bf16_bits(input(r, round));
      for (std::size_t i = 0; i < shard; ++i) {
        sum[i] += bf16_bits_to_float(bits[static_cast<std::size_t>(w.rank) * shard + i]);
      }
    }
    auto const got = recv->download();
    std::vector<std::uint16_t> const mine(got.begin() + static_cast<std::ptrdiff_t>(skew),
                                          got.end());
    EXPECT_SAME_VECTORS(mine, to_bf16_bits(sum), what);
  }
};

constexpr const char* kNoKernel =
    "no push-model kernel here (no LSA team spanning the ranks, or SYMMCOMM_LSA_LL=0): ";

TEST(MultiRankSmallReduceScatter, ShardsUpToTheLimitTwiceWithoutHostWaitsMatchTheHost) {
  if (!has_push_kernel()) GTEST_SKIP() << kNoKernel << caps().reason;
  std::size_t const limit = detail::kLlMaxBytesPerRank / 2;  // bf16 values in a slot
  std::vector<std::unique_ptr<Call>> calls;
  int salt = 0;
  for (auto [shard, skew] : std::vector<std::pair<std::size_t, std::size_t>>{
           {1, 0}, {3, 1}, {4, 0}, {5, 0}, {512, 1}, {2047, 3}, {limit, 0}, {64, 0}}) {
    calls.push_back(std::make_unique<Call>(shard, skew, ++salt));
  }
  for (auto& c : calls) c->upload(0);
  std::uint32_t const before = ll_kernel_calls();
  // Every call twice in a row and the list twice: a half is rewritten while the slowest rank
  // may still be reading the other, with nothing but the flags in between.
  for (int round = 0; round < 2; ++round) {
    for (auto& c : calls) {
      for (int again = 0; again < 2; ++again) {
        EXPECT_EQ(c->run(forced()).path, Path::LsaKernel);
      }
    }
  }
  EXPECT_EQ(ll_kernel_calls() - before, 4u * calls.size());
  for (auto& c : calls) c->expect_summed(0, "shard of " + std::to_string(c->shard));
  expect_same_path_everywhere(Path::LsaKernel, "small reduce-scatters");
}

TEST(MultiRankSmallReduceScatter, OnePastTheLimitIsRefusedWhenForcedAndAutoTakesItBelow) {
  if (!has_push_kernel()) GTEST_SKIP() << kNoKernel << caps().reason;
  Call big(detail::kLlMaxBytesPerRank / 2 + 4, 0, 1);
  big.upload(0);
  std::string const text = logic_error_text([&] { big.run(forced()); });
  EXPECT_NE(text.find("Options::path = lsa-kernel cannot be taken"), std::string::npos) << text;
  // Auto: the push kernel up to its measured limit (symmetric buffers), NCCL's path above.
  std::size_t const limit = thresholds::kLsaReduceScatterMaxBytesPerRank / 2;  // bf16 values
  Call small(256, 0, 2), at(limit, 0, 3), past(limit + 8, 0, 4);
  for (Call* c : {&small, &at, &past}) c->upload(0);
  std::uint32_t const before = ll_kernel_calls();
  EXPECT_EQ(small.run(Options{}).path, Path::LsaKernel);
  EXPECT_EQ(at.run(Options{}).path, Path::LsaKernel);
  EXPECT_NE(past.run(Options{}).path, Path::LsaKernel);
  EXPECT_EQ(ll_kernel_calls() - before, 2u) << "push-kernel calls of Auto";
  small.expect_summed(0, "Auto's push kernel");
  at.expect_summed(0, "Auto at the limit");
  past.expect_summed(0, "Auto past the limit");
}

TEST(MultiRankSmallReduceScatter, OneGraphReplayedWithNewInputs) {
  if (!has_push_kernel()) GTEST_SKIP() << kNoKernel << caps().reason;
  World& w = world();
  Call a(1024, 0, 1), b(333, 1, 2);
  a.upload(0);
  b.upload(0);
  a.run(forced());  // eager first: the counter is not at 0 when the graph starts
  cudaGraph_t graph = nullptr;
  SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(w.stream, cudaStreamCaptureModeThreadLocal));
  a.run(forced());
  b.run(forced());
  SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(w.stream, &graph));
  cudaGraphExec_t exec = nullptr;
  SYMMCOMM_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 1; replay <= 4; ++replay) {
    a.upload(replay);
    b.upload(replay);
    SYMMCOMM_CUDA_TRY(cudaGraphLaunch(exec, w.stream));
    sync();
    a.expect_summed(replay, "replay " + std::to_string(replay) + ", a");
    b.expect_summed(replay, "replay " + std::to_string(replay) + ", b");
  }
  SYMMCOMM_CUDA_TRY(cudaGraphExecDestroy(exec));
  SYMMCOMM_CUDA_TRY(cudaGraphDestroy(graph));
}

// ---- quantized in (NVFP4, FP8): the push kernel against the host and the pull kernel --------

// One quantized shard size's check: the LSA path (forced) sums it with the push kernel (the
// device counter advances once per call) into fp32 and bf16; fp32 within the host's rank-order
// sum's rounding, bf16 the fp32 result rounded once, and both called twice with no host wait.
// The same call with the push kernel switched off takes the pull kernel: the same fp32 bits.
template <class Q, class Run>
void check_push(const std::vector<Q>& all, std::size_t shard, bool push_expected,
                const std::string& what, Run&& run) {
  World& w = world();
  std::size_t const first = static_cast<std::size_t>(w.rank) * shard;
  auto const want = reduce_like_kernel(all, first, shard);
  DeviceArray<float> out32(shard), pulled(shard);
  DeviceArray<bf16> out16(shard);
  settle();
  std::uint32_t const before = ll_kernel_calls();
  for (int again = 0; again < 2; ++again) {
    EXPECT_EQ(run(Fp32Span{out32.get(), shard}).path, Path::LsaKernel) << what;
    EXPECT_EQ(run(Bf16Span{out16.get(), shard}).path, Path::LsaKernel) << what;
  }
  EXPECT_EQ(ll_kernel_calls() - before, push_expected ? 4u : 0u) << what << ": push-kernel calls";
  detail::lsa::set_ll_gather(false);
  EXPECT_EQ(run(Fp32Span{pulled.get(), shard}).path, Path::LsaKernel) << what << " (pull)";
  detail::lsa::set_ll_gather(true);
  sync();
  std::vector<float> got(shard), pull(shard);
  std::vector<bf16> got16(shard);
  copy_sync(got.data(), out32.get(), out32.bytes());
  copy_sync(pull.data(), pulled.get(), pulled.bytes());
  copy_sync(got16.data(), out16.get(), out16.bytes());
  std::size_t bad = 0, bad16 = 0, differ = 0;
  for (std::size_t i = 0; i < shard; ++i) {
    if (!(std::fabs(got[i] - want[i]) <= fma_bound(all, first + i))) ++bad;
    std::uint16_t bits = 0;
    std::memcpy(&bits, &got16[i], 2);
    if (bits != float_to_bf16_bits(got[i])) ++bad16;
    if (std::memcmp(&got[i], &pull[i], sizeof(float)) != 0) ++differ;
  }
  EXPECT_EQ(bad, 0u) << what << ": fp32 elements off the host's rank-order sum";
  EXPECT_EQ(bad16, 0u) << what << ": bf16 elements not the fp32 result rounded once";
  EXPECT_EQ(differ, 0u) << what << ": fp32 elements differing from the pull kernel's";
}

// Shards from one 16-element unit (the quantized reduce-scatter's granule: one NVFP4 block, two
// lines of FP8 codes) to the decode limit, and one past it (the pull kernel then).
std::vector<std::size_t> quantized_shards() {
  std::size_t const limit = detail::lsa::kLlQuantizedMaxShard;
  return {16, 48, 1040, limit, limit + 16};
}

TEST(MultiRankSmallReduceScatter, Nvfp4ShardsArePushedAndMatchTheHostAndThePullKernel) {
  if (!has_push_kernel()) GTEST_SKIP() << kNoKernel << caps().reason;
  World& w = world();
  for (std::size_t shard : quantized_shards()) {
    std::size_t const total = shard * static_cast<std::size_t>(w.size);
    std::vector<HostNvfp4> q;
    for (int r = 0; r < w.size; ++r) {
      q.push_back(HostNvfp4::quantize(
          random_floats(total, seed_of(r, static_cast<int>(shard)), 1.0f + static_cast<float>(r))));
    }
    const HostNvfp4& mine = q[static_cast<std::size_t>(w.rank)];
    PoolArray<std::uint8_t> data(total / 2), scales(total / kNvfp4BlockSize);
    PoolArray<float> global(1);
    data.upload(mine.data);
    scales.upload(mine.scales);
    global.upload({mine.global_scale});
    Nvfp4View const send{data.get(), scales.get(), global.get(), total};
    check_push(q, shard, shard <= detail::lsa::kLlQuantizedMaxShard,
               "nvfp4 shard of " + std::to_string(shard),
               [&](auto out) { return reduce_scatter(w.comm, send, out, w.stream, forced()); });
  }
}

TEST(MultiRankSmallReduceScatter, Fp8ShardsArePushedAndMatchTheHostAndThePullKernel) {
  if (!has_push_kernel()) GTEST_SKIP() << kNoKernel << caps().reason;
  World& w = world();
  for (Fp8Format format : {Fp8Format::E4M3, Fp8Format::E5M2}) {
    for (std::size_t shard : quantized_shards()) {
      std::size_t const total = shard * static_cast<std::size_t>(w.size);
      std::vector<HostFp8> q;
      for (int r = 0; r < w.size; ++r) {
        q.push_back(HostFp8::quantize(random_floats(total, seed_of(r, static_cast<int>(shard) + 7),
                                                    1.0f + static_cast<float>(r) * 0.5f),
                                      format));
      }
      PoolArray<std::uint8_t> codes(total);
      PoolArray<float> scale(1);
      codes.upload(q[static_cast<std::size_t>(w.rank)].codes);
      scale.upload({q[static_cast<std::size_t>(w.rank)].scale});
      Fp8View const send{codes.get(), scale.get(), total, format};
      check_push(q, shard, shard <= detail::lsa::kLlQuantizedMaxShard,
                 "fp8 shard of " + std::to_string(shard),
                 [&](auto out) { return reduce_scatter(w.comm, send, out, w.stream, forced()); });
    }
  }
}

}  // namespace
}  // namespace symmcomm::test
