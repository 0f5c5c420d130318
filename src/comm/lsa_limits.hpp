#pragma once
// Private: limits the device communicator is created with and symmcomm's LSA kernels rely on.

#include <cstddef>

namespace symmcomm::detail {

/// LSA barriers a device communicator reserves per SM of the GPU (times the fewest SMs of any
/// rank's GPU, agreed at creation): one per CTA of the largest grid symmcomm's LSA kernels
/// launch (CTA i of every rank meets at barrier i), so the kernels' grids stay within it.
inline constexpr int kLsaBarriersPerSm = 3;

/// The small-message all-gather (kernels/lsa_ll.hpp): bytes of one line (8 data bytes and two
/// 4-byte flags), the data bytes it carries, and the most bytes one rank sends per call (all
/// segments, each rounded up to whole lines) - the sizes where the barriers dominate; larger
/// calls take the barrier kernel, whose stores carry no flags.
inline constexpr std::size_t kLlLineBytes = 16;
inline constexpr std::size_t kLlLineData = 8;
inline constexpr std::size_t kLlMaxBytesPerRank = std::size_t{96} << 10;
/// One source rank's slot in one half of the scratch: kLlMaxBytesPerRank of data as lines.
inline constexpr std::size_t kLlSlotBytes = (kLlMaxBytesPerRank / kLlLineData) * kLlLineBytes;
/// Scratch bytes a communicator of `ranks` ranks holds for it: two halves of a slot per source
/// rank.
inline constexpr std::size_t ll_scratch_bytes(int ranks) {
  return 2 * static_cast<std::size_t>(ranks) * kLlSlotBytes;
}

}  // namespace symmcomm::detail
