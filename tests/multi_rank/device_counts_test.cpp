// All-gathers with counts on the device (symmcomm/collectives/device_counts.hpp) across real ranks:
// every rank's first count rows land compactly after the rows of the ranks before it, the
// gathered counts and their prefix are written, rows past the total stay as they were; the same
// captured CUDA graph replayed with other counts (0 on some ranks, capacity on others) gives
// exact results; a count above capacity raises the overflow flag and is clamped. NVFP4 (data,
// block scales - linear or swizzled -, global scales) and BF16, against host references every
// rank computes.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
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
#include "symmcomm/comm/mpi.hpp"
#include "symmcomm/formats/bf16.hpp"
#include "symmcomm/formats/scale_layout.hpp"

namespace symmcomm::test {
namespace {

constexpr std::size_t kRow = 256;  // elements per row: 128 data bytes, 16 block-scale bytes

struct Uneven {
  int n = world().size, me = world().rank;
  PoolArray<std::uint8_t> data{kCapacity * kRow / 2}, scales{kCapacity * kRow / 16};
  PoolArray<float> global{1};
  PoolArray<std::uint8_t> rdata{static_cast<std::size_t>(n) * kCapacity * kRow / 2};
  PoolArray<std::uint8_t> rscales{static_cast<std::size_t>(n) * kCapacity * kRow / 16};
  PoolArray<float> rglobal{static_cast<std::size_t>(n)};
  PoolArray<std::int32_t> count{1}, counts{static_cast<std::size_t>(n)},
      offsets{static_cast<std::size_t>(n)}, overflow{1};

  Uneven() {
    data.upload(content(me, 0, data.count()));
    scales.upload(content(me, 1, scales.count()));
    global.upload({1.5f + static_cast<float>(me)});
    overflow.upload({0});
  }
  static std::vector<std::uint8_t> content(int rank, int part, std::size_t bytes) {
    return random_bytes(bytes, seed_of(rank, 300 + part));
  }
  DeviceCounts device_counts() const {
    return DeviceCounts{count.get(), kCapacity, counts.get(), offsets.get(), overflow.get()};
  }
  Nvfp4View send() const {
    return Nvfp4View{data.get(), scales.get(), global.get(), kCapacity * kRow};
  }
  Nvfp4View recv() const {
    return Nvfp4View{rdata.get(), rscales.get(), rglobal.get(),
                     static_cast<std::size_t>(n) * kCapacity * kRow};
  }
  void poison() {
    rdata.poison();
    rscales.poison();
    counts.poison();
    offsets.poison();
  }
  // Checks the compact rows, counts and prefix of a call with `wanted` counts (clamped).
  void expect(const std::vector<std::int32_t>& wanted, const std::string& at) const {
    std::vector<std::uint8_t> want_data, want_scales;
    std::vector<std::int32_t> want_offsets;
    std::int32_t sum = 0;
    for (int q = 0; q < n; ++q) {
      std::int32_t const c = std::min<std::int32_t>(std::max(wanted[q], 0), kCapacity);
      want_offsets.push_back(sum);
      sum += c;
      auto const d = content(q, 0, kCapacity * kRow / 2);
      auto const s = content(q, 1, kCapacity * kRow / 16);
      want_data.insert(want_data.end(), d.begin(), d.begin() + c * kRow / 2);
      want_scales.insert(want_scales.end(), s.begin(), s.begin() + c * kRow / 16);
    }
    auto const got_data = rdata.download();
    auto const got_scales = rscales.download();
    std::size_t const total = static_cast<std::size_t>(sum);
    EXPECT_SAME_VECTORS(
        std::vector<std::uint8_t>(got_data.begin(), got_data.begin() + total * kRow / 2), want_data,
        at + ": data");
    EXPECT_SAME_VECTORS(
        std::vector<std::uint8_t>(got_scales.begin(), got_scales.begin() + total * kRow / 16),
        want_scales, at + ": block scales");
    // Rows past the total are left as they were (poisoned with 0xAB).
    for (std::size_t i = total * kRow / 2; i < got_data.size(); ++i) {
      ASSERT_EQ(got_data[i], 0xAB) << at << ": data byte " << i << " past the total";
    }
    EXPECT_SAME_VECTORS(counts.download(), wanted, at + ": counts");
    EXPECT_SAME_VECTORS(offsets.download(), want_offsets, at + ": offsets");
    std::vector<float> want_global;
    for (int q = 0; q < n; ++q) want_global.push_back(1.5f + static_cast<float>(q));
    EXPECT_SAME_VECTORS(rglobal.download(), want_global, at + ": global scales");
  }
};

// The NVFP4 device-count gather on `path` (Fallback: NCCL's calls at capacity, then compaction;
// LsaKernel: symmcomm's one-launch kernel, counts exchanged through the pool's window; Auto: the
// kernel where an LSA team spans the ranks): eager rounds, one graph replayed with new counts, a
// count above capacity.
void nvfp4_device_counts(PathChoice path) {
  World& w = world();
  Uneven t;
  Options options;
  options.path = path;
  // Auto takes the one-launch kernel wherever an LSA team spans the ranks.
  bool const lsa = path == PathChoice::LsaKernel || (path == PathChoice::Auto && lsa_can());
  // Eager, three rounds of different counts.
  for (int round = 0; round < 3; ++round) {
    auto const c = round_counts(round, t.n);
    t.count.upload({c[static_cast<std::size_t>(t.me)]});
    t.poison();
    Plan const plan =
        all_gatherv(w.comm, t.send(), t.recv(), kRow, t.device_counts(), w.stream, options);
    sync();
    expect_device_count_plan(plan, path, lsa);
    t.expect(c, "eager round " + std::to_string(round));
  }
  EXPECT_FALSE(overflowed(w.comm, t.device_counts(), w.stream));
  // One graph, captured once, replayed with new counts each time.
  cudaGraph_t graph = nullptr;
  SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(w.stream, cudaStreamCaptureModeThreadLocal));
  all_gatherv(w.comm, t.send(), t.recv(), kRow, t.device_counts(), w.stream, options);
  SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(w.stream, &graph));
  cudaGraphExec_t exec = nullptr;
  SYMMCOMM_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
  for (int round = 3; round < 7; ++round) {
    auto const c = round_counts(round == 6 ? 1 : round, t.n);
    t.count.upload({c[static_cast<std::size_t>(t.me)]});
    t.poison();
    SYMMCOMM_CUDA_TRY(cudaGraphLaunch(exec, w.stream));
    sync();
    t.expect(c, "graph replay " + std::to_string(round));
  }
  // A count above capacity on rank 0: every rank raises the flag; rank 0's rows are clamped.
  auto c = round_counts(0, t.n);
  c[0] = static_cast<std::int32_t>(kCapacity) + 5;
  t.count.upload({c[static_cast<std::size_t>(t.me)]});
  t.poison();
  SYMMCOMM_CUDA_TRY(cudaGraphLaunch(exec, w.stream));
  sync();
  t.expect(c, "count above capacity");
  EXPECT_TRUE(overflowed(w.comm, t.device_counts(), w.stream));
  EXPECT_FALSE(overflowed(w.comm, t.device_counts(), w.stream));  // cleared by the first read
  SYMMCOMM_CUDA_TRY(cudaGraphExecDestroy(exec));
  SYMMCOMM_CUDA_TRY(cudaGraphDestroy(graph));
}

TEST(MultiRankDeviceCounts, Nvfp4DeviceCountsEagerAndReplayedFromOneGraph) {
  nvfp4_device_counts(PathChoice::Fallback);
}

// Auto's choice with counts in the lines forced off for the process: the one-launch kernel that
// exchanges the counts behind a barrier (what rows past a scratch slot take).
TEST(MultiRankDeviceCounts, Nvfp4DeviceCountsAutoTakesTheOneLaunchKernelWhereItRuns) {
  CountsInLines const off(false);
  nvfp4_device_counts(PathChoice::Auto);
}

TEST(MultiRankDeviceCounts, Nvfp4DeviceCountsOnTheLsaKernelInOneLaunch) {
  if (!lsa_can()) GTEST_SKIP() << "no LSA team spanning the ranks: " << caps().reason;
  CountsInLines const off(false);
  nvfp4_device_counts(PathChoice::LsaKernel);
}

// Counts in the lines are on for the communicators made while no rank sets SYMMCOMM_LL_COUNTS=0;
// set to 0 on one rank only, or on every rank, they are off on every rank (ranks deciding apart
// would wait for each other's lines for ever).
TEST(MultiRankDeviceCounts, CountsInTheLinesAreAgreedAtCreation) {
  if (!lsa_can()) GTEST_SKIP() << "no LSA team spanning the ranks: " << caps().reason;
  World& w = world();
  const char* const before = std::getenv("SYMMCOMM_LL_COUNTS");
  std::string const saved = before != nullptr ? before : "";
  auto const agreed_when = [&](bool off_here) {
    if (off_here) {
      setenv("SYMMCOMM_LL_COUNTS", "0", 1);
    } else {
      unsetenv("SYMMCOMM_LL_COUNTS");
    }
    Communicator const made = create_mpi_communicator(MPI_COMM_WORLD, w.comm.device());
    if (before != nullptr) {
      setenv("SYMMCOMM_LL_COUNTS", saved.c_str(), 1);
    } else {
      unsetenv("SYMMCOMM_LL_COUNTS");
    }
    return detail::scratch_of(*detail::state_of(made)).counts_in_lines;
  };
  EXPECT_TRUE(agreed_when(false)) << "set nowhere; rank " << w.rank;
  EXPECT_FALSE(agreed_when(w.rank == 0)) << "0 on rank 0 only; rank " << w.rank;
  EXPECT_FALSE(agreed_when(true)) << "0 on every rank; rank " << w.rank;
}

// The same calls with counts in the scratch lines (lsa::ll_device_counts_gather, switched on for
// the test): every check above holds, and the device call counter says the kernel ran (one call per
// eager round and graph replay).
TEST(MultiRankDeviceCounts, Nvfp4DeviceCountsWithCountsInTheLines) {
  if (!lsa_can()) GTEST_SKIP() << "no LSA team spanning the ranks: " << caps().reason;
  const auto& state = detail::state_of(world().comm);
  if (detail::scratch_of(*state).window.window == nullptr)
    GTEST_SKIP() << "no scratch window (SYMMCOMM_LSA_LL=0)";
  std::uint32_t const before = ll_kernel_calls();
  {
    CountsInLines const on(true);
    nvfp4_device_counts(PathChoice::LsaKernel);
    nvfp4_device_counts(PathChoice::Auto);
  }
  // Per run: 3 eager rounds, 4 replays and the replay above capacity.
  EXPECT_EQ(ll_kernel_calls() - before, 2u * 8u) << "calls that took the counts-in-lines kernel";
}

// Block scales gathered straight into the 128 x 4 layout NVFP4 GEMMs read: the compact rows'
// scales at their swizzled places, every byte from the total count to the padded end 0 (the
// buffer is poisoned first), eager and from one graph replayed with new counts.
TEST(MultiRankDeviceCounts, Nvfp4DeviceCountsIntoSwizzledScales) {
  World& w = world();
  Uneven t;
  std::size_t const rows = static_cast<std::size_t>(t.n) * kCapacity, cols = kRow / 16;
  PoolArray<std::uint8_t> swizzled{swizzled_scale_bytes(rows, cols)};
  Nvfp4View const recv =
      Nvfp4View{t.rdata.get(), swizzled.get(), t.rglobal.get(), rows * kRow}.with_swizzled_scales(
          kRow);
  auto const expect = [&](const std::vector<std::int32_t>& wanted, const std::string& at) {
    std::vector<std::uint8_t> linear(rows * cols, 0);
    std::size_t at_row = 0;
    for (int q = 0; q < t.n; ++q) {
      auto const c = static_cast<std::size_t>(
          std::min<std::int32_t>(std::max(wanted[static_cast<std::size_t>(q)], 0), kCapacity));
      auto const s = Uneven::content(q, 1, kCapacity * cols);
      std::copy(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(c * cols),
                linear.begin() + static_cast<std::ptrdiff_t>(at_row * cols));
      at_row += c;
    }
    std::vector<std::uint8_t> want(swizzled_scale_bytes(rows, cols));
    swizzle_scales_host(linear.data(), rows, cols, want.data());
    EXPECT_SAME_VECTORS(swizzled.download(), want, at + ": swizzled block scales");
    EXPECT_SAME_VECTORS(t.counts.download(), wanted, at + ": counts");
  };
  for (int round = 0; round < 2; ++round) {
    auto const c = round_counts(round, t.n);
    t.count.upload({c[static_cast<std::size_t>(t.me)]});
    swizzled.poison();
    all_gatherv(w.comm, t.send(), recv, kRow, t.device_counts(), w.stream);
    sync();
    expect(c, "eager round " + std::to_string(round));
  }
  cudaGraph_t graph = nullptr;
  SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(w.stream, cudaStreamCaptureModeThreadLocal));
  all_gatherv(w.comm, t.send(), recv, kRow, t.device_counts(), w.stream);
  SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(w.stream, &graph));
  cudaGraphExec_t exec = nullptr;
  SYMMCOMM_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
  for (int round = 2; round < 5; ++round) {
    auto const c = round_counts(round, t.n);
    t.count.upload({c[static_cast<std::size_t>(t.me)]});
    swizzled.poison();
    SYMMCOMM_CUDA_TRY(cudaGraphLaunch(exec, w.stream));
    sync();
    expect(c, "graph replay " + std::to_string(round));
  }
  SYMMCOMM_CUDA_TRY(cudaGraphExecDestroy(exec));
  SYMMCOMM_CUDA_TRY(cudaGraphDestroy(graph));
}

TEST(MultiRankDeviceCounts, Bf16DeviceCountsAndArgumentErrors) {
  World& w = world();
  int const n = w.size, me = w.rank;
  std::size_t const row = 24, cap = 9;
  PoolArray<std::uint16_t> send(cap * row), recv(static_cast<std::size_t>(n) * cap * row);
  PoolArray<std::int32_t> count(1), counts(static_cast<std::size_t>(n)),
      offsets(static_cast<std::size_t>(n)), overflow(1);
  auto const mine = to_bf16_bits(random_floats(cap * row, seed_of(me, 310), 3.0f));
  send.upload(mine);
  overflow.upload({0});
  std::int32_t const c_me = (me * 5 + 2) % static_cast<std::int32_t>(cap + 1);
  count.upload({c_me});
  recv.poison();
  DeviceCounts const dc{count.get(), cap, counts.get(), offsets.get(), overflow.get()};
  // With two more tensors moved row for row (MoE dispatch's topk ids and weights: 8 per row).
  PoolArray<std::uint8_t> ids(cap * 32), weights(cap * 32);
  PoolArray<std::uint8_t> rids(static_cast<std::size_t>(n) * cap * 32),
      rweights(static_cast<std::size_t>(n) * cap * 32);
  ids.upload(random_bytes(cap * 32, seed_of(me, 320)));
  weights.upload(random_bytes(cap * 32, seed_of(me, 321)));
  rids.poison();
  rweights.poison();
  std::vector<RowItem> const items{RowItem{ids.get(), rids.get(), 32, "topk_ids"},
                                   RowItem{weights.get(), rweights.get(), 32, "topk_weights"}};
  // With the one-launch kernel (or the fallback), then with counts in the scratch lines where
  // the ranks run symmcomm's kernels.
  for (bool ll : {false, true}) {
    CountsInLines const switched(ll);
    recv.poison();
    rids.poison();
    rweights.poison();
    std::string const how = ll ? " (counts in the lines)" : "";
    all_gatherv(
        w.comm, Bf16Span{reinterpret_cast<bf16*>(send.get()), cap * row},
        Bf16Span{reinterpret_cast<bf16*>(recv.get()), static_cast<std::size_t>(n) * cap * row}, row,
        items, dc, w.stream);
    sync();
    for (int salt : {320, 321}) {
      std::vector<std::uint8_t> want_item;
      for (int q = 0; q < n; ++q) {
        auto const theirs = random_bytes(cap * 32, seed_of(q, salt));
        std::int32_t const c = (q * 5 + 2) % static_cast<std::int32_t>(cap + 1);
        want_item.insert(want_item.end(), theirs.begin(), theirs.begin() + c * 32);
      }
      auto const got_item = (salt == 320 ? rids : rweights).download();
      EXPECT_SAME_VECTORS(
          std::vector<std::uint8_t>(
              got_item.begin(), got_item.begin() + static_cast<std::ptrdiff_t>(want_item.size())),
          want_item, std::string(salt == 320 ? "topk ids" : "topk weights") + how);
    }
    std::vector<std::uint16_t> want;
    for (int q = 0; q < n; ++q) {
      auto const theirs = to_bf16_bits(random_floats(cap * row, seed_of(q, 310), 3.0f));
      std::int32_t const c = (q * 5 + 2) % static_cast<std::int32_t>(cap + 1);
      want.insert(want.end(), theirs.begin(), theirs.begin() + c * static_cast<std::int32_t>(row));
    }
    auto const got = recv.download();
    EXPECT_SAME_VECTORS(std::vector<std::uint16_t>(got.begin(), got.begin() + want.size()), want,
                        "bf16 device counts" + how);
  }
  // Sizes that do not match the capacity are named (before anything is enqueued).
  try {
    all_gatherv(
        w.comm, Bf16Span{reinterpret_cast<bf16*>(send.get()), cap * row - 1},
        Bf16Span{reinterpret_cast<bf16*>(recv.get()), static_cast<std::size_t>(n) * cap * row}, row,
        dc, w.stream);
    ADD_FAILURE() << "a send smaller than the capacity was accepted";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("is not counts.capacity 9 x row_elements 24"),
              std::string::npos)
        << e.what();
  }
  Options forced;
  forced.path = PathChoice::NcclSymmetric;
  try {
    all_gatherv(
        w.comm, Bf16Span{reinterpret_cast<bf16*>(send.get()), cap * row},
        Bf16Span{reinterpret_cast<bf16*>(recv.get()), static_cast<std::size_t>(n) * cap * row}, row,
        dc, w.stream, forced);
    ADD_FAILURE() << "a forced symmetric path was accepted";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("a gather with counts on the device runs on "
                                         "symmcomm's one-launch LSA kernel"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace symmcomm::test
