#pragma once
// Private: the compaction of a device-count gather with counts on the device
// (collectives/device_counts.cpp). Every rank's rows arrive at capacity (rank q's row r at q *
// capacity + r of each part's source); the kernel reads the gathered counts, clamps them to
// 0..capacity (raising the overflow flag for any outside), writes the exclusive prefix, and moves
// each rank's first count rows to their compact place (rank q's row r at offset[q] + r of each
// part's destination). One launch; graph-capturable (counts are read when it runs).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "symmcomm/limits.hpp"

namespace symmcomm::detail::compact {

inline constexpr int kMaxParts = 6;  // NVFP4 data and block scales + kMaxRowItems
inline constexpr int kMaxRanks = kMaxKernelRanks;

struct Part {
  const std::uint8_t* src = nullptr;  ///< ranks x capacity rows
  std::uint8_t* dst = nullptr;        ///< compact rows
  std::size_t row_bytes = 0;
  /// NVFP4 block scales into the 128 x 4 swizzled layout (symmcomm/formats/scale_layout.hpp):
  /// `dst` is the swizzled matrix of ranks x capacity rows (padding included) of row_bytes
  /// scale columns; compact row t's byte c lands at swizzled_scale_offset(t, c, row_bytes), and
  /// the rows from the total count to the padded end are written as 0 (a GEMM reads them).
  /// Gathers only (not with `expand`).
  bool swizzled = false;
};

struct Args {
  Part part[kMaxParts];
  int parts = 0;
  const std::int32_t* counts = nullptr;  ///< device: every rank's count as gathered
  int ranks = 0;
  std::size_t capacity = 0;          ///< rows per rank in the sources
  std::int32_t* offsets = nullptr;   ///< device [ranks]: written (exclusive prefix)
  std::int32_t* overflow = nullptr;  ///< device flag: set to 1 for a count outside 0..capacity
  /// The inverse move: compact rows in the sources (rank q's at offset[q] + r) to their padded
  /// place in the destinations (q * capacity + r), for a reduce-scatter with device counts.
  bool expand = false;
};

void compact_rows(const Args& args, cudaStream_t stream);

}  // namespace symmcomm::detail::compact
