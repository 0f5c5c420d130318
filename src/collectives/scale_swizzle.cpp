// The swizzled block-scale layout of NVFP4 gathers (scale_swizzle.hpp).

#include "scale_swizzle.hpp"

#include <cstdint>

#include "symmcomm/error.hpp"
#include "symmcomm/formats/nvfp4.hpp"
#include "symmcomm/formats/scale_layout.hpp"

namespace symmcomm::detail {

std::optional<SwizzledScales> swizzled_scales(const Options& options,
                                              const std::vector<std::size_t>& counts,
                                              const void* recv_block_scales,
                                              const char* operation) {
  if (options.scale_layout == ScaleLayout::Linear) return std::nullopt;
  SYMMCOMM_EXPECTS(options.scale_layout == ScaleLayout::Swizzled128x4,
                   operation << ": Options::scale_layout " << static_cast<int>(options.scale_layout)
                             << " is not a layout");
  std::size_t const row = options.row_elements;
  SYMMCOMM_EXPECTS(row > 0 && row % kNvfp4BlockSize == 0,
                   operation << ": Options::row_elements " << row
                             << " is not a positive multiple of " << kNvfp4BlockSize
                             << " (swizzled scales need whole 16-element blocks per row)");
  SYMMCOMM_EXPECTS(reinterpret_cast<std::uintptr_t>(recv_block_scales) % 4 == 0,
                   operation << ": recv.block_scales " << recv_block_scales
                             << " is not 4-byte aligned (swizzled scales are written 4 at a time)");
  SwizzledScales s;
  s.scale_cols = row / kNvfp4BlockSize;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    SYMMCOMM_EXPECTS(counts[r] % row == 0, operation << ": rank " << r << "'s count " << counts[r]
                                                     << " is not whole rows of "
                                                     << "Options::row_elements " << row);
    s.first_row.push_back(s.total_rows);
    s.total_rows += counts[r] / row;
  }
  s.bytes = swizzled_scale_bytes(s.total_rows, s.scale_cols);
  s.padded_rows = round_up_to(s.total_rows, kScaleTileRows);
  return s;
}

void refuse_scale_layout(const Options& options, const char* operation) {
  SYMMCOMM_EXPECTS(options.scale_layout == ScaleLayout::Linear,
                   operation << ": Options::scale_layout applies to NVFP4 gathers only "
                                "(all_gather, all_gatherv of Nvfp4View)");
}

}  // namespace symmcomm::detail
