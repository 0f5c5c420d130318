#pragma once
/// @file shards.hpp
/// @brief QuantizedShards: one rank's view of every rank's shard of a quantized tensor, the
/// type the local reduction (symmcomm/collectives/local_reduce.hpp) and symmcomm's kernels read.

#include <cstdint>

#include "symmcomm/limits.hpp"

namespace symmcomm {

/// @brief Pointers to each rank's shard of a quantized tensor (device memory; trivially
/// copyable, passed to kernels by value).
struct QuantizedShards {
  /// Most ranks one launch reduces.
  static constexpr int kMaxRanks = kMaxKernelRanks;
  const std::uint8_t* data[kMaxRanks] = {};          ///< packed NVFP4 data or FP8 codes
  const std::uint8_t* block_scales[kMaxRanks] = {};  ///< NVFP4 only
  const float* scale[kMaxRanks] = {};                ///< NVFP4 global scale / FP8 scale of rank r
  int ranks = 0;                                     ///< entries used (1..kMaxRanks)
};

}  // namespace symmcomm
