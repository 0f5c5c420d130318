#pragma once
/// @file thresholds.hpp
/// @brief The planner's size thresholds, in one table. Each value says where it came from;
/// the multi-GPU measurements (bench/results/) refine them.

#include <cstddef>

namespace symmcomm::thresholds {

/// Largest payload per rank for which Auto copies plain buffers through symmetric staging
/// scratch (Options::allow_staging). Two extra device copies cost ~2 x (launch + bytes / copy
/// bandwidth); symmetric kernels save most at small sizes, where latency dominates. Provisional
/// (not yet measured on several GPUs): 1 MiB, the size below which vLLM's custom all-reduce
/// stages its input.
inline constexpr std::size_t kStagingMaxBytesPerRank = std::size_t{1} << 20;

}  // namespace symmcomm::thresholds
