// The swizzled block-scale option of NVFP4 gathers, resolved on the host (no GPU): rows per
// rank, first rows, bytes and padding of ragged gathers, and every bad option named.

#include "collectives/scale_swizzle.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "symmcomm/error.hpp"
#include "symmcomm/formats/scale_layout.hpp"

namespace {

using namespace symmcomm;

Options swizzled(std::size_t row_elements) {
  Options o;
  o.scale_layout = ScaleLayout::Swizzled128x4;
  o.row_elements = row_elements;
  return o;
}

std::string error_of(const Options& o, const std::vector<std::size_t>& counts, const void* scales) {
  try {
    detail::swizzled_scales(o, counts, scales, "all_gatherv");
  } catch (const LogicError& e) {
    return e.what();
  }
  return "no error";
}

auto* const kAligned = reinterpret_cast<void*>(std::uintptr_t{1} << 20);

TEST(ScaleSwizzle, LinearNeedsNothing) {
  EXPECT_FALSE(detail::swizzled_scales(Options{}, {16, 32}, nullptr, "all_gather").has_value());
  detail::refuse_scale_layout(Options{}, "reduce_scatter");  // no throw
}

TEST(ScaleSwizzle, RaggedRowsGetTheirFirstRowsAndThePaddedSize) {
  // Rows of 7 scale columns (112 elements); ranks with 5, 0, 130 rows.
  auto const s = detail::swizzled_scales(swizzled(112), {5 * 112, 0, 130 * 112}, kAligned, "x");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->scale_cols, 7u);
  EXPECT_EQ(s->total_rows, 135u);
  EXPECT_EQ(s->first_row, (std::vector<std::size_t>{0, 5, 5}));
  EXPECT_EQ(s->padded_rows, 256u);
  EXPECT_EQ(s->bytes, swizzled_scale_bytes(135, 7));
  EXPECT_EQ(s->bytes, 256u * 8u);
}

TEST(ScaleSwizzle, BadOptionsNameTheValue) {
  EXPECT_NE(error_of(swizzled(0), {16}, kAligned)
                .find("Options::row_elements 0 is not a positive "
                      "multiple of 16"),
            std::string::npos);
  EXPECT_NE(error_of(swizzled(40), {80}, kAligned).find("row_elements 40"), std::string::npos);
  EXPECT_NE(
      error_of(swizzled(32), {64, 48}, kAligned)
          .find("all_gatherv: rank 1's count 48 is not whole rows of Options::row_elements 32"),
      std::string::npos);
  auto* odd = reinterpret_cast<void*>((std::uintptr_t{1} << 20) + 2);
  EXPECT_NE(error_of(swizzled(32), {64}, odd).find("is not 4-byte aligned"), std::string::npos);
  Options bogus = swizzled(32);
  bogus.scale_layout = static_cast<ScaleLayout>(7);
  EXPECT_NE(error_of(bogus, {64}, kAligned).find("scale_layout 7 is not a layout"),
            std::string::npos);
  try {
    detail::refuse_scale_layout(swizzled(32), "reduce_scatter");
    ADD_FAILURE() << "a reduce-scatter accepted a scale layout";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("reduce_scatter: Options::scale_layout applies to NVFP4 "
                                         "gathers only"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
