#pragma once
// Private: count and byte arithmetic the executors share (displacements, element to byte counts,
// workspace alignment).

#include <cstddef>
#include <vector>

#include "symmcomm/memory/symm_allocator.hpp"

namespace symmcomm::detail {

/// Exclusive prefix sums of counts (element displacements).
inline std::vector<std::size_t> displacements(const std::vector<std::size_t>& counts) {
  std::vector<std::size_t> d(counts.size(), 0);
  for (std::size_t r = 1; r < counts.size(); ++r) d[r] = d[r - 1] + counts[r - 1];
  return d;
}

/// counts[i] * num / den for every i (element counts to byte counts).
inline std::vector<std::size_t> scaled(const std::vector<std::size_t>& counts, std::size_t num,
                                       std::size_t den) {
  std::vector<std::size_t> out(counts.size());
  for (std::size_t i = 0; i < counts.size(); ++i) out[i] = counts[i] * num / den;
  return out;
}

/// Rounds up to kPoolAlignment (256) bytes: workspace regions keep cudaMalloc's alignment.
constexpr std::size_t align256(std::size_t x) {
  return (x + kPoolAlignment - 1) / kPoolAlignment * kPoolAlignment;
}

}  // namespace symmcomm::detail
