#pragma once
// Private: how the LSA kernels split the writes of swizzled block scales into work units
// (host/device, so that tests/unit checks on the CPU that the units of all ranks together write
// every byte of the scale matrix exactly once, with the right value).
//
// A gather swizzle segment (lsa::GatherSegment with scale_cols > 0) writes, per unit, the 4
// adjacent bytes of one row's 4-column group: first this rank's `rows` rows (values from its
// linear scales, padding columns 0), then its padding rows [zero_from, zero_to) (all 0).
// The fused quantize + gather writes each block's scale byte where its (row, col) lies, then,
// per padding unit, one zero byte: its rows' padding columns, then its padding rows.

#include <cstddef>

#include "symmcomm/formats/host_device.hpp"
#include "symmcomm/formats/scale_layout.hpp"

namespace symmcomm::detail::lsa {

/// 4-column groups per row of a matrix with `cols` scale columns.
SYMMCOMM_HD constexpr std::size_t scale_groups(std::size_t cols) {
  return round_up_to(cols, kScaleTileCols) / kScaleTileCols;
}

/// Units of a gather swizzle segment.
SYMMCOMM_HD constexpr std::size_t swizzle_segment_units(std::size_t cols, std::size_t rows,
                                                        std::size_t zero_rows) {
  return (rows + zero_rows) * scale_groups(cols);
}

/// Unit `u` of a gather swizzle segment: the matrix row, its first column, and the local row
/// its values come from (`rows` or more: a padding row, all zero).
struct SwizzleUnit {
  std::size_t row = 0, col0 = 0, local_row = 0;
};
SYMMCOMM_HD constexpr SwizzleUnit swizzle_segment_unit(std::size_t u, std::size_t cols,
                                                       std::size_t rows, std::size_t first_row,
                                                       std::size_t zero_from) {
  std::size_t const groups = scale_groups(cols);
  std::size_t const r = u / groups;
  return SwizzleUnit{r < rows ? first_row + r : zero_from + (r - rows),
                     (u % groups) * kScaleTileCols, r};
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
