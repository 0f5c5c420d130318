#pragma once
/// @file path.hpp
/// @brief The paths a collective can take and the caller's choice among them, side by side.

#include <cstddef>
#include <cstdint>

namespace symmcomm {

/// @brief The path a collective took (decided by the planner, src/collectives/planner.hpp).
enum class Path : std::uint8_t { NcclSymmetric = 0, LsaKernel = 1, Fallback = 2 };
/// @brief Number of Path values.
inline constexpr std::size_t kPathCount = 3;
/// @brief "nccl-symmetric", "lsa-kernel" or "fallback".
const char* to_string(Path path) noexcept;

/// @brief Which path a collective may take (Options::path): Auto lets the planner decide; the
/// others force a path and make the call fail (LogicError naming the buffer and why) when it
/// cannot be taken.
enum class PathChoice : std::uint8_t { Auto, NcclSymmetric, LsaKernel, Fallback };
/// @brief "auto", "nccl-symmetric", "lsa-kernel", "fallback".
const char* to_string(PathChoice choice) noexcept;

}  // namespace symmcomm
