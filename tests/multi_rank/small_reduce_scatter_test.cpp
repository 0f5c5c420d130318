// The push-model small BF16 reduce-scatter (src/kernels/lsa_ll.hpp, LlReduceArgs): every rank
// writes the shard each peer owns into that peer's scratch lines with flags, each sums its own
// shard in fp32 in rank order and rounds once - no barrier. Checked bit for bit against the
// host's fp32 rank-order sum across real ranks: shards from one value to the limit, odd tails,
// unaligned buffers, every call twice with no host wait, one past the limit refused when forced,
// and one CUDA graph replayed with new inputs. The device call counter says which calls took the
// kernel.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm_state.hpp"
#include "comm/lsa_limits.hpp"
#include "multi_rank/checks.hpp"
#include "multi_rank/world.hpp"
#include "support/tensors.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm::test {
namespace {

bool has_push_kernel() {
  const char* off = std::getenv("SYMMCOMM_LSA_LL");
  if (!lsa_can() || (off != nullptr && std::string(off) == "0")) return false;
  return detail::state_of(world().comm)->ll_window != nullptr;
}

std::uint32_t kernel_calls() {
  const auto& state = detail::state_of(world().comm);
  sync();
  std::uint32_t calls = 0;
  copy_sync(&calls, state->ll_calls, sizeof(calls));
  return calls;
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
  std::uint32_t const before = kernel_calls();
  // Every call twice in a row and the list twice: a half is rewritten while the slowest rank
  // may still be reading the other, with nothing but the flags in between.
  for (int round = 0; round < 2; ++round) {
    for (auto& c : calls) {
      for (int again = 0; again < 2; ++again) {
        EXPECT_EQ(c->run(forced()).path, Path::LsaKernel);
      }
    }
  }
  EXPECT_EQ(kernel_calls() - before, 4u * calls.size());
  for (auto& c : calls) c->expect_summed(0, "shard of " + std::to_string(c->shard));
  expect_same_path_everywhere(Path::LsaKernel, "small reduce-scatters");
}

TEST(MultiRankSmallReduceScatter, OnePastTheLimitIsRefusedWhenForcedAndAutoKeepsNccl) {
  if (!has_push_kernel()) GTEST_SKIP() << kNoKernel << caps().reason;
  Call big(detail::kLlMaxBytesPerRank / 2 + 4, 0, 1);
  big.upload(0);
  std::string const text = logic_error_text([&] { big.run(forced()); });
  EXPECT_NE(text.find("Options::path = lsa-kernel cannot be taken"), std::string::npos) << text;
  Call small(256, 0, 2);
  small.upload(0);
  EXPECT_NE(small.run(Options{}).path, Path::LsaKernel) << "Auto takes the kernel unmeasured";
  sync();
  small.expect_summed(0, "Auto's path");
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

}  // namespace
}  // namespace symmcomm::test
