#pragma once
// Private: limits the device communicator is created with and symmcomm's LSA kernels rely on.

namespace symmcomm::detail {

/// LSA barriers reserved per device communicator: one per CTA of the largest grid symmcomm's
/// LSA kernels launch (CTA i of every rank meets at barrier i), so it is also that grid's cap.
inline constexpr int kMaxLsaCtas = 396;

}  // namespace symmcomm::detail
