#pragma once
/// @file limits.hpp
/// @brief Size limits of symmcomm's own kernels, defined once for the public API and the
/// kernels.

namespace symmcomm {

/// @brief Most ranks one of symmcomm's kernels reads or writes in one launch (a quantized
/// reduction's shards, an LSA kernel's peers).
inline constexpr int kMaxKernelRanks = 64;

/// @brief Most virtual ranks one loopback call runs (symmcomm/testing/loopback.hpp).
inline constexpr int kMaxLoopbackRanks = 8;

}  // namespace symmcomm
