// Reduce-scatters with shard sizes on the device (symmcomm/collectives/device_counts.hpp) across
// real ranks: this rank's sum of its count rows lands at the top of recv and the rest is 0, on
// every path, eager and from one captured graph replayed with other counts; a count above capacity
// raises the overflow flag. BF16 and NVFP4 into BF16, against host references and the
// host-count reduce_scatterv.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "collectives/scratch.hpp"
#include "comm/comm_state.hpp"
#include "kernels/lsa_ll_device_counts.hpp"
#include "multi_rank/checks.hpp"
#include "multi_rank/device_counts_common.hpp"
#include "multi_rank/world.hpp"
#include "support/gpu_test.hpp"
#include "support/reference.hpp"
#include "support/tensors.hpp"
#include "symmcomm/collectives/device_counts.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/formats/bf16.hpp"

namespace symmcomm::test {
namespace {

// BF16 reduce-scatter with shard sizes on the device on `path` (Fallback: the rows laid out at
// capacity, then NCCL's reduce-scatter; LsaKernel: symmcomm's one-launch kernel reading peers'
// compact rows through the pool's window; Auto: the kernel where an LSA team spans the ranks):
// eager rounds, one graph replayed with new counts (0 rows and capacity among them), a count
// above capacity. Rows of `row` elements (vector items where row % 8 == 0, else element by
// element). Values are multiples of 1/8 below 4 in magnitude: every partial sum of up to 8 ranks
// is exact in bf16, so every path's result is the exact sum, bit for bit. `gathered`: the counts
// gathered before each call (DeviceCounts::count null, the counts array uploaded with every
// rank's count, as the dispatch's gather leaves it).
void bf16_scatter_device_counts(PathChoice path, std::size_t row, bool gathered = false) {
  World& w = world();
  int const n = w.size, me = w.rank;
  auto const un = static_cast<std::size_t>(n);
  SCOPED_TRACE(std::string(to_string(path)) + ", rows of " + std::to_string(row) +
               (gathered ? ", counts gathered before" : ""));
  Options options;
  options.path = path;
  bool const lsa = path == PathChoice::LsaKernel || (path == PathChoice::Auto && lsa_can());
  std::size_t const full = un * kCapacity * row;
  // Rank q's send element i (every rank sends the whole n x capacity rows of room).
  auto const value = [&](int q, std::size_t i) {
    return static_cast<float>(static_cast<int>((i * 37 + static_cast<std::size_t>(q) * 11) % 61) -
                              30) /
           8.0f;
  };
  std::vector<float> mine_values(full);
  for (std::size_t i = 0; i < full; ++i) mine_values[i] = value(me, i);
  PoolArray<std::uint16_t> send(full), recv(kCapacity * row);
  PoolArray<std::int32_t> count(1), counts(un), offsets(un), overflow(1);
  send.upload(to_bf16_bits(mine_values));
  overflow.upload({0});
  DeviceCounts const dc{gathered ? nullptr : count.get(), kCapacity, counts.get(), offsets.get(),
                        overflow.get()};
  // This round's counts: this rank's count, the counts array poisoned (the call writes it); or,
  // gathered before, every rank's count in the counts array.
  auto const set_counts = [&](const std::vector<std::int32_t>& c) {
    if (gathered) {
      counts.upload(c);
    } else {
      count.upload({c[static_cast<std::size_t>(me)]});
      counts.poison();
    }
  };
  auto const call = [&] {
    return reduce_scatterv(w.comm, Bf16Span{reinterpret_cast<bf16*>(send.get()), full},
                           Bf16Span{reinterpret_cast<bf16*>(recv.get()), kCapacity * row}, row, dc,
                           w.stream, options);
  };
  auto const expect = [&](const std::vector<std::int32_t>& wanted, const std::string& at) {
    std::vector<std::int32_t> clamped, prefix;
    std::int32_t sum = 0;
    for (std::int32_t c : wanted) {
      clamped.push_back(std::min<std::int32_t>(std::max(c, 0), kCapacity));
      prefix.push_back(sum);
      sum += clamped.back();
    }
    auto const first = static_cast<std::size_t>(prefix[static_cast<std::size_t>(me)]);
    auto const rows = static_cast<std::size_t>(clamped[static_cast<std::size_t>(me)]);
    std::vector<float> want(kCapacity * row, 0.0f);
    for (std::size_t i = 0; i < rows * row; ++i) {
      float acc = 0.0f;
      for (int q = 0; q < n; ++q)
        acc += bf16_bits_to_float(float_to_bf16_bits(value(q, first * row + i)));
      want[i] = acc;
    }
    auto const got = recv.download();
    EXPECT_SAME_VECTORS(got, to_bf16_bits(want), at + ": sums");
    for (std::size_t i = rows * row; i < got.size(); ++i) {
      ASSERT_EQ(got[i], 0u) << at << ": element " << i << " past this rank's count is not 0";
    }
    EXPECT_SAME_VECTORS(counts.download(), wanted, at + ": counts");
    EXPECT_SAME_VECTORS(offsets.download(), prefix, at + ": offsets");
  };
  for (int round = 0; round < 3; ++round) {
    auto const c = round_counts(round, n);
    set_counts(c);
    recv.poison();
    offsets.poison();
    Plan const plan = call();
    sync();
    expect_device_count_plan(plan, path, lsa);
    expect(c, "eager round " + std::to_string(round));
  }
  EXPECT_FALSE(overflowed(w.comm, dc, w.stream));
  cudaGraph_t graph = nullptr;
  SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(w.stream, cudaStreamCaptureModeThreadLocal));
  call();
  SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(w.stream, &graph));
  cudaGraphExec_t exec = nullptr;
  SYMMCOMM_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
  for (int round = 3; round < 7; ++round) {
    auto const c = round_counts(round == 6 ? 1 : round, n);
    set_counts(c);
    recv.poison();
    offsets.poison();
    SYMMCOMM_CUDA_TRY(cudaGraphLaunch(exec, w.stream));
    sync();
    expect(c, "graph replay " + std::to_string(round));
  }
  auto c = round_counts(0, n);
  c[0] = static_cast<std::int32_t>(kCapacity) + 5;
  set_counts(c);
  recv.poison();
  offsets.poison();
  SYMMCOMM_CUDA_TRY(cudaGraphLaunch(exec, w.stream));
  sync();
  expect(c, "count above capacity");
  EXPECT_TRUE(overflowed(w.comm, dc, w.stream));
  SYMMCOMM_CUDA_TRY(cudaGraphExecDestroy(exec));
  SYMMCOMM_CUDA_TRY(cudaGraphDestroy(graph));
}

// Counts in the lines forced off for the process: the one-launch kernel's barrier and count
// exchange (the counts-in-lines kernel: the test below).
TEST(MultiRankDeviceCounts, Bf16ReduceScatterWithDeviceCountsOnEveryPathEagerAndFromOneGraph) {
  CountsInLines const off(false);
  std::vector<PathChoice> paths{PathChoice::Fallback, PathChoice::Auto};
  if (lsa_can()) paths.push_back(PathChoice::LsaKernel);
  for (PathChoice path : paths) {
    for (std::size_t row : {std::size_t{256}, std::size_t{36}})
      bf16_scatter_device_counts(path, row);
  }
}

// The same calls with counts in the scratch lines (lsa::ll_device_counts_reduce, switched on for
// the test): every check above holds, and the device call counter says the kernel ran (3 eager
// rounds, 4 replays and the replay above capacity per run).
TEST(MultiRankDeviceCounts, Bf16ReduceScatterWithCountsInTheLines) {
  if (!lsa_can()) GTEST_SKIP() << "no LSA team spanning the ranks: " << caps().reason;
  const auto& state = detail::state_of(world().comm);
  if (detail::scratch_of(*state).window.window == nullptr)
    GTEST_SKIP() << "no scratch window (SYMMCOMM_LSA_LL=0)";
  std::uint32_t const before = ll_kernel_calls();
  {
    CountsInLines const on(true);
    bf16_scatter_device_counts(PathChoice::LsaKernel, 256);
    bf16_scatter_device_counts(PathChoice::Auto, 36);
  }
  EXPECT_EQ(ll_kernel_calls() - before, 2u * 8u) << "calls that took the counts-in-lines kernel";
}

// Counts gathered before the call (DeviceCounts::count null: the dispatch's gather left every
// rank's count in counts.counts) on every path: the same sums, eager and from one graph. The
// counts-in-lines kernel then sends the rows without a count exchange, and its plan says so.
TEST(MultiRankDeviceCounts, Bf16ReduceScatterWithCountsGatheredBefore) {
  std::vector<PathChoice> paths{PathChoice::Fallback, PathChoice::Auto};
  if (lsa_can()) paths.push_back(PathChoice::LsaKernel);
  for (bool lines : {false, true}) {
    CountsInLines const switched(lines);
    for (PathChoice path : paths) bf16_scatter_device_counts(path, 256, true);
  }
}

// Ranks that disagree on the gathered counts (rank 0 takes rank 1's count one lower, then one
// higher) never hang the counts-in-lines kernel: every rank whose count or offset rank 0 took
// differently sets the overflow flag, and rank 0's own sum is exact.
TEST(MultiRankDeviceCounts, CountsGatheredBeforeThatDisagreeRaiseOverflowWithoutAHang) {
  if (!lsa_can()) GTEST_SKIP() << "no LSA team spanning the ranks: " << caps().reason;
  const auto& state = detail::state_of(world().comm);
  if (detail::scratch_of(*state).window.window == nullptr)
    GTEST_SKIP() << "no scratch window (SYMMCOMM_LSA_LL=0)";
  World& w = world();
  int const n = w.size, me = w.rank;
  if (n < 2) GTEST_SKIP() << "one rank: no peer to disagree with";
  auto const un = static_cast<std::size_t>(n);
  std::size_t const row = 64, full = un * kCapacity * row;
  CountsInLines const on(true);
  std::vector<float> mine_values(full, 0.5f);
  PoolArray<std::uint16_t> send(full), recv(kCapacity * row);
  PoolArray<std::int32_t> counts(un), offsets(un), overflow(1);
  send.upload(to_bf16_bits(mine_values));
  DeviceCounts const dc{nullptr, kCapacity, counts.get(), offsets.get(), overflow.get()};
  for (int delta : {-1, 1}) {
    std::vector<std::int32_t> c;
    for (int q = 0; q < n; ++q) c.push_back(2 + q % 3);
    if (me == 0) c[1] += delta;
    counts.upload(c);
    overflow.upload({0});
    recv.poison();
    Plan const plan = reduce_scatterv(
        w.comm, Bf16Span{reinterpret_cast<bf16*>(send.get()), full},
        Bf16Span{reinterpret_cast<bf16*>(recv.get()), kCapacity * row}, row, dc, w.stream);
    sync();
    EXPECT_TRUE(plan.counts_gathered) << plan.reason();
    EXPECT_EQ(plan.reason().rfind("lsa-kernel (counts in the lines, gathered before): ", 0), 0u)
        << plan.reason();
    std::string const at = "rank 0 took rank 1's count " + std::to_string(delta);
    EXPECT_EQ(overflowed(w.comm, dc, w.stream), me != 0) << at;
    if (me == 0) {
      auto const got = recv.download();
      std::size_t const rows = static_cast<std::size_t>(c[0]);
      for (std::size_t i = 0; i < got.size(); ++i) {
        float const want = i < rows * row ? 0.5f * static_cast<float>(n) : 0.0f;
        ASSERT_EQ(bf16_bits_to_float(got[i]), want) << at << ": element " << i;
      }
    }
  }
}

// Reduce-scatter with shard sizes on the device: this rank's rows of the sum land at the top of
// recv, the rest of recv is 0; equal to the host-count reduce_scatterv of the same compact send.
TEST(MultiRankDeviceCounts, ReduceScatterWithDeviceCountsMatchesHostCounts) {
  World& w = world();
  int const n = w.size, me = w.rank;
  std::size_t const row = 256, cap = 12;
  std::vector<std::int32_t> c;
  std::size_t total_rows = 0;
  for (int q = 0; q < n; ++q) {
    c.push_back((3 * q + 5) % static_cast<std::int32_t>(cap + 1));
    total_rows += static_cast<std::size_t>(c.back());
  }
  std::size_t first = 0;
  for (int q = 0; q < me; ++q) first += static_cast<std::size_t>(c[static_cast<std::size_t>(q)]);
  std::size_t const mine = static_cast<std::size_t>(c[static_cast<std::size_t>(me)]);
  PoolArray<std::int32_t> count(1), counts(static_cast<std::size_t>(n)),
      offsets(static_cast<std::size_t>(n)), overflow(1);
  count.upload({c[static_cast<std::size_t>(me)]});
  overflow.upload({0});
  DeviceCounts const dc{count.get(), cap, counts.get(), offsets.get(), overflow.get()};
  // BF16: small integers, so every sum is exact whatever NCCL's order.
  std::size_t const full = static_cast<std::size_t>(n) * cap * row;
  std::vector<float> values(full, 0.0f);
  for (std::size_t i = 0; i < total_rows * row; ++i) {
    values[i] =
        static_cast<float>(static_cast<int>((i * 7 + static_cast<std::size_t>(me) * 3) % 9) - 4);
  }
  PoolArray<std::uint16_t> send(full), recv(cap * row);
  send.upload(to_bf16_bits(values));
  recv.poison();
  reduce_scatterv(w.comm, Bf16Span{reinterpret_cast<bf16*>(send.get()), full},
                  Bf16Span{reinterpret_cast<bf16*>(recv.get()), cap * row}, row, dc, w.stream);
  sync();
  std::vector<float> want(cap * row, 0.0f);
  for (int p = 0; p < n; ++p) {
    for (std::size_t i = 0; i < mine * row; ++i) {
      std::size_t const j = first * row + i;
      want[i] +=
          static_cast<float>(static_cast<int>((j * 7 + static_cast<std::size_t>(p) * 3) % 9) - 4);
    }
  }
  EXPECT_SAME_VECTORS(recv.download(), to_bf16_bits(want), "bf16 device-count reduce-scatter");
  // NVFP4 into bf16: bit for bit the host-count reduce_scatterv of the same compact rows.
  std::vector<std::size_t> host_counts;
  for (std::int32_t x : c) host_counts.push_back(static_cast<std::size_t>(x) * row);
  PoolArray<std::uint8_t> data(full / 2), scales(full / 16);
  PoolArray<float> global(1);
  auto const q = HostNvfp4::quantize(random_floats(full, seed_of(me, 330), 2.0f));
  data.upload(q.data);
  scales.upload(q.scales);
  global.upload({q.global_scale});
  PoolArray<std::uint16_t> by_device(cap * row), by_host(std::max<std::size_t>(mine * row, 16));
  reduce_scatterv(w.comm, Nvfp4View{data.get(), scales.get(), global.get(), total_rows * row},
                  Bf16Span{reinterpret_cast<bf16*>(by_host.get()), mine * row}, host_counts,
                  w.stream);
  sync();
  auto const ref = by_host.download();
  // Every path: the one-launch kernel (Auto's where it runs; then with counts in the scratch
  // lines) and the padded fallback.
  std::vector<std::pair<PathChoice, bool>> paths{{PathChoice::Fallback, false},
                                                 {PathChoice::Auto, false}};
  if (lsa_can()) {
    paths.emplace_back(PathChoice::LsaKernel, false);
    paths.emplace_back(PathChoice::LsaKernel, true);
  }
  for (auto [path, lines] : paths) {
    CountsInLines const switched(lines);
    Options o;
    o.path = path;
    by_device.poison();
    Plan const p = reduce_scatterv(w.comm, Nvfp4View{data.get(), scales.get(), global.get(), full},
                                   Bf16Span{reinterpret_cast<bf16*>(by_device.get()), cap * row},
                                   row, dc, w.stream, o);
    sync();
    std::string const at = std::string("nvfp4 device-count reduce-scatter (") + to_string(path) +
                           (lines ? ", counts in the lines" : "") + " -> " + to_string(p.path) +
                           ") vs host counts";
    Path const expected =
        path == PathChoice::Fallback || !lsa_can() ? Path::Fallback : Path::LsaKernel;
    EXPECT_EQ(p.path, expected) << at;
    auto const got = by_device.download();
    EXPECT_SAME_VECTORS(std::vector<std::uint16_t>(
                            got.begin(), got.begin() + static_cast<std::ptrdiff_t>(mine * row)),
                        std::vector<std::uint16_t>(
                            ref.begin(), ref.begin() + static_cast<std::ptrdiff_t>(mine * row)),
                        at);
    for (std::size_t i = mine * row; i < got.size(); ++i) {
      ASSERT_EQ(got[i], 0u) << at << ": row element " << i << " past this rank's count is not 0";
    }
  }
}

}  // namespace
}  // namespace symmcomm::test
