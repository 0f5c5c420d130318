// The work units the LSA kernels write swizzled block scales in (kernels/scale_swizzle.hpp),
// simulated on the CPU for every rank of device-count gathers: the gather segments' chunk writes
// and the fused kernel's byte writes plus its padding pass each cover every byte of the padded
// scale matrix exactly once, and the result equals the documented layout of the concatenated
// linear scales (scale_layout.hpp's host conversion).

#include "kernels/scale_swizzle.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "collectives/scale_swizzle.hpp"
#include "kernels/lsa.hpp"
#include "symmcomm/formats/scale_layout.hpp"

namespace {

using namespace symmcomm;
using namespace symmcomm::detail;

struct Case {
  std::size_t cols;
  std::vector<std::size_t> rows;  // per rank
};

std::vector<Case> cases() {
  return {{7, {5, 0, 130}},
          {448, {1, 2}},
          {4, {128, 128}},
          {1, {3}},
          {9, {37, 74, 111, 148, 185, 222, 259, 296}},
          {448, {0, 200, 0}},
          {12, {256, 1, 127}}};
}

// A fake rank's linear scales: never 0, so a missing write cannot pass as padding.
std::vector<std::uint8_t> scales_of(std::size_t rank, std::size_t count) {
  std::vector<std::uint8_t> s(count);
  for (std::size_t i = 0; i < count; ++i)
    s[i] = static_cast<std::uint8_t>(1 + (i * 7 + rank * 13) % 255);
  return s;
}

// The per-rank launches as the library sets them (set_swizzle), and the reference.
struct Gathered {
  SwizzledScales plan;
  std::vector<std::vector<std::uint8_t>> linear;
  std::vector<std::uint8_t> want;
};

Gathered gathered(const Case& c) {
  std::size_t const row = c.cols * 16;
  std::vector<std::size_t> counts;
  std::size_t total = 0;
  for (std::size_t r : c.rows) {
    counts.push_back(r * row);
    total += r * row;
  }
  auto* aligned = reinterpret_cast<std::uint8_t*>(std::uintptr_t{1} << 20);
  Nvfp4View const recv =
      Nvfp4View{aligned, aligned, reinterpret_cast<float*>(aligned), total}.with_swizzled_scales(
          row);
  Gathered g{*swizzled_scales(recv, counts, "test"), {}, {}};
  std::vector<std::uint8_t> all;
  for (std::size_t r = 0; r < c.rows.size(); ++r) {
    g.linear.push_back(scales_of(r, c.rows[r] * c.cols));
    all.insert(all.end(), g.linear.back().begin(), g.linear.back().end());
  }
  g.want.resize(g.plan.bytes);
  swizzle_scales_host(all.data(), g.plan.total_rows, c.cols, g.want.data());
  return g;
}

// The scale matrix as the ranks' units write it: every byte's value and write count.
struct Written {
  explicit Written(std::size_t bytes) : got(bytes, 0xEE), writes(bytes, 0) {}
  void write(std::size_t at, std::uint8_t v) {
    ASSERT_LT(at, got.size());
    got[at] = v;
    ++writes[at];
  }
  void expect_exactly(const Gathered& g, const Case& c) const {
    std::string const at =
        "cols " + std::to_string(c.cols) + ", " + std::to_string(c.rows.size()) + " ranks";
    for (std::size_t b = 0; b < writes.size(); ++b) ASSERT_EQ(writes[b], 1) << at << " byte " << b;
    EXPECT_EQ(got, g.want) << at;
  }
  std::vector<std::uint8_t> got;
  std::vector<int> writes;
};

TEST(SwizzleUnits, GatherSegmentsOfAllRanksWriteEveryByteOnceAndRight) {
  for (const Case& c : cases()) {
    Gathered const g = gathered(c);
    std::size_t const n = c.rows.size();
    Written m(g.plan.bytes);
    for (std::size_t r = 0; r < n; ++r) {
      lsa::GatherSegment seg;
      seg.bytes = g.linear[r].size();
      set_swizzle(g.plan, r, n, seg);
      lsa::SwizzleRows const rows{seg.first_row, seg.bytes / seg.scale_cols, seg.zero_from,
                                  seg.zero_to};
      lsa::SwizzleSpan const span = lsa::swizzle_segment_span(seg.scale_cols, rows);
      for (std::size_t u = 0; u < span.units; ++u) {
        auto const chunk = swizzle_chunk(u, seg.scale_cols, span.first_tile);
        ASSERT_EQ(chunk.offset % 16, 0u);
        for (std::size_t k = 0; k < 4; ++k) {
          std::size_t const row = chunk.row0 + 32 * k;
          lsa::ChunkRow const kind = lsa::chunk_row(rows, row);
          if (kind == lsa::ChunkRow::Other) continue;
          std::size_t const at = chunk.offset + 4 * k;
          ASSERT_EQ(at, swizzled_scale_offset(row, chunk.col0, seg.scale_cols));
          for (std::size_t j = 0; j < 4; ++j) {
            std::size_t const col = chunk.col0 + j;
            std::size_t const local = row - rows.first_row;
            m.write(at + j, kind == lsa::ChunkRow::Value && col < seg.scale_cols
                                ? g.linear[r][local * seg.scale_cols + col]
                                : 0);
          }
        }
      }
    }
    m.expect_exactly(g, c);
  }
}

TEST(SwizzleUnits, FusedKernelBlocksAndPaddingWriteEveryByteOnceAndRight) {
  for (const Case& c : cases()) {
    Gathered const g = gathered(c);
    std::size_t const n = c.rows.size();
    Written m(g.plan.bytes);
    for (std::size_t r = 0; r < n; ++r) {
      lsa::QuantizeGatherArgs a;
      a.count = g.linear[r].size() * 16;
      set_swizzle(g.plan, r, n, a);
      std::size_t const cols = a.scale_cols, blocks = a.count / 16, rows = blocks / cols;
      for (std::size_t b = 0; b < blocks; ++b) {  // the main loop's scale stores
        m.write(swizzled_scale_offset(a.first_row + b / cols, b % cols, cols), g.linear[r][b]);
      }
      std::size_t const units = lsa::swizzle_padding_units(cols, rows, a.zero_to - a.zero_from);
      for (std::size_t v = 0; v < units; ++v) {  // the padding pass
        auto const pos = lsa::swizzle_padding_position(v, cols, rows, a.first_row, a.zero_from);
        m.write(swizzled_scale_offset(pos.row, pos.col, cols), 0);
      }
    }
    m.expect_exactly(g, c);
  }
}

// swizzle_nvfp4_scales' kernel: every chunk of the padded matrix, with both ways of loading a
// row's 4 scales where they apply.
TEST(SwizzleUnits, CodecChunksWriteEveryByteOnceAndRight) {
  for (const Case& c : cases()) {
    Gathered const g = gathered(c);
    std::vector<std::uint8_t> all;
    for (const auto& l : g.linear) all.insert(all.end(), l.begin(), l.end());
    for (bool word_loads : {false, c.cols % 4 == 0}) {
      Written m(g.plan.bytes);
      ASSERT_EQ(g.plan.bytes % kChunkBytes, 0u);
      for (std::size_t u = 0; u < g.plan.bytes / kChunkBytes; ++u) {
        auto const chunk = swizzle_chunk(u, c.cols, 0);
        std::uint32_t word[4];
        matrix_chunk_words(all.data(), g.plan.total_rows, c.cols, chunk, word_loads, word);
        for (std::size_t b = 0; b < kChunkBytes; ++b) {
          m.write(chunk.offset + b, static_cast<std::uint8_t>(word[b / 4] >> (8 * (b % 4))));
        }
      }
      m.expect_exactly(g, c);
    }
  }
}

}  // namespace
