#pragma once
// Private: the swizzled block-scale layout of an NVFP4 gather (Options::scale_layout), checked
// and resolved once per call into what the kernels and the NCCL paths need.

#include <cstddef>
#include <optional>
#include <vector>

#include "symmcomm/collectives/options.hpp"

namespace symmcomm::detail {

/// Where each rank's block scales go in the swizzled [rows, scale_cols] scale matrix.
struct SwizzledScales {
  std::size_t scale_cols = 0;          ///< row_elements / 16
  std::size_t total_rows = 0;          ///< rows of the gathered tensor
  std::vector<std::size_t> first_row;  ///< per rank: its first row in the gathered tensor
  std::size_t bytes = 0;               ///< swizzled_scale_bytes(total_rows, scale_cols)
  /// Rows [total_rows, padded_rows) are padding (zeroed by the last rank's launch or the pass).
  std::size_t padded_rows = 0;
};

/// nullopt for ScaleLayout::Linear; for Swizzled128x4 the layout of a gather with counts[r]
/// elements from rank r into `recv_block_scales`. @throws LogicError naming `operation` and the
/// offending value (row_elements not a positive multiple of 16, a count that is not whole rows,
/// recv.block_scales not 4-byte aligned).
std::optional<SwizzledScales> swizzled_scales(const Options& options,
                                              const std::vector<std::size_t>& counts,
                                              const void* recv_block_scales, const char* operation);

/// Rank `rank`'s swizzle fields of an LSA launch (lsa::GatherSegment or lsa::QuantizeGatherArgs):
/// its first row, and for the last of `ranks` ranks the padding rows it zeroes.
template <class Launch>
void set_swizzle(const SwizzledScales& s, std::size_t rank, std::size_t ranks, Launch& launch) {
  launch.scale_cols = s.scale_cols;
  launch.first_row = s.first_row[rank];
  if (rank + 1 == ranks) {
    launch.zero_from = s.total_rows;
    launch.zero_to = s.padded_rows;
  }
}

/// Throws LogicError naming `operation` when `options` asks for a scale layout other than
/// Linear: only NVFP4 gathers have block scales to lay out.
void refuse_scale_layout(const Options& options, const char* operation);

}  // namespace symmcomm::detail
