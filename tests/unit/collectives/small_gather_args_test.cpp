// The small-message all-gather's host side (kernels/lsa_ll.hpp), without a GPU: which calls it
// takes (ll_fits), how lines and the scratch are sized, the process-wide switch, and the
// argument checks that refuse a bad layout before anything is launched.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "kernels/lsa_ll.hpp"
#include "kernels/lsa_ll_device_counts.hpp"
#include "symmcomm/error.hpp"

namespace {

using namespace symmcomm;
using namespace symmcomm::detail;

// Restores the process-wide switch after a test.
struct SwitchGuard {
  bool was = lsa::ll_gather_enabled();
  ~SwitchGuard() { lsa::set_ll_gather(was); }
};

TEST(SmallGatherArgs, LinesRoundEachSegmentUpToEightBytes) {
  EXPECT_EQ(lsa::ll_lines(0), 0u);
  EXPECT_EQ(lsa::ll_lines(1), 1u);
  EXPECT_EQ(lsa::ll_lines(8), 1u);
  EXPECT_EQ(lsa::ll_lines(9), 2u);
  EXPECT_EQ(lsa::ll_lines(kLlMaxBytesPerRank), kLlMaxBytesPerRank / kLlLineData);
}

TEST(SmallGatherArgs, ScratchIsTwoHalvesOfASlotPerRank) {
  // 96 KiB of data per rank as 16-byte lines of 8 bytes: 192 KiB per slot, two halves.
  EXPECT_EQ(scratch_window_bytes(1), std::size_t{2} * 192 * 1024);
  EXPECT_EQ(scratch_window_bytes(8), std::size_t{8} * 2 * 192 * 1024);
  EXPECT_EQ(kLlLineBytes, 2 * kLlLineData);
}

TEST(SmallGatherArgs, TakenOnlyWithScratchEnabledNonEmptyAndWithinASlot) {
  SwitchGuard guard;
  lsa::set_ll_gather(true);
  std::size_t const max_lines = kLlMaxBytesPerRank / kLlLineData;
  EXPECT_TRUE(lsa::ll_fits(true, 1, 1));
  EXPECT_TRUE(lsa::ll_fits(true, kLlMaxBytesPerRank, max_lines));
  EXPECT_FALSE(lsa::ll_fits(true, kLlMaxBytesPerRank + 1, max_lines + 1)) << "past a slot";
  EXPECT_FALSE(lsa::ll_fits(false, 64, 8)) << "no scratch window";
  EXPECT_FALSE(lsa::ll_fits(true, 0, 0)) << "nothing to send: no call is counted";
  lsa::set_ll_gather(false);
  EXPECT_FALSE(lsa::ll_fits(true, 64, 8)) << "switched off";
  EXPECT_FALSE(lsa::ll_gather_enabled());
}

lsa::LlGatherArgs two_segments() {
  static std::uint8_t src[64], dst[256];
  static std::uint32_t calls[2];
  lsa::LlGatherArgs a;
  a.rank = 0;
  a.size = 2;
  a.scratch = reinterpret_cast<ncclWindow_t>(&calls[0]);  // never reached: checks come first
  a.calls = calls;
  a.segment[0] = lsa::LlSegment{src, dst, 20, 0};
  a.segment[1] = lsa::LlSegment{src, dst + 128, 4, 3};
  a.segments = 2;
  a.lines = 4;
  return a;
}

void expect_refused(const lsa::LlGatherArgs& a, const std::string& words) {
  try {
    lsa::ll_gather(a, LaunchShare{}, nullptr);
    FAIL() << "accepted; expected an error naming " << words;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(SmallGatherArgs, BadLayoutsAreRefusedBeforeAnyLaunch) {
  lsa::LlGatherArgs a = two_segments();
  a.segment[1].first_line = 2;  // overlaps the first segment's third line
  expect_refused(a, "segment 1 is not laid out in order");
  a = two_segments();
  a.lines = 5;
  expect_refused(a, "5 lines per rank");
  a = two_segments();
  a.segments = 0;
  expect_refused(a, "0 segments");
  a = two_segments();
  a.rank = 2;
  expect_refused(a, "rank 2 of 2 ranks");
  a = two_segments();
  a.scratch = nullptr;
  expect_refused(a, "no scratch window");
  a = two_segments();
  a.segment[0].src = nullptr;
  expect_refused(a, "segment 0");
}

}  // namespace

namespace {

// The push-model reduce-scatter (lsa::LlReduceArgs): which shards it takes and the argument
// checks before any launch.
TEST(SmallReduceScatterArgs, TakenForWholeBf16ShardsWithinASlot) {
  SwitchGuard guard;
  lsa::set_ll_gather(true);
  auto const bf16 = DataType::Bf16;
  EXPECT_TRUE(lsa::ll_reduce_fits(true, bf16, 1));
  EXPECT_TRUE(lsa::ll_reduce_fits(true, bf16, kLlMaxBytesPerRank / 2));
  EXPECT_FALSE(lsa::ll_reduce_fits(true, bf16, kLlMaxBytesPerRank / 2 + 1)) << "past a slot";
  EXPECT_FALSE(lsa::ll_reduce_fits(true, bf16, 0));
  EXPECT_FALSE(lsa::ll_reduce_fits(false, bf16, 64)) << "no scratch window";
  lsa::set_ll_gather(false);
  EXPECT_FALSE(lsa::ll_reduce_fits(true, bf16, 64)) << "switched off";
}

// A quantized shard's lines: its codes (8 bytes a line), NVFP4's block scale codes (8 a line)
// and one scale line; whole lines of codes only.
TEST(SmallReduceScatterArgs, QuantizedShardsAreWholeLinesOfCodesWithTheirScales) {
  SwitchGuard guard;
  lsa::set_ll_gather(true);
  EXPECT_EQ(lsa::ll_reduce_lines(DataType::Nvfp4, 16), 1u + 1u + 1u);
  EXPECT_EQ(lsa::ll_reduce_lines(DataType::Nvfp4, 16 * 9), 9u + 2u + 1u);
  EXPECT_EQ(lsa::ll_reduce_lines(DataType::Fp8E4M3, 64), 8u + 1u);
  EXPECT_EQ(lsa::ll_reduce_lines(DataType::Bf16, 5), 2u);
  EXPECT_TRUE(lsa::ll_reduce_fits(true, DataType::Nvfp4, 16));
  EXPECT_FALSE(lsa::ll_reduce_fits(true, DataType::Nvfp4, 24)) << "half an NVFP4 block";
  EXPECT_TRUE(lsa::ll_reduce_fits(true, DataType::Fp8E5M2, 8));
  EXPECT_FALSE(lsa::ll_reduce_fits(true, DataType::Fp8E4M3, 12)) << "half a line of FP8 codes";
  // Decode sizes only: the largest quantized shard, and its lines within a slot.
  EXPECT_TRUE(lsa::ll_reduce_fits(true, DataType::Nvfp4, lsa::kLlQuantizedMaxShard));
  EXPECT_FALSE(lsa::ll_reduce_fits(true, DataType::Nvfp4, lsa::kLlQuantizedMaxShard + 16));
  EXPECT_FALSE(lsa::ll_reduce_fits(true, DataType::Fp8E4M3, lsa::kLlQuantizedMaxShard + 8));
  EXPECT_LE(lsa::ll_reduce_lines(DataType::Fp8E4M3, lsa::kLlQuantizedMaxShard),
            kLlMaxBytesPerRank / kLlLineData);
}

TEST(SmallReduceScatterArgs, BadArgumentsAreRefusedBeforeAnyLaunch) {
  alignas(16) static std::uint16_t send[64], out[16];
  static std::uint32_t calls[2];
  auto const good = [] {
    lsa::LlReduceArgs a;
    a.send = send;
    a.out = out;
    a.shard = 16;
    a.rank = 1;
    a.size = 2;
    a.scratch = reinterpret_cast<ncclWindow_t>(&calls[0]);  // never reached: checks come first
    a.calls = calls;
    return a;
  };
  auto const refused = [](const lsa::LlReduceArgs& a, const std::string& words) {
    try {
      lsa::ll_reduce_scatter(a, LaunchShare{}, nullptr);
      ADD_FAILURE() << "accepted; expected an error naming " << words;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  lsa::LlReduceArgs a = good();
  a.rank = 2;
  refused(a, "rank 2 of 2 ranks");
  a = good();
  a.scratch = nullptr;
  refused(a, "no scratch window");
  a = good();
  a.shard = 0;
  refused(a, "a shard of 0 bf16 elements is not whole lines");
  a = good();
  a.shard = kLlMaxBytesPerRank / 2 + 1;
  refused(a, "is not whole lines within a slot");
  a = good();
  a.type = DataType::Nvfp4;
  a.shard = 24;
  refused(a, "a shard of 24 nvfp4 elements is not whole lines");
  a.shard = 16;
  refused(a, "nvfp4 without its scales");
  a = good();
  a.out_fp32 = true;
  refused(a, "a bf16 sum is written as bf16 only");
  a = good();
  a.type = DataType::Fp8E4M3;
  static float scale = 1.0f;
  a.scale = &scale;
  a.out = reinterpret_cast<char*>(out) + 2;
  refused(a, "out is not 16-byte aligned");
  a = good();
  a.out = nullptr;
  refused(a, "send or out is null");
}

// The counts-in-lines gather (lsa::LlDeviceCountsGatherArgs): left to the ranks' agreement by
// default, the slot's lines (the count, the scale, capacity rows of every part, each part's row
// starting a line), and the argument checks before any launch.
TEST(DeviceCountsLinesArgs, AgreedByDefaultAndTakenWhereCapacityRowsFitASlot) {
  EXPECT_EQ(lsa::ll_counts_setting(), lsa::LlCounts::Agreed) << "the process switch forces it";
  EXPECT_TRUE(lsa::ll_counts_on(true, true)) << "agreed at creation, not forced";
  lsa::LlDeviceCountsGatherArgs a;
  a.parts = 3;
  a.part[0].row_bytes = 3584;  // 7168 NVFP4 values
  a.part[1].row_bytes = 448;   // their block scales
  a.part[2].row_bytes = 33;    // 33 bytes: 5 lines
  EXPECT_EQ(lsa::ll_row_lines(a), 448u + 56u + 5u);
  EXPECT_EQ(lsa::ll_device_counts_lines(4, 509), 2u + 4u * 509u);
  std::size_t const slot = kLlMaxBytesPerRank / kLlLineData;
  std::size_t const most = (slot - 2) / 509;
  EXPECT_TRUE(lsa::ll_device_counts_fits(true, most, 509));
  EXPECT_FALSE(lsa::ll_device_counts_fits(true, most + 1, 509)) << "past a slot";
  EXPECT_FALSE(lsa::ll_device_counts_fits(false, 4, 509)) << "counts in the lines off";
  EXPECT_FALSE(lsa::ll_device_counts_fits(true, 4, 0)) << "no rows";
}

// On for a communicator whose ranks agreed at creation (no rank set SYMMCOMM_LL_COUNTS=0) unless
// the process switch forces it off, on where the switch forces it on, and only with the scratch
// window.
TEST(DeviceCountsLinesArgs, OnWhereAgreedOrForcedOnWithTheScratch) {
  EXPECT_FALSE(lsa::ll_counts_on(true, false)) << "not agreed, not forced";
  EXPECT_FALSE(lsa::ll_counts_on(false, true)) << "no scratch window";
  {
    lsa::ScopedLlCounts const off(false);
    EXPECT_FALSE(lsa::ll_counts_on(true, true)) << "forced off for the process";
    {
      lsa::ScopedLlCounts const on(true);
      EXPECT_TRUE(lsa::ll_counts_on(true, false)) << "forced on for the process";
      EXPECT_FALSE(lsa::ll_counts_on(false, false)) << "no scratch window";
    }
    EXPECT_EQ(lsa::ll_counts_setting(), lsa::LlCounts::Off) << "the inner scope restores off";
  }
  EXPECT_EQ(lsa::ll_counts_setting(), lsa::LlCounts::Agreed)
      << "the scoped switch restores the value it found";
}

TEST(DeviceCountsLinesArgs, BadArgumentsAreRefusedBeforeAnyLaunch) {
  static std::uint8_t src[64], recv[128];
  static std::int32_t words[8];
  static float scale[2];
  auto const good = [] {
    lsa::LlDeviceCountsGatherArgs a;
    a.parts = 1;
    a.part[0] = lsa::LlDeviceCountsGatherArgs::Part{src, recv, 16};
    a.count = words;
    a.counts = words + 2;
    a.offsets = words + 4;
    a.overflow = words + 6;
    a.capacity = 4;
    a.rank = 0;
    a.size = 2;
    a.scratch = reinterpret_cast<ncclWindow_t>(&words[0]);  // never reached: checks come first
    a.calls = reinterpret_cast<std::uint32_t*>(words);
    return a;
  };
  auto const refused = [](const lsa::LlDeviceCountsGatherArgs& a, const std::string& words_) {
    try {
      lsa::ll_device_counts_gather(a, LaunchShare{}, nullptr);
      ADD_FAILURE() << "accepted; expected an error naming " << words_;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words_), std::string::npos) << e.what();
    }
  };
  lsa::LlDeviceCountsGatherArgs a = good();
  a.size = 0;
  refused(a, "rank 0 of 0 ranks");
  a = good();
  a.calls = nullptr;
  refused(a, "no scratch window");
  a = good();
  a.parts = 7;
  refused(a, "7 parts, outside 1..6");
  a = good();
  a.part[0].recv = nullptr;
  refused(a, "part 0 has no rows or no buffers");
  a = good();
  a.offsets = nullptr;
  refused(a, "count, counts, offsets and overflow must be device pointers");
  a = good();
  a.scale_src = scale;
  refused(a, "a scale to send needs a place to land");
  a = good();
  a.capacity = kLlMaxBytesPerRank;
  refused(a, "do not fit a slot");
}

// The counts-in-lines reduce-scatter (lsa::LlDeviceCountsReduceArgs): the slot's lines (the count,
// the scale, then the values, or the codes and their block scales) and the argument checks.
TEST(DeviceCountsLinesArgs, ReduceScatterLinesAndBadArguments) {
  EXPECT_EQ(lsa::ll_device_counts_reduce_lines(DataType::Bf16, 3, 5), 2u + 4u);  // 30 bytes
  EXPECT_EQ(lsa::ll_device_counts_reduce_lines(DataType::Nvfp4, 3, 32), 2u + 6u + 1u);
  EXPECT_TRUE(lsa::ll_device_counts_reduce_fits(true, DataType::Nvfp4, 24, 7168));
  EXPECT_FALSE(lsa::ll_device_counts_reduce_fits(true, DataType::Nvfp4, 25, 7168)) << "past a slot";
  EXPECT_FALSE(lsa::ll_device_counts_reduce_fits(true, DataType::Nvfp4, 4, 24)) << "half a block";
  EXPECT_FALSE(lsa::ll_device_counts_reduce_fits(true, DataType::Fp32, 4, 16)) << "fp32 rows";
  EXPECT_TRUE(lsa::ll_device_counts_reduce_fits(true, DataType::Bf16, 6, 7168));
  EXPECT_FALSE(lsa::ll_device_counts_reduce_fits(true, DataType::Bf16, 7, 7168));
  EXPECT_FALSE(lsa::ll_device_counts_reduce_fits(false, DataType::Bf16, 6, 7168)) << "off";
  alignas(16) static std::uint16_t send[64], out[64];
  static std::int32_t words[8];
  auto const good = [] {
    lsa::LlDeviceCountsReduceArgs a;
    a.send = send;
    a.out = reinterpret_cast<bf16*>(out);
    a.row_elements = 16;
    a.count = words;
    a.counts = words + 2;
    a.offsets = words + 4;
    a.overflow = words + 6;
    a.capacity = 2;
    a.size = 2;
    a.scratch = reinterpret_cast<ncclWindow_t>(&words[0]);  // never reached: checks come first
    a.calls = reinterpret_cast<std::uint32_t*>(words);
    return a;
  };
  auto const refused = [](const lsa::LlDeviceCountsReduceArgs& a, const std::string& text) {
    try {
      lsa::ll_device_counts_reduce(a, LaunchShare{}, nullptr);
      ADD_FAILURE() << "accepted; expected an error naming " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  lsa::LlDeviceCountsReduceArgs a = good();
  a.type = DataType::Fp8E4M3;
  refused(a, "rows of fp8e4m3 (bf16 or nvfp4)");
  a = good();
  a.rank = 3;
  refused(a, "rank 3 of 2 ranks");
  a = good();
  a.send = nullptr;
  refused(a, "send or out is null");
  a = good();
  a.overflow = nullptr;
  refused(a, "count, counts, offsets and overflow must be device pointers");
  a = good();
  a.type = DataType::Nvfp4;
  refused(a, "nvfp4 without its scales");
  a.row_elements = 24;
  refused(a, "row_elements 24 of nvfp4");
  a = good();
  a.capacity = kLlMaxBytesPerRank;
  refused(a, "past a slot of");
}

}  // namespace
