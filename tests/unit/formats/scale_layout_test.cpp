// The swizzled NVFP4 scale layout (scale_layout.hpp) against a reference written from the
// layout's description in memory order: tiles of 128 rows x 4 scale columns, tile after tile
// along a tile row; inside a tile 32 groups of 16 bytes, group a holding rows a, a + 32, a + 64,
// a + 96 (4 bytes each: scale columns 0..3). Rows and scale columns beyond the matrix are zero.

#include "symmcomm/formats/scale_layout.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace {

using namespace symmcomm;

// The swizzled bytes of `linear` ([rows, cols] scales), written in memory order.
std::vector<std::uint8_t> reference(const std::vector<std::uint8_t>& linear, std::size_t rows,
                                    std::size_t cols) {
  std::vector<std::uint8_t> out;
  std::size_t const tile_rows = (rows + 127) / 128, tile_cols = (cols + 3) / 4;
  for (std::size_t tr = 0; tr < tile_rows; ++tr) {
    for (std::size_t tc = 0; tc < tile_cols; ++tc) {
      for (std::size_t a = 0; a < 32; ++a) {
        for (std::size_t b = 0; b < 4; ++b) {
          for (std::size_t j = 0; j < 4; ++j) {
            std::size_t const r = tr * 128 + b * 32 + a, c = tc * 4 + j;
            out.push_back(r < rows && c < cols ? linear[r * cols + c] : std::uint8_t{0});
          }
        }
      }
    }
  }
  return out;
}

TEST(ScaleLayout, KnownOffsets) {
  EXPECT_EQ(swizzled_scale_offset(0, 0, 8), 0u);
  EXPECT_EQ(swizzled_scale_offset(0, 1, 8), 1u);
  EXPECT_EQ(swizzled_scale_offset(1, 0, 8), 16u);
  EXPECT_EQ(swizzled_scale_offset(32, 0, 8), 4u);
  EXPECT_EQ(swizzled_scale_offset(127, 3, 8), 31u * 16 + 3 * 4 + 3);
  EXPECT_EQ(swizzled_scale_offset(0, 4, 8), 512u);        // the next tile along the row
  EXPECT_EQ(swizzled_scale_offset(128, 0, 8), 2u * 512);  // the next tile row (2 tiles wide)
  EXPECT_EQ(swizzled_scale_offset(128, 0, 9), 3u * 512);  // 9 columns pad to 12: 3 tiles wide
  EXPECT_EQ(swizzled_scale_bytes(1, 1), 512u);
  EXPECT_EQ(swizzled_scale_bytes(129, 5), 256u * 8);
  EXPECT_EQ(swizzled_scale_bytes(7 * 128, 7168 / 16), 7u * 128 * 448);
}

TEST(ScaleLayout, MatchesTheMemoryOrderReferenceForUnevenShapes) {
  // Token counts that are not multiples of 128 (DP attention), widths with and without padding.
  for (std::size_t rows : {1u, 31u, 77u, 128u, 129u, 300u}) {
    for (std::size_t cols : {1u, 3u, 4u, 7u, 448u}) {
      std::vector<std::uint8_t> linear(rows * cols);
      for (std::size_t k = 0; k < linear.size(); ++k) {
        linear[k] = static_cast<std::uint8_t>(1 + (k * 37 + k / 251) % 255);  // never 0
      }
      std::vector<std::uint8_t> got(swizzled_scale_bytes(rows, cols), 0xAB);
      swizzle_scales_host(linear.data(), rows, cols, got.data());
      EXPECT_EQ(got, reference(linear, rows, cols)) << rows << " x " << cols;
    }
  }
}

TEST(ScaleLayout, OffsetsAreABijectionOntoThePaddedTiles) {
  std::size_t const rows = 256, cols = 12;  // no padding: every byte is some scale
  std::vector<int> hits(swizzled_scale_bytes(rows, cols), 0);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) ++hits[swizzled_scale_offset(r, c, cols)];
  }
  for (std::size_t b = 0; b < hits.size(); ++b) ASSERT_EQ(hits[b], 1) << "byte " << b;
}

// swizzled_scale_position (the public inverse of the layout) inverts swizzled_scale_offset on
// every byte of uneven layouts, and names padding bytes as positions outside the matrix.
TEST(ScaleLayout, PositionInvertsOffsetOnEveryByte) {
  for (auto const& [rows, cols] : std::vector<std::pair<std::size_t, std::size_t>>{
           {1, 1}, {127, 3}, {128, 4}, {129, 448}, {300, 7}}) {
    std::size_t const total = swizzled_scale_bytes(rows, cols);
    std::vector<int> seen(total, 0);
    for (std::size_t r = 0; r < round_up_to(rows, kScaleTileRows); ++r) {
      for (std::size_t c = 0; c < round_up_to(cols, kScaleTileCols); ++c) {
        std::size_t const off = swizzled_scale_offset(r, c, cols);
        ASSERT_LT(off, total);
        ScalePosition const at = swizzled_scale_position(off, cols);
        ASSERT_EQ(at.row, r) << rows << "x" << cols << " offset " << off;
        ASSERT_EQ(at.col, c) << rows << "x" << cols << " offset " << off;
        ++seen[off];
      }
    }
    for (std::size_t b = 0; b < total; ++b) ASSERT_EQ(seen[b], 1) << "byte " << b;
  }
}

}  // namespace
