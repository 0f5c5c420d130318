// The swizzled block-scale layout of NVFP4 gathers (scale_swizzle.hpp).

#include "scale_swizzle.hpp"

#include <cstdint>

#include "symmcomm/error.hpp"
#include "symmcomm/formats/nvfp4.hpp"
#include "symmcomm/formats/scale_layout.hpp"

namespace symmcomm::detail {

std::optional<SwizzledScales> swizzled_scales(const ConstNvfp4View& recv,
                                              const std::vector<std::size_t>& counts,
                                              const char* operation) {
  if (recv.scale_layout == ScaleLayout::Linear) return std::nullopt;
  // The view itself was checked with the call (validate_call: validate_gather_recv); the rows
  // per rank are checked here, the one place that splits the counts into rows.
  std::size_t const row = recv.row_elements;
  SwizzledScales s;
  s.scale_cols = row / kNvfp4BlockSize;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    SYMMCOMM_EXPECTS(counts[r] % row == 0, operation << ": rank " << r << "'s count " << counts[r]
                                                     << " is not whole rows of "
                                                     << "recv.row_elements " << row);
    s.first_row.push_back(s.total_rows);
    s.total_rows += counts[r] / row;
  }
  s.bytes = swizzled_scale_bytes(s.total_rows, s.scale_cols);
  s.padded_rows = round_up_to(s.total_rows, kScaleTileRows);
  return s;
}

}  // namespace symmcomm::detail
