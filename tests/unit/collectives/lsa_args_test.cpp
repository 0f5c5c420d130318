// The LSA kernels' launch arguments as production and loopback both build them
// (src/collectives/lsa_args.hpp), without a GPU: each rank's segment lands after the bytes of
// the ranks before it, from the base its path gives; swizzled scales share one matrix; the
// grid follows the per-rank average; quantized offsets follow the format's packing.

#include "collectives/lsa_args.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

using namespace symmcomm;

TEST(LsaArgs, GatherSegmentsLandAfterTheRanksBefore) {
  std::vector<std::size_t> const data{100, 0, 60}, scales{12, 0, 8};
  char src[2];
  auto const part = [](const void* send, const std::vector<std::size_t>& bytes,
                       const detail::SwizzledScales* swizzle = nullptr) {
    return detail::GatherPart{"send", send, "recv", nullptr, bytes, swizzle};
  };
  // Rank 2 of 3: data after 100 + 0 bytes, scales after 12 + 0, from each part's base.
  auto const a = detail::gather_args({part(src, data), part(src + 1, scales)}, {4096, 512}, 2, 3);
  EXPECT_EQ(a.segments, 2);
  EXPECT_EQ(a.segment[0].src, src);
  EXPECT_EQ(a.segment[0].dst.slot, 0);
  EXPECT_EQ(a.segment[0].dst.offset, 4096u + 100u);
  EXPECT_EQ(a.segment[0].bytes, 60u);
  EXPECT_EQ(a.segment[1].dst.slot, 1);
  EXPECT_EQ(a.segment[1].dst.offset, 512u + 12u);
  EXPECT_EQ(a.segment[1].bytes, 8u);
  EXPECT_EQ(a.grid_bytes, (160u + 20u) / 3u);
  // Loopback's base is 0 (each view's own pointer): the same offsets less the window's.
  auto const l = detail::gather_args({part(src, data)}, {0}, 1, 3);
  EXPECT_EQ(l.segment[0].dst.offset, 100u);
  EXPECT_EQ(l.segment[0].bytes, 0u);
}

// Per-rank sizes inline up to RankSizes::kInline ranks and on the heap past it: the same
// answers either way, through copies too, and the last rank of a wide team lands after all
// the others.
TEST(LsaArgs, RankSizesAnswerTheSameInlineAndOnTheHeap) {
  for (std::size_t const n : {std::size_t{1}, detail::RankSizes::kInline,
                              detail::RankSizes::kInline + 1, std::size_t{72}}) {
    detail::RankSizes const even(n, 48);
    ASSERT_EQ(even.size(), n);
    for (std::size_t r = 0; r < n; ++r) EXPECT_EQ(even[r], 48u) << n << " ranks, rank " << r;
    std::vector<std::size_t> uneven(n);
    for (std::size_t r = 0; r < n; ++r) uneven[r] = 16 * r + 1;
    detail::RankSizes from_vector(uneven);
    detail::RankSizes const copy = from_vector;
    from_vector[0] = 7;  // the copy keeps its own sizes
    EXPECT_EQ(std::vector<std::size_t>(copy.begin(), copy.end()), uneven) << n << " ranks";
    EXPECT_EQ(from_vector[0], 7u);
    char src = 0;
    auto const a = detail::gather_args({detail::GatherPart{"send", &src, "recv", nullptr, copy}},
                                       {0}, n - 1, n);
    std::size_t before = 0;
    for (std::size_t r = 0; r + 1 < n; ++r) before += uneven[r];
    EXPECT_EQ(a.segment[0].dst.offset, before) << n << " ranks";
    EXPECT_EQ(a.segment[0].bytes, uneven[n - 1]);
  }
}

TEST(LsaArgs, SwizzledScalesShareOneMatrixAndTheLastRankZeroesThePadding) {
  std::vector<std::size_t> const counts{5 * 112, 130 * 112};
  auto* p = reinterpret_cast<std::uint8_t*>(std::uintptr_t{1} << 20);
  Nvfp4View const recv =
      Nvfp4View{p, p, reinterpret_cast<float*>(p), 135 * 112}.with_swizzled_scales(112);
  auto const sw = detail::swizzled_scales(recv, counts, "test");
  ASSERT_TRUE(sw.has_value());
  std::vector<std::size_t> const bytes{5 * 7, 130 * 7};
  for (std::size_t r = 0; r < 2; ++r) {
    auto const a = detail::gather_args(
        {detail::GatherPart{"send", p, "recv", nullptr, bytes, &*sw}}, {256}, r, 2);
    EXPECT_EQ(a.segment[0].dst.offset, 256u) << r;  // the matrix, not a displacement
    EXPECT_EQ(a.segment[0].scale_cols, 7u);
    EXPECT_EQ(a.segment[0].first_row, r == 0 ? 0u : 5u);
    EXPECT_EQ(a.segment[0].zero_from, r == 1 ? 135u : 0u);
    EXPECT_EQ(a.segment[0].zero_to, r == 1 ? 256u : 0u);
  }
}

TEST(LsaArgs, QuantizedOffsetsFollowThePacking) {
  detail::QuantizedBases const base{1000, 200, 32};
  // Rank 1 of 4, its shard 64 elements in: NVFP4 data 32 bytes, block scales 4 bytes in.
  auto const r = detail::reduce_args(DataType::Nvfp4, base, 64, 64, 64);
  EXPECT_EQ(r.data.offset, 1000u + 32u);
  EXPECT_EQ(r.block_scales.slot, 1);
  EXPECT_EQ(r.block_scales.offset, 200u + 4u);
  EXPECT_EQ(r.scale.offset, 32u);
  EXPECT_EQ(r.count, 64u);
  auto const f = detail::reduce_args(DataType::Fp8E4M3, base, 64, 64, 64);
  EXPECT_EQ(f.data.offset, 1000u + 64u);  // one byte per FP8 element
  // The fused quantize + gather writes the scale's value into float `rank` of the scale slot.
  auto const q = detail::quantize_gather_args(DataType::Nvfp4, nullptr, nullptr, 64, 64, 64, base,
                                              nullptr, 1, 4);
  EXPECT_EQ(q.data.offset, 1000u + 32u);
  EXPECT_EQ(q.block_scales.offset, 200u + 4u);
  EXPECT_EQ(q.scale_dst.offset, 32u + sizeof(float));
  EXPECT_EQ(q.scale_cols, 0u);
}

}  // namespace
