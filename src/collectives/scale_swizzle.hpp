#pragma once
// Private: the swizzled block-scale layout of an NVFP4 gather (its receive view's
// scale_layout), checked and resolved once per call into what the kernels and the NCCL paths
// need.

#include <cstddef>
#include <optional>
#include <vector>

#include "symmcomm/formats/views.hpp"

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

/// nullopt when `recv`'s block scales are linear; for Swizzled128x4 the layout of a gather with
/// counts[r] elements from rank r into `recv`. @throws LogicError naming `operation` and the
/// offending value (recv as validate_gather_recv refuses it, a rank's count that is not whole
/// rows).
std::optional<SwizzledScales> swizzled_scales(const ConstNvfp4View& recv,
                                              const std::vector<std::size_t>& counts,
                                              const char* operation);

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

}  // namespace symmcomm::detail
