// resident_cap (core/launch_share.hpp): how many CTAs a launch whose CTAs spin on other ranks may
// take. Alone on a GPU or beside ranks of its own process, every rank's CTAs fit at once; beside
// ranks of other processes (whose kernels CUDA MPS runs at once), the ranks' CTAs together must
// leave half the SMs free, so a rank still in a GEMM that needs whole SMs can finish and join.

#include <gtest/gtest.h>

#include "core/launch_share.hpp"

namespace symmcomm::detail {
namespace {

constexpr int kSms = 132;  // an H100 SXM

TEST(ResidentCap, OneRankPerGpuFillsEverySmAtFullOccupancy) {
  EXPECT_EQ(resident_cap(8, LaunchShare{kSms, false}, kSms, false), 8u * kSms);
  // Not shared: neither other processes nor programmatic launch lower it.
  EXPECT_EQ(resident_cap(8, LaunchShare{kSms, true}, kSms, true), 8u * kSms);
}

TEST(ResidentCap, RanksOfOneProcessSharingTheGpuFillTheirShare) {
  EXPECT_EQ(resident_cap(8, LaunchShare{kSms / 4, false}, kSms, false), 8u * 33);
  EXPECT_EQ(resident_cap(8, LaunchShare{kSms / 4, false}, kSms, true),
            4u * 33);  // programmatic: half
}

TEST(ResidentCap, RanksOfOtherProcessesLeaveHalfTheSmsFree) {
  for (int ranks : {2, 4, 8}) {
    int const share = kSms / ranks;
    unsigned const cap = resident_cap(8, LaunchShare{share, true}, kSms, false);
    EXPECT_EQ(cap, static_cast<unsigned>(share / 2)) << ranks << " ranks";
    // However the GPU places them, all ranks' CTAs touch at most half of its SMs.
    EXPECT_LE(cap * static_cast<unsigned>(ranks), static_cast<unsigned>(kSms / 2)) << ranks;
    EXPECT_LE(resident_cap(8, LaunchShare{share, true}, kSms, true), cap)
        << ranks << " ranks, programmatic";
  }
}

TEST(ResidentCap, NeverBelowOneCta) {
  EXPECT_EQ(resident_cap(1, LaunchShare{1, true}, kSms, true), 1u);
  EXPECT_EQ(resident_cap(0, LaunchShare{1, false}, kSms, true), 1u);
}

}  // namespace
}  // namespace symmcomm::detail
