#pragma once
// Private: limits the device communicator is created with and symmcomm's LSA kernels rely on.

#include <cstddef>

namespace symmcomm::detail {

/// LSA barriers a device communicator reserves per SM of the GPU (times the fewest SMs of any
/// rank's GPU, agreed at creation): one per CTA of the largest grid symmcomm's LSA kernels
/// launch (CTA i of every rank meets at barrier i), so the kernels' grids stay within it.
inline constexpr int kLsaBarriersPerSm = 3;

}  // namespace symmcomm::detail
