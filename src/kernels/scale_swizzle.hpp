#pragma once
// Private: how the LSA kernels split the writes of swizzled block scales into work units
// (host/device, so that tests/unit checks on the CPU that the units of all ranks together write
// every byte of the scale matrix exactly once, with the right value).
//
// A gather swizzle segment (lsa::GatherSegment with scale_cols > 0) writes, per unit, one
// 16-byte chunk of the layout (swizzle_chunk): the rows of it that are this rank's rows get
// values from its linear scales (padding columns 0), its padding rows [zero_from, zero_to) 0.
// The fused quantize + gather writes each block's scale byte where its (row, col) lies, then,
// per padding unit, one zero byte: its rows' padding columns, then its padding rows.

#include <cstddef>

#include "formats/scale_swizzle.hpp"
#include "symmcomm/formats/host_device.hpp"
#include "symmcomm/formats/scale_layout.hpp"

namespace symmcomm::detail::lsa {

/// A gather swizzle segment's rows: [first_row, first_row + rows) take values from the
/// segment's linear scales, [zero_from, zero_to) are padding rows it writes as 0.
struct SwizzleRows {
  std::size_t first_row = 0, rows = 0, zero_from = 0, zero_to = 0;
};

/// What one row of a chunk is to a segment: another rank's row (not written), one of its rows
/// (value from local row `row - first_row`), or one of its padding rows (0).
enum class ChunkRow { Other, Value, Zero };
SYMMCOMM_HD constexpr ChunkRow chunk_row(const SwizzleRows& s, std::size_t row) {
  if (row >= s.first_row && row - s.first_row < s.rows) return ChunkRow::Value;
  if (row >= s.zero_from && row < s.zero_to) return ChunkRow::Zero;
  return ChunkRow::Other;
}

/// A segment's units are the 16-byte chunks (formats/scale_swizzle.hpp) of the row tiles its
/// rows and padding rows touch; rows of a shared tile that belong to other ranks are skipped
/// (chunk_row). First row tile and number of units of a segment with `cols` scale columns.
struct SwizzleSpan {
  std::size_t first_tile = 0, units = 0;
};
SYMMCOMM_HD constexpr SwizzleSpan swizzle_segment_span(std::size_t cols, const SwizzleRows& s) {
  bool const values = s.rows > 0, zeros = s.zero_to > s.zero_from;
  if (!values && !zeros) return SwizzleSpan{};
  std::size_t lo = values ? s.first_row : s.zero_from;
  std::size_t hi = values ? s.first_row + s.rows : s.zero_to;
  if (values && zeros) {
    lo = lo < s.zero_from ? lo : s.zero_from;
    hi = hi > s.zero_to ? hi : s.zero_to;
  }
  std::size_t const first = lo / kScaleTileRows;
  std::size_t const tiles = round_up_to(hi, kScaleTileRows) / kScaleTileRows - first;
  return SwizzleSpan{first, tiles * scale_groups(cols) * kChunkLanes};
}

/// Zero bytes the fused kernel writes: its rows' padding columns, then its padding rows.
SYMMCOMM_HD constexpr std::size_t swizzle_padding_units(std::size_t cols, std::size_t rows,
                                                        std::size_t zero_rows) {
  return rows * (round_up_to(cols, kScaleTileCols) - cols) +
         zero_rows * round_up_to(cols, kScaleTileCols);
}

/// Padding unit `v` of the fused kernel: the (row, col) of the zero byte it writes.
SYMMCOMM_HD constexpr ScalePosition swizzle_padding_position(std::size_t v, std::size_t cols,
                                                             std::size_t rows,
                                                             std::size_t first_row,
                                                             std::size_t zero_from) {
  std::size_t const padded = round_up_to(cols, kScaleTileCols);
  std::size_t const pad_cols = padded - cols;
  std::size_t const pad_units = rows * pad_cols;
  if (v < pad_units) return ScalePosition{first_row + v / pad_cols, cols + v % pad_cols};
  return ScalePosition{zero_from + (v - pad_units) / padded, (v - pad_units) % padded};
}

}  // namespace symmcomm::detail::lsa
