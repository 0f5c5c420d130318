#pragma once
// Private: limits the device communicator is created with and symmcomm's LSA kernels rely on.

#include <cstddef>

namespace symmcomm::detail {

/// LSA barriers a device communicator reserves per SM of the GPU (times the fewest SMs of any
/// rank's GPU, agreed at creation): one per CTA of the largest grid symmcomm's LSA kernels
/// launch (CTA i of every rank meets at barrier i), so the kernels' grids stay within it.
inline constexpr int kLsaBarriersPerSm = 3;

/// The scratch window a communicator makes with its device communicator (CommState::scratch),
/// for symmcomm's kernels that meet their peers through flags in the data (kernels/lsa_ll.hpp
/// lays it out): two halves used by alternate calls, each holding one slot of
/// kScratchSlotBytes per source rank.
inline constexpr std::size_t kScratchSlotBytes = std::size_t{192} << 10;
/// Bytes of the scratch window of a communicator of `ranks` ranks, on every rank.
inline constexpr std::size_t scratch_window_bytes(int ranks) {
  return 2 * static_cast<std::size_t>(ranks) * kScratchSlotBytes;
}

}  // namespace symmcomm::detail
