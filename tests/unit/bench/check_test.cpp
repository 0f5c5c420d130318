// symmcomm-bench's check (-c 1): the inputs are what check.hpp promises (random, finite,
// reproducible), the expected reduce-scatter results are exact, and a wrong shard, a swapped
// nibble or a misplaced block scale would change them.

#include "check.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "symmcomm/formats/bf16.hpp"
#include "symmcomm/formats/e2m1.hpp"
#include "symmcomm/formats/fp8.hpp"

namespace {

using namespace symmcomm;
using namespace symmcomm::bench;

constexpr DataType kReduceTypes[] = {DataType::Nvfp4, DataType::Fp8E4M3, DataType::Fp8E5M2,
                                     DataType::Bf16};

// The fp64 sum of every rank's dequantized element i, computed here from the inputs alone.
double sum_at(DataType d, int ranks, std::size_t first, std::size_t n, std::size_t i) {
  double s = 0.0;
  for (int r = 0; r < ranks; ++r) {
    check::ReduceInput const in = check::reduce_input(d, r, ranks, first, n);
    if (d == DataType::Nvfp4) {
      std::uint8_t const byte = in.data[i / 2];
      s += static_cast<double>(
               decode_e2m1(static_cast<std::uint8_t>((i & 1) ? byte >> 4 : byte & 15))) *
           decode_e4m3(in.block_scales[i / 16]) / in.scale;
    } else if (d == DataType::Bf16) {
      s += bf16_bits_to_float(
          static_cast<std::uint16_t>(in.data[2 * i] | (in.data[2 * i + 1] << 8)));
    } else {
      s += static_cast<double>(
               decode_fp8(in.data[i], d == DataType::Fp8E5M2 ? Fp8Format::E5M2 : Fp8Format::E4M3)) *
           in.scale;
    }
  }
  return s;
}

TEST(BenchCheck, ReduceSumsAreExactInFp32AndExpectedIsThemRoundedOnce) {
  for (DataType d : kReduceTypes) {
    for (int ranks : {1, 2, 3, 8, 64}) {
      std::size_t const first = 16 * 40, n = 256;
      auto const want = check::reduce_expected(d, ranks, first, n);
      for (std::size_t i = 0; i < n; ++i) {
        double const s = sum_at(d, ranks, first, n, i);
        ASSERT_TRUE(std::isfinite(s));
        ASSERT_EQ(static_cast<double>(static_cast<float>(s)), s)
            << "dtype " << static_cast<int>(d) << ", " << ranks << " ranks, element " << i;
        ASSERT_EQ(want[i], float_to_bf16_bits(static_cast<float>(s)));
      }
    }
  }
}

TEST(BenchCheck, Bf16PartialSumsStayExactInBf16) {
  // NCCL adds bf16 in bf16: every partial sum must be representable, in any order.
  for (int ranks : {2, 8, 64}) {
    std::size_t const n = 512;
    std::vector<double> bound(n, 0.0);
    for (int r = 0; r < ranks; ++r) {
      check::ReduceInput const in = check::reduce_input(DataType::Bf16, r, ranks, 0, n);
      for (std::size_t i = 0; i < n; ++i) {
        float const v = bf16_bits_to_float(
            static_cast<std::uint16_t>(in.data[2 * i] | (in.data[2 * i + 1] << 8)));
        ASSERT_EQ(v, std::round(v));
        bound[i] += std::fabs(v);
      }
    }
    for (double b : bound) EXPECT_LE(b, 256.0) << ranks << " ranks";
  }
}

TEST(BenchCheck, Fp8InputsAreFiniteAndVaried) {
  for (DataType d : {DataType::Fp8E4M3, DataType::Fp8E5M2}) {
    Fp8Format const f = d == DataType::Fp8E5M2 ? Fp8Format::E5M2 : Fp8Format::E4M3;
    check::ReduceInput const in = check::reduce_input(d, 3, 8, 0, 4096);
    std::vector<int> seen(256, 0);
    for (std::uint8_t c : in.data) {
      ASSERT_TRUE(std::isfinite(decode_fp8(c, f))) << "code " << static_cast<int>(c);
      seen[c] = 1;
    }
    int distinct = 0;
    for (int s : seen) distinct += s;
    // Both signs, 6 binades, every mantissa: 96 e4m3 codes, 48 e5m2 codes.
    EXPECT_EQ(distinct, d == DataType::Fp8E5M2 ? 48 : 96) << "every code of the range is used";
  }
}

TEST(BenchCheck, AWrongShardSwappedNibblesOrMisplacedScalesChangeTheResult) {
  std::size_t const n = 1024;
  // A wrong shard: the neighbouring shard's expected values differ almost everywhere.
  for (DataType d : kReduceTypes) {
    auto const a = check::reduce_expected(d, 4, 0, n);
    auto const b = check::reduce_expected(d, 4, n, n);
    EXPECT_GT(check::count_wrong(a, b), static_cast<long long>(n / 2)) << static_cast<int>(d);
  }
  // Swapped nibbles: the two codes of a byte differ in most bytes.
  check::ReduceInput const in = check::reduce_input(DataType::Nvfp4, 0, 4, 0, n);
  std::size_t differ = 0;
  for (std::uint8_t byte : in.data) differ += (byte & 15) != (byte >> 4) ? 1 : 0;
  EXPECT_GT(differ, in.data.size() * 3 / 4);
  // Misplaced block scales: neighbouring blocks' scales differ often.
  std::size_t changes = 0;
  for (std::size_t b = 1; b < in.block_scales.size(); ++b) {
    changes += in.block_scales[b] != in.block_scales[b - 1] ? 1 : 0;
  }
  EXPECT_GT(changes, in.block_scales.size() / 2);
  // Gathered payloads: ranks' streams differ, and one rank's stream is reproducible.
  EXPECT_GT(check::count_wrong(check::random_bytes(0, check::Stream::Data, 0, n),
                               check::random_bytes(1, check::Stream::Data, 0, n)),
            static_cast<long long>(n * 9 / 10));
  auto const whole = check::random_bytes(2, check::Stream::BlockScales, 0, 150);
  EXPECT_EQ(check::count_wrong(check::random_bytes(2, check::Stream::BlockScales, 100, 50),
                               std::vector<std::uint8_t>(whole.begin() + 100, whole.end())),
            0);
  EXPECT_NE(check::gathered_scale(0), check::gathered_scale(1));
  // Check rounds get fresh inputs: a stale round's scale or bytes are wrong in the next.
  EXPECT_NE(check::gathered_scale(1, 0), check::gathered_scale(1, 1));
  EXPECT_NE(check::gathered_scale(0, 1), check::gathered_scale(1, 0));
  EXPECT_GT(check::count_wrong(check::random_bytes(0, check::Stream::Data, 0, n),
                               check::random_bytes(0, check::Stream::Data, n, n)),
            static_cast<long long>(n * 9 / 10));
}

TEST(BenchCheck, CountWrongCountsSizeMismatchAndDifferences) {
  EXPECT_EQ(check::count_wrong(std::vector<int>{1, 2, 3}, std::vector<int>{1, 2, 3}), 0);
  EXPECT_EQ(check::count_wrong(std::vector<int>{1, 5, 3}, std::vector<int>{1, 2, 3}), 1);
  EXPECT_EQ(check::count_wrong(std::vector<int>{1, 2}, std::vector<int>{1, 2, 3, 4}), 2);
}

}  // namespace
