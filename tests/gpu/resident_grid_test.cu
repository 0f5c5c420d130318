// The resident grid of a production LSA launch (kernels/lsa_launch.cuh): every CTA of every rank
// sharing a GPU must fit at once, and with programmatic dependent launch each rank may hold its
// next kernel's CTAs as well, so the share halves there.

#include <gtest/gtest.h>

#include "kernels/lsa_launch.cuh"
#include "support/gpu_test.hpp"

namespace {

using symmcomm::detail::current_device_sm_count;
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
  int const share = sms / 8;  // 8 ranks on this GPU
  EXPECT_EQ(resident_grid(kernel, share, asked, false), per_sm * share);
  EXPECT_EQ(resident_grid(kernel, share, asked, true), per_sm * share / 2);
  // 8 ranks, each with a kernel and its parked successor, fit on the GPU together.
  EXPECT_LE(8u * 2u * resident_grid(kernel, share, asked, true), per_sm * sms);
  // A rank with the whole GPU keeps it: its successor waits only for its own CTAs.
  EXPECT_EQ(resident_grid(kernel, sms, asked, true), per_sm * sms);
  // A small grid stays as asked; loopback (share 0) is never capped.
  EXPECT_EQ(resident_grid(kernel, share, 3, true), 3u);
  EXPECT_EQ(resident_grid(kernel, 0, asked, true), asked);
}

}  // namespace
