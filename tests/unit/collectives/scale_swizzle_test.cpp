// The swizzled block-scale layout of NVFP4 receive views, resolved on the host (no GPU): rows
// per rank, first rows, bytes and padding of device-count gathers, and every bad layout named.

#include "collectives/scale_swizzle.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "symmcomm/error.hpp"
#include "symmcomm/formats/scale_layout.hpp"
#include "symmcomm/formats/views.hpp"

namespace {

using namespace symmcomm;

auto* const kAligned = reinterpret_cast<std::uint8_t*>(std::uintptr_t{1} << 20);
auto* const kGlobal = reinterpret_cast<float*>(std::uintptr_t{1} << 21);

// A receive view of the sum of `counts` elements with swizzled scales at `scales` (never read:
// no GPU here).
Nvfp4View swizzled(std::size_t row_elements, const std::vector<std::size_t>& counts,
                   std::uint8_t* scales = kAligned) {
  std::size_t total = 0;
  for (std::size_t c : counts) total += c;
  return Nvfp4View{kAligned, scales, kGlobal, total}.with_swizzled_scales(row_elements);
}

// The refusal of a gather into `recv` with these counts: the view's own checks (validate_call
// runs them for every gather), then the rows per rank (swizzled_scales).
std::string error_of(const Nvfp4View& recv, const std::vector<std::size_t>& counts) {
  try {
    validate_gather_recv(recv, "all_gatherv: recv", 1);
    detail::swizzled_scales(recv, counts, "all_gatherv");
  } catch (const LogicError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ScaleSwizzle, LinearNeedsNothing) {
  Nvfp4View const linear{kAligned, kAligned, kGlobal, 48};
  EXPECT_FALSE(detail::swizzled_scales(linear, {16, 32}, "all_gather").has_value());
  EXPECT_EQ(linear.scale_bytes(), 3u);
}

TEST(ScaleSwizzle, UnevenRowsGetTheirFirstRowsAndThePaddedSize) {
  // Rows of 7 scale columns (112 elements); ranks with 5, 0, 130 rows.
  std::vector<std::size_t> const counts{5 * 112, 0, 130 * 112};
  auto const s = detail::swizzled_scales(swizzled(112, counts), counts, "x");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->scale_cols, 7u);
  EXPECT_EQ(s->total_rows, 135u);
  EXPECT_EQ(s->first_row, (std::vector<std::size_t>{0, 5, 5}));
  EXPECT_EQ(s->padded_rows, 256u);
  EXPECT_EQ(s->bytes, swizzled_scale_bytes(135, 7));
  EXPECT_EQ(s->bytes, 256u * 8u);
  // The view knows its own scale bytes, padding included.
  EXPECT_EQ(swizzled(112, counts).scale_bytes(), s->bytes);
}

TEST(ScaleSwizzle, BadLayoutsNameTheValue) {
  EXPECT_NE(error_of(swizzled(0, {16}), {16})
                .find("all_gatherv: recv.row_elements 0 is not a positive multiple of 16"),
            std::string::npos);
  EXPECT_NE(error_of(swizzled(40, {80}), {80}).find("row_elements 40"), std::string::npos);
  EXPECT_NE(error_of(swizzled(32, {64, 48}), {64, 48})
                .find("recv.count 112 is not whole rows of row_elements 32"),
            std::string::npos);
  EXPECT_NE(error_of(swizzled(32, {64, 48}).with_swizzled_scales(16), {64, 24, 24})
                .find("all_gatherv: rank 1's count 24 is not whole rows of recv.row_elements 16"),
            std::string::npos);
  EXPECT_NE(error_of(swizzled(32, {64}, kAligned + 2), {64}).find("is not 4-byte aligned"),
            std::string::npos);
  Nvfp4View bogus = swizzled(32, {64});
  bogus.scale_layout = static_cast<ScaleLayout>(7);
  EXPECT_NE(error_of(bogus, {64}).find("scale_layout 7 is not a layout"), std::string::npos);
  Nvfp4View linear_with_rows{kAligned, kAligned, kGlobal, 64};
  linear_with_rows.row_elements = 32;
  try {
    validate_gather_recv(linear_with_rows, "recv", 1);
    ADD_FAILURE() << "row_elements without a swizzled layout was accepted";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("recv.row_elements 32 is set but scale_layout is Linear"),
              std::string::npos)
        << e.what();
  }
}

// Swizzled scales are for a gather's receive tensor only: every other check (a send side, a
// reduce-scatter, a codec) refuses them by name; slicing them is refused too.
TEST(ScaleSwizzle, EverythingButAGatherReceiveRefusesSwizzledScales) {
  Nvfp4View const v = swizzled(32, {64});
  try {
    validate(v, "send", 1);
    ADD_FAILURE() << "validate accepted swizzled scales";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("send has swizzled block scales (row_elements 32): only "
                                         "the receive tensor of an NVFP4 gather"),
              std::string::npos)
        << e.what();
  }
  validate_gather_recv(v, "recv", 1);  // no throw
  try {
    (void)v.slice(0, 32);
    ADD_FAILURE() << "slice of swizzled scales accepted";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("swizzled block scales"), std::string::npos) << e.what();
  }
  // The read-only view carries the layout.
  ConstNvfp4View const c = v;
  EXPECT_EQ(c.scale_layout, ScaleLayout::Swizzled128x4);
  EXPECT_EQ(c.row_elements, 32u);
  EXPECT_EQ(c.scale_bytes(), swizzled_scale_bytes(2, 2));
}

}  // namespace
