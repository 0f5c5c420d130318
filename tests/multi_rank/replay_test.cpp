// The communicator's kept calls (src/collectives/replay.hpp): the same call again is launched
// with the kept plan and arguments, reads the inputs as they are now, and stops being replayed
// as soon as anything planning read changes (the tensors, the options, the windows); the least
// recently used of more calls than kept is planned again. Checked
// across real ranks on symmcomm's small all-gather and push reduce-scatter, every result
// against the host; the communicator's replay counter says which calls were replayed.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/replay.hpp"
#include "comm/comm_state.hpp"
#include "multi_rank/checks.hpp"
#include "multi_rank/world.hpp"
#include "support/gpu_test.hpp"
#include "support/tensors.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/memory/symmetric_buffer.hpp"

namespace symmcomm::test {
namespace {

constexpr std::size_t kElements = 512;  // per rank: 1 KiB of BF16, the small kernels' size

std::uint64_t replays() {
  return world().comm.stats().replays();
}

Bf16Span span(const PoolArray<std::uint16_t>& a) {
  return Bf16Span{reinterpret_cast<bf16*>(a.get()), a.count()};
}

// Small integers in BF16 (exact, and so are their sums over 8 ranks): element i of `rank` in
// `round`.
std::uint16_t value(int rank, int round, std::size_t i) {
  return float_to_bf16_bits(static_cast<float>((rank + 1) * (round + 1) + static_cast<int>(i % 7)));
}

std::vector<std::uint16_t> values(int rank, int round, std::size_t n) {
  std::vector<std::uint16_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = value(rank, round, i);
  return v;
}

// One all-gather's tensors and its check against the host.
struct Gather {
  PoolArray<std::uint16_t> send{kElements};
  PoolArray<std::uint16_t> recv{kElements * static_cast<std::size_t>(world().size)};

  Plan run(int round, const Options& options = {}) {
    send.upload(values(world().rank, round, kElements));
    recv.poison();
    Plan const plan =
        all_gather(world().comm, ConstBf16Span(span(send)), span(recv), world().stream, options);
    std::vector<std::uint16_t> want;
    for (int r = 0; r < world().size; ++r) {
      auto const v = values(r, round, kElements);
      want.insert(want.end(), v.begin(), v.end());
    }
    EXPECT_SAME_VECTORS(recv.download(), want, "all-gather, round " + std::to_string(round));
    return plan;
  }
};

// Runs `step` and EXPECTs that it replayed `want` calls.
template <class F>
void expect_replays(std::uint64_t want, const std::string& what, F&& step) {
  std::uint64_t const before = replays();
  step();
  EXPECT_EQ(replays() - before, want) << what;
}

TEST(MultiRankReplay, TheSameCallIsReplayedWithTodaysInputsAndNothingElseIs) {
  if (!lsa_can()) GTEST_SKIP() << "no LSA team spanning the ranks: " << caps().reason;
  Gather a, b;
  Plan first;
  // Earlier tests' kept calls stop matching (a window registered anywhere changes the registry's
  // generation), so that none of them can be b's call.
  { SymmetricBuffer const flush(world().comm, 4096, world().stream); }
  a.run(0);  // planned and kept
  expect_replays(1, "the same call again", [&] { first = a.run(1); });
  EXPECT_EQ(first.path, Path::LsaKernel) << first.reason();
  expect_replays(1, "and again, new inputs", [&] {
    Plan const again = a.run(2);
    EXPECT_EQ(again.path, first.path);
    EXPECT_EQ(again.why, first.why);
    EXPECT_EQ(again.reason(), first.reason());
  });
  expect_replays(0, "another receive buffer", [&] { b.run(3); });
  expect_replays(1, "back to the first call, kept beside the second", [&] { a.run(4); });
  expect_replays(1, "the second again (buffers in turn, as double-buffered engines use them)",
                 [&] { b.run(4); });
  Options forced;
  forced.path = PathChoice::LsaKernel;
  expect_replays(0, "other options", [&] { a.run(5, forced); });
  expect_replays(1, "the same options again", [&] { a.run(6, forced); });
  {
    // A window registered on every rank: provenance may have changed, so the call is planned.
    SymmetricBuffer const extra(world().comm, 4096, world().stream);
    expect_replays(0, "after a window was registered", [&] { a.run(7, forced); });
    expect_replays(1, "kept again", [&] { a.run(8, forced); });
  }
  expect_replays(0, "after a window was deregistered", [&] { a.run(9, forced); });
  expect_path(PathChoice::LsaKernel, a.run(10, forced).path, "replayed, forced");
}

TEST(MultiRankReplay, TheLeastRecentlyUsedOfMoreCallsThanKeptIsPlannedAgain) {
  if (!lsa_can()) GTEST_SKIP() << "no LSA team spanning the ranks: " << caps().reason;
  std::vector<Gather> gathers(detail::kKeptCalls + 1);
  for (Gather& g : gathers) g.run(0);  // each kept; the last one replaces the first
  expect_replays(0, "the first call, replaced", [&] { gathers.front().run(1); });
  expect_replays(1, "the first call again, kept in place of the second",
                 [&] { gathers.front().run(2); });
  expect_replays(detail::kKeptCalls - 1, "the third call on, still kept", [&] {
    for (std::size_t i = 2; i < gathers.size(); ++i) gathers[i].run(3);
  });
  expect_replays(0, "the second call, replaced", [&] { gathers[1].run(4); });
}

TEST(MultiRankReplay, PushReduceScatterReplayedSumsTodaysInputs) {
  if (!lsa_can()) GTEST_SKIP() << "no LSA team spanning the ranks: " << caps().reason;
  auto const n = static_cast<std::size_t>(world().size);
  PoolArray<std::uint16_t> send(kElements * n), out(kElements);
  std::vector<std::vector<std::uint16_t>> got;
  auto call = [&] {
    return reduce_scatter(world().comm, ConstBf16Span(span(send)), span(out), world().stream);
  };
  send.upload(values(world().rank, 0, kElements * n));
  Plan const plan = call();
  std::uint64_t const before = replays();
  // Two replays on new inputs, one into each half of the scratch.
  for (int round = 1; round <= 2; ++round) {
    send.upload(values(world().rank, round, kElements * n));
    Plan const again = call();
    EXPECT_EQ(again.path, plan.path);
    got.push_back(out.download());
  }
  EXPECT_EQ(replays() - before, plan.path == Path::LsaKernel ? 2u : 0u) << plan.reason();
  for (int round = 1; round <= 2; ++round) {
    std::vector<std::uint16_t> want(kElements);
    for (std::size_t i = 0; i < kElements; ++i) {
      float sum = 0.0f;
      std::size_t const at = static_cast<std::size_t>(world().rank) * kElements + i;
      for (int r = 0; r < world().size; ++r) sum += bf16_bits_to_float(value(r, round, at));
      want[i] = float_to_bf16_bits(sum);
    }
    EXPECT_SAME_VECTORS(got[static_cast<std::size_t>(round - 1)], want,
                        "reduce-scatter, round " + std::to_string(round));
  }
}

}  // namespace
}  // namespace symmcomm::test
