// The library's NVFP4 block arithmetic held to an oracle written from the format's definition
// alone: e2m1 magnitudes {0, 0.5, 1, 1.5, 2, 3, 4, 6}, 16-element blocks, an e4m3 block scale
// nearest to amax(block) * g / 6, elements encoded as the e2m1 value nearest to x * g / s,
// round-to-nearest-even, saturating. Both encoders are found by exhaustive nearest search over
// every representable value (no bit tricks), so an error in the library's fast encoders cannot
// hide in a shared helper.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "symmcomm/formats/nvfp4.hpp"

namespace {

using symmcomm::kNvfp4BlockSize;

// Every finite non-negative e4m3 (fn) value by code 0..0x7e: 4 exponent bits (bias 7), 3
// mantissa bits, subnormals at exponent 0; 0x7f is NaN.
std::vector<double> e4m3_values() {
  std::vector<double> v;
  for (int code = 0; code <= 0x7e; ++code) {
    int const e = code >> 3, m = code & 7;
    v.push_back(e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7));
  }
  return v;
}

// Index of the value nearest to `x` (x >= 0), ties to the even index; beyond the largest
// value, the largest (saturation).
int nearest(const std::vector<double>& values, double x) {
  if (x >= values.back()) return static_cast<int>(values.size()) - 1;
  int best = 0;
  for (int i = 1; i < static_cast<int>(values.size()); ++i) {
    double const d = std::fabs(values[i] - x), db = std::fabs(values[best] - x);
    if (d < db || (d == db && i % 2 == 0)) best = i;
  }
  return best;
}

struct Oracle {
  std::vector<double> e2m1{0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  std::vector<double> e4m3 = e4m3_values();

  // The block scale code and the 16 element codes (sign in bit 3) of one block.
  std::uint8_t quantize(const float* x, float g, std::uint8_t codes[16]) const {
    float amax = 0.0f;
    for (std::size_t i = 0; i < kNvfp4BlockSize; ++i) amax = std::fmax(amax, std::fabs(x[i]));
    float const factor = g / 6.0f;       // fp32, once per tensor
    float const target = amax * factor;  // fp32 product
    auto const s = static_cast<std::uint8_t>(nearest(e4m3, target));
    float const s_value = static_cast<float>(e4m3[s]);
    float const m = s_value != 0.0f ? g / s_value : 0.0f;  // fp32 quotient
    for (std::size_t i = 0; i < kNvfp4BlockSize; ++i) {
      float const y = x[i] * m;  // fp32 product
      auto const mag = static_cast<std::uint8_t>(nearest(e2m1, std::fabs(static_cast<double>(y))));
      codes[i] = static_cast<std::uint8_t>(mag | (std::signbit(y) ? 8u : 0u));
    }
    return s;
  }
};

// Compares the library with the oracle on one block; returns false (with a message) on a
// difference.
::testing::AssertionResult same_block(const Oracle& oracle, const float* x, float g) {
  std::uint8_t want[16];
  std::uint8_t const want_scale = oracle.quantize(x, g, want);
  std::uint8_t packed[8];
  std::uint8_t const scale = symmcomm::nvfp4_quantize_block(x, g, packed);
  if (scale != want_scale) {
    return ::testing::AssertionFailure()
           << "block scale " << int(scale) << " vs oracle " << int(want_scale) << " (g " << g
           << ", x0 " << x[0] << ")";
  }
  for (std::size_t i = 0; i < kNvfp4BlockSize; ++i) {
    std::uint8_t const got = (packed[i / 2] >> (4 * (i % 2))) & 0xfu;
    if (got != want[i]) {
      return ::testing::AssertionFailure()
             << "element " << i << " = " << x[i] << ": code " << int(got) << " vs oracle "
             << int(want[i]) << " (g " << g << ", scale code " << int(scale) << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(Nvfp4Oracle, RandomBlocksOfManyShapesMatchTheDefinition) {
  Oracle const oracle;
  std::mt19937 rng(20261203);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-40, 40);
  float x[16];
  int failures = 0;
  int const blocks = 400000;
  for (int b = 0; b < blocks && failures < 5; ++b) {
    float const magnitude = std::ldexp(1.0f, exponent(rng));
    for (auto& v : x) v = (b % 2 ? normal(rng) : uniform(rng)) * magnitude;
    if (b % 7 == 0) x[b % 16] = 0.0f;
    if (b % 11 == 0) x[(b + 3) % 16] = -x[(b + 5) % 16];  // equal magnitudes, both signs
    float amax = 0.0f;
    for (float v : x) amax = std::fmax(amax, std::fabs(v));
    // The tensor's amax is at least the block's: the block scale spans the e4m3 range.
    float const tensor_amax = amax * (1.0f + static_cast<float>(b % 1000) * 0.37f);
    float const g = b % 13 == 0 ? 1.0f : symmcomm::nvfp4_global_scale(tensor_amax);
    ::testing::AssertionResult const r = same_block(oracle, x, g);
    if (!r) {
      ADD_FAILURE() << "block " << b << ": " << r.message();
      ++failures;
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(Nvfp4Oracle, EdgeBlocksMatchTheDefinition) {
  Oracle const oracle;
  std::vector<std::vector<float>> blocks;
  // Every e2m1 value, every midpoint between neighbours and their neighbours in fp32, with the
  // block maximum fixed at 6 so that g = 448 maps the block to scale 448 exactly.
  std::vector<float> points;
  for (double v : oracle.e2m1) points.push_back(static_cast<float>(v));
  for (std::size_t i = 0; i + 1 < oracle.e2m1.size(); ++i) {
    auto const mid = static_cast<float>((oracle.e2m1[i] + oracle.e2m1[i + 1]) / 2);
    points.push_back(mid);
    points.push_back(std::nextafter(mid, 0.0f));
    points.push_back(std::nextafter(mid, 10.0f));
  }
  points.push_back(6.5f);
  points.push_back(7.0f);
  for (std::size_t first = 0; first < points.size(); first += 15) {
    std::vector<float> block(16, 0.0f);
    block[0] = 6.0f;
    for (std::size_t i = 1; i < 16 && first + i - 1 < points.size(); ++i) {
      block[i] = (i % 2 ? -1.0f : 1.0f) * points[first + i - 1];
    }
    blocks.push_back(block);
  }
  blocks.push_back(std::vector<float>(16, 0.0f));   // zero block: scale 0, codes 0
  blocks.push_back(std::vector<float>(16, -0.0f));  // negative zeros keep their sign
  blocks.push_back(std::vector<float>(16, std::numeric_limits<float>::denorm_min()));
  blocks.push_back(std::vector<float>(16, std::numeric_limits<float>::max()));
  std::vector<float> tiny_and_big(16, 1e-30f);
  tiny_and_big[5] = 1e30f;
  blocks.push_back(tiny_and_big);
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    float amax = 0.0f;
    for (float v : blocks[b]) amax = std::fmax(amax, std::fabs(v));
    for (float g : {448.0f, 1.0f, symmcomm::nvfp4_global_scale(amax),
                    symmcomm::nvfp4_global_scale(amax * 3.0f), 1e-20f, 1e20f}) {
      EXPECT_TRUE(same_block(oracle, blocks[b].data(), g)) << "edge block " << b << ", g " << g;
    }
  }
}

// The oracle itself, on values whose codes are known by hand.
TEST(Nvfp4Oracle, OracleAgreesWithHandWorkedCodes) {
  Oracle const oracle;
  EXPECT_EQ(nearest(oracle.e2m1, 0.25), 0);   // tie 0 / 0.5 -> even index 0
  EXPECT_EQ(nearest(oracle.e2m1, 0.75), 2);   // tie 0.5 / 1 -> 1.0 (index 2)
  EXPECT_EQ(nearest(oracle.e2m1, 2.5), 4);    // tie 2 / 3 -> 2 (index 4)
  EXPECT_EQ(nearest(oracle.e2m1, 5.0), 6);    // tie 4 / 6 -> 4 (index 6)
  EXPECT_EQ(nearest(oracle.e2m1, 100.0), 7);  // saturates at 6
  EXPECT_EQ(oracle.e4m3[0x7e], 448.0);
  EXPECT_EQ(oracle.e4m3[1], std::ldexp(1.0, -9));  // smallest subnormal
  EXPECT_EQ(nearest(oracle.e4m3, 1000.0), 0x7e);
}

}  // namespace
