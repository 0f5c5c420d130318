#pragma once
// What the multi-rank device-count tests share (device_counts_test.cpp: gathers,
// device_counts_scatter_test.cpp: reduce-scatters): the capacity, each rank's count per round and
// the plan a call must report.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/lsa_ll_device_counts.hpp"
#include "symmcomm/collectives/options.hpp"

namespace symmcomm::test {

inline constexpr std::size_t kCapacity = 40;

// Rank q's count in round k: every value from 0 to capacity appears across ranks and rounds.
inline std::int32_t count_of(int q, int round, int ranks) {
  if (round == 1) return q == 0 ? static_cast<std::int32_t>(kCapacity) : (q == 1 ? 0 : 3 * q);
  return static_cast<std::int32_t>((7 * round + 13 * q + ranks) % (kCapacity + 1));
}

inline std::vector<std::int32_t> round_counts(int round, int n) {
  std::vector<std::int32_t> c;
  for (int q = 0; q < n; ++q) c.push_back(count_of(q, round, n));
  return c;
}

// A device-count call's plan: the one-launch kernel (forced or Auto's choice) or the fallback.
inline void expect_device_count_plan(const Plan& plan, PathChoice path, bool lsa) {
  EXPECT_EQ(plan.path, lsa ? Path::LsaKernel : Path::Fallback) << plan.reason();
  EXPECT_EQ(plan.why, !lsa                            ? PlanReason::DeviceCounts
                      : path == PathChoice::LsaKernel ? PlanReason::Forced
                                                      : PlanReason::DeviceCountsInOneLaunch)
      << plan.reason();
  if (!lsa || detail::lsa::ll_counts_setting() == detail::lsa::LlCounts::Off) {
    EXPECT_FALSE(plan.counts_in_lines) << plan.reason();
  }
}

// Counts in the scratch lines (lsa::ll_device_counts_gather / ll_device_counts_reduce) for one
// scope.
using CountsInLines = detail::lsa::ScopedLlCounts;

}  // namespace symmcomm::test
