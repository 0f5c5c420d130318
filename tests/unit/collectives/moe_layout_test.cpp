// The MoE group's window layout (kernels/moe.hpp, MoeLayout::of) and the group's refusals that
// need no GPU: every part 16-byte aligned, in order, without overlap, each of the size its
// tensor needs; an empty communicator named before anything else.

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "kernels/moe.hpp"
#include "support/tensors.hpp"
#include "symmcomm/collectives/moe.hpp"
#include "symmcomm/formats/scale_layout.hpp"

namespace {

using namespace symmcomm;
namespace lsa = detail::lsa;

lsa::MoeShape shape(int ranks, int experts, int top_k, int hidden, int tokens, int capacity,
                    bool in_place = false) {
  lsa::MoeShape s;
  s.in_place = in_place;
  s.ranks = ranks;
  s.experts = experts;
  s.top_k = top_k;
  s.hidden = hidden;
  s.max_tokens = tokens;
  s.capacity = capacity;
  return s;
}

TEST(MoeLayout, PartsAreAlignedInOrderAndAsLargeAsTheirTensors) {
  for (const lsa::MoeShape& s :
       {shape(2, 8, 3, 128, 37, 74), shape(8, 256, 8, 7168, 256, 2048), shape(4, 16, 1, 64, 1, 3),
        shape(8, 1024, 8, 7168, 5, 7), shape(2, 8, 3, 128, 37, 74, true),
        shape(8, 256, 8, 7168, 256, 512, true)}) {
    lsa::MoeLayout const l = lsa::MoeLayout::of(s);
    auto const L = static_cast<std::size_t>(s.local_experts());
    auto const cap = static_cast<std::size_t>(s.capacity);
    auto const pairs = static_cast<std::size_t>(s.pairs());
    // (offset, bytes the part needs), in window order.
    std::vector<std::pair<std::size_t, std::size_t>> const parts = {
        {l.table, 2 * static_cast<std::size_t>(s.ranks) * s.table_words() * 4},
        {l.rows, L * cap * s.hidden / 2},
        {l.scales, L * swizzled_scale_bytes(cap, s.hidden / 16)},
        {l.origin, L * cap * 4},
        {l.back, pairs * s.hidden * 2},
        {l.expert_out, s.in_place ? L * cap * s.hidden * 2 : 0},
        {l.pair_row, pairs * 4},
        {l.pair_expert, pairs * 4},
        {l.weights, pairs * 4},
        {l.expert_count, L * 4},
        {l.words, 16},
        {l.epoch, 4}};
    for (std::size_t i = 0; i < parts.size(); ++i) {
      SCOPED_TRACE("part " + std::to_string(i) + " of " + std::to_string(s.experts) + " experts");
      EXPECT_EQ(parts[i].first % 16, 0u);
      std::size_t const end = i + 1 < parts.size() ? parts[i + 1].first : l.bytes;
      EXPECT_GE(end, parts[i].first + parts[i].second);
      EXPECT_LT(end, parts[i].first + parts[i].second + 16 + 1);
    }
  }
  // DeepSeek-R1 at 8 ranks, 256 tokens per rank, nothing dropped: the rows dominate.
  lsa::MoeLayout const big = lsa::MoeLayout::of(shape(8, 256, 8, 7168, 256, 2048));
  EXPECT_EQ(big.scales - big.rows, std::size_t{32} * 2048 * 3584);
}

TEST(MoeLayout, Fp8WireScalesAreColumnMajorPerExpertWithColumnsOf16Bytes) {
  lsa::MoeShape s = shape(8, 256, 8, 7168, 5, 41);
  s.wire = DataType::Fp8E4M3;
  EXPECT_EQ(s.row_bytes(), 7168u);
  EXPECT_EQ(s.scale_cols(), 56u);
  EXPECT_EQ(s.token_scale_bytes(), 56u * 4);
  EXPECT_EQ(s.scale_rows(), 44u);  // 41 rounded up to 4: every column starts 16-byte aligned
  EXPECT_EQ(s.expert_scale_bytes(), 56u * 44 * 4);
  EXPECT_EQ(s.scale_offset(0, 0), 0u);
  EXPECT_EQ(s.scale_offset(3, 0), 12u);      // rows of one block adjacent
  EXPECT_EQ(s.scale_offset(0, 1), 44u * 4);  // the next block a column further
  EXPECT_EQ(s.scale_offset(40, 55), (55u * 44 + 40) * 4);
  lsa::MoeLayout const l = lsa::MoeLayout::of(s);
  EXPECT_EQ(l.scales - l.rows, std::size_t{32} * 41 * 7168);
  EXPECT_GE(l.origin - l.scales, std::size_t{32} * 56 * 44 * 4);
  s.wire = DataType::Bf16;
  EXPECT_EQ(s.scale_cols(), 0u);
  EXPECT_EQ(s.expert_scale_bytes(), 0u);
  EXPECT_EQ(s.row_bytes(), 7168u * 2);
}

TEST(MoeLayout, RowPartsCoverEveryScaleBlockOnceInOrder) {
  for (int hidden : {128, 256, 512, 7168, 7296}) {
    for (DataType wire : {DataType::Fp8E4M3, DataType::Nvfp4}) {
      lsa::MoeShape s;
      s.hidden = hidden;
      s.wire = wire;
      for (int parts : {1, 2, 3, 4, 7, 64}) {
        std::size_t next = 0;
        for (int part = 0; part < parts; ++part) {
          std::size_t first = 0, last = 0;
          s.row_part(part, parts, first, last);
          std::string const at = "hidden " + std::to_string(hidden) + ", " + to_string(wire) +
                                 ", part " + std::to_string(part) + " of " + std::to_string(parts);
          ASSERT_LE(first, last) << at;
          if (first < last) {
            EXPECT_EQ(first, next) << at << ": a gap or an overlap before it";
            next = last;
          }
        }
        EXPECT_EQ(next, s.scale_cols()) << "hidden " << hidden << ", " << parts << " parts";
      }
    }
  }
}

TEST(MoeLayout, Fp8RowsAreSplitOnlyIntoIdleWarps) {
  lsa::MoeShape s;
  s.hidden = 7168;
  s.wire = DataType::Fp8E4M3;
  int const most = lsa::MoeShape::kMaxFp8RowParts;
  EXPECT_EQ(s.quantize_row_parts(8, 1024), most) << "decode: a few pairs, most warps idle";
  EXPECT_EQ(s.quantize_row_parts(300, 1024), 3) << "as many parts as idle warps allow";
  EXPECT_EQ(s.quantize_row_parts(1024, 1024), 1) << "the pairs fill the grid";
  EXPECT_EQ(s.quantize_row_parts(2048, 1024), 1);
  EXPECT_EQ(s.quantize_row_parts(0, 1024), 1) << "no pair: nothing to split";
  for (int pairs : {1, 7, 64, 512, 2048}) {
    for (int warps : {1, 32, 1000, 4096}) {
      int const parts = s.quantize_row_parts(pairs, warps);
      EXPECT_GE(parts, 1) << pairs << " pairs, " << warps << " warps";
      EXPECT_LE(parts, most) << pairs << " pairs, " << warps << " warps";
      if (parts > 1) {
        EXPECT_LE(pairs * parts, warps) << "a split never queues a part behind another";
      }
    }
  }
  for (DataType wire : {DataType::Nvfp4, DataType::Bf16}) {
    s.wire = wire;
    EXPECT_EQ(s.quantize_row_parts(1, 4096), 1) << to_string(wire) << " rows take one warp";
  }
}

TEST(MoeLayout, AGroupOnAnEmptyCommunicatorNamesTheCommunicator) {
  Communicator const empty;
  MoeConfig c;
  c.num_experts = 8;
  c.top_k = 2;
  c.hidden = 64;
  c.max_tokens_per_rank = 4;
  for (const std::string& m : {test::logic_error_text([&] { MoeGroup g(empty, c); }),
                               test::logic_error_text([&] { MoeGroup::supported(empty); })}) {
    EXPECT_NE(m.find("comm is empty"), std::string::npos) << m;
  }
}

}  // namespace
