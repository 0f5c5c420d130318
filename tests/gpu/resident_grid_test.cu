// The resident grid of a production LSA launch (kernels/lsa_launch.cuh): every CTA of every rank
// sharing a GPU must fit at once, and with programmatic dependent launch each rank may hold its
// next kernel's CTAs as well, so the share halves there. Beside ranks of other processes, the
// ranks' CTAs together leave half the SMs free.

#include <gtest/gtest.h>

#include <algorithm>

#include "kernels/lsa_launch.cuh"
#include "support/gpu_test.hpp"

namespace {

using symmcomm::detail::current_device_sm_count;
using symmcomm::detail::LaunchShare;
using symmcomm::detail::resident_blocks_per_sm;
using symmcomm::detail::lsa::kThreads;
using symmcomm::detail::lsa::resident_grid;

__global__ void __launch_bounds__(kThreads) full_sm_kernel(int* out) {
  if (out != nullptr) out[blockIdx.x] = 1;
}

TEST(ResidentGrid, ProgrammaticLaunchHalvesTheShareOnlyWhereRanksShareTheGpu) {
  SYMMCOMM_REQUIRE_GPU();
  const void* kernel = reinterpret_cast<const void*>(full_sm_kernel);
  int const sms = current_device_sm_count();
  auto const per_sm = static_cast<unsigned>(resident_blocks_per_sm(kernel, kThreads));
  ASSERT_GE(per_sm, 1u);
  unsigned const asked = 1u << 20;
  LaunchShare const share{sms / 8, false};  // 8 ranks of one process on this GPU
  auto const share_sms = static_cast<unsigned>(share.sms);
  EXPECT_EQ(resident_grid(kernel, share, asked, false), per_sm * share_sms);
  EXPECT_EQ(resident_grid(kernel, share, asked, true), per_sm * share_sms / 2);
  // 8 ranks, each with a kernel and its parked successor, fit on the GPU together.
  EXPECT_LE(8u * 2u * resident_grid(kernel, share, asked, true), per_sm * sms);
  // A rank with the whole GPU keeps it: its successor waits only for its own CTAs.
  EXPECT_EQ(resident_grid(kernel, LaunchShare{sms, false}, asked, true), per_sm * sms);
  // A small grid stays as asked; no share (the testing library's ranks) is never capped.
  EXPECT_EQ(resident_grid(kernel, share, 3, true), 3u);
  EXPECT_EQ(resident_grid(kernel, LaunchShare{}, asked, true), asked);
}

TEST(ResidentGrid, RanksOfOtherProcessesLeaveHalfTheSmsFree) {
  SYMMCOMM_REQUIRE_GPU();
  const void* kernel = reinterpret_cast<const void*>(full_sm_kernel);
  int const sms = current_device_sm_count();
  unsigned const asked = 1u << 20;
  for (int ranks : {2, 4, 8}) {
    LaunchShare const share{sms / ranks, true};
    unsigned const grid = resident_grid(kernel, share, asked, false);
    EXPECT_EQ(grid, static_cast<unsigned>(std::max(1, share.sms / 2))) << ranks << " ranks";
    EXPECT_LE(grid * static_cast<unsigned>(ranks), static_cast<unsigned>(sms / 2)) << ranks;
  }
  // One rank per GPU is not capped by other processes on other GPUs.
  auto const per_sm = static_cast<unsigned>(resident_blocks_per_sm(kernel, kThreads));
  EXPECT_EQ(resident_grid(kernel, LaunchShare{sms, true}, asked, false), per_sm * sms);
}

}  // namespace
