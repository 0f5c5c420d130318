// share_of (comm/gpu_share.hpp): what every rank reads from the ranks' all-gathered GPU entries,
// and so the grids the LSA launches take. Ranks of one process sharing a GPU fill their share;
// ranks of other processes on one GPU (CUDA MPS runs their kernels at once) leave half of it.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "comm/gpu_share.hpp"

namespace symmcomm::detail {
namespace {

GpuEntry entry(unsigned char gpu, std::uint64_t process, int sms = 132,
               std::uint32_t switches = 0) {
  GpuEntry e;
  e.sms = sms;
  e.layer_switches = switches;
  e.uuid[0] = gpu;
  e.uuid[15] = static_cast<unsigned char>(gpu ^ 0x5a);
  e.process = process;
  return e;
}

TEST(GpuShare, OneRankPerGpuKeepsEveryGpuWhole) {
  GpuShare const s = share_of({entry(1, 11), entry(2, 12), entry(3, 13), entry(4, 14)});
  EXPECT_EQ(s.ranks_per_gpu, 1);
  EXPECT_EQ(s.sm_share, 132);
  EXPECT_EQ(s.gpu_sms, 132);
  // Processes differ, but no GPU holds two of them.
  EXPECT_FALSE(s.other_processes);
}

TEST(GpuShare, ThreadsOfOneProcessOnOneGpuSplitItWithoutTheProcessCap) {
  GpuShare const s = share_of({entry(1, 7), entry(1, 7), entry(1, 7), entry(1, 7)});
  EXPECT_EQ(s.ranks_per_gpu, 4);
  EXPECT_EQ(s.sm_share, 33);
  EXPECT_FALSE(s.other_processes);
}

TEST(GpuShare, ProcessesOnOneGpuTakeTheProcessCap) {
  GpuShare const s = share_of({entry(1, 21), entry(1, 22)});
  EXPECT_EQ(s.ranks_per_gpu, 2);
  EXPECT_EQ(s.sm_share, 66);
  EXPECT_TRUE(s.other_processes);
}

TEST(GpuShare, OneSharedGpuAnywhereCapsEveryRank) {
  // Ranks 0 and 1 alone on their GPUs, ranks 2 and 3 (other processes) on a third: every rank
  // reads the same share, so all grids stay rank-independent.
  GpuShare const s = share_of({entry(1, 31), entry(2, 32), entry(3, 33), entry(3, 34)});
  EXPECT_EQ(s.ranks_per_gpu, 2);
  EXPECT_EQ(s.sm_share, 66);
  EXPECT_TRUE(s.other_processes);
}

TEST(GpuShare, TheSmallestGpuSizesTheShare) {
  GpuShare const s = share_of({entry(1, 41, 132), entry(2, 41, 114), entry(2, 41, 114)});
  EXPECT_EQ(s.gpu_sms, 114);
  EXPECT_EQ(s.ranks_per_gpu, 2);
  EXPECT_EQ(s.sm_share, 57);
  EXPECT_FALSE(s.other_processes);
}

TEST(GpuShare, NeverBelowOneSm) {
  std::vector<GpuEntry> many(8, entry(1, 51, 4));
  GpuShare const s = share_of(many);
  EXPECT_EQ(s.ranks_per_gpu, 8);
  EXPECT_EQ(s.sm_share, 1);
  EXPECT_EQ(share_of({entry(1, 52, 0)}).gpu_sms, 1);
}

TEST(GpuShare, SwitchesAreThoseSetOnEveryRank) {
  GpuShare const s =
      share_of({entry(1, 61, 132, 0b111), entry(2, 62, 132, 0b101), entry(3, 63, 132, 0b100)});
  EXPECT_EQ(s.layer_switches, 0b100u);
}

TEST(GpuShare, TheProcessNumberIsStableAndNeverZero) {
  std::uint64_t const n = process_nonce();
  EXPECT_NE(n, 0u);
  EXPECT_EQ(process_nonce(), n);
}

}  // namespace
}  // namespace symmcomm::detail
