#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "symmcomm/formats/nvfp4.hpp"
#include "symmcomm/formats/traits.hpp"

namespace {

using namespace symmcomm;

TEST(Nvfp4, GlobalScaleConvention) {
  EXPECT_FLOAT_EQ(nvfp4_global_scale(2688.0f), 1.0f);
  EXPECT_FLOAT_EQ(nvfp4_global_scale(1.0f), 448.0f * 6.0f);
  EXPECT_EQ(nvfp4_global_scale(0.0f), 1.0f);
  EXPECT_EQ(nvfp4_global_scale(-1.0f), 1.0f);
  EXPECT_EQ(nvfp4_global_scale(std::nanf("")), 1.0f);
  EXPECT_TRUE(std::isfinite(nvfp4_global_scale(1e-44f)));
}

TEST(Nvfp4, TensorMaximumSurvivesExactly) {
  // With g = 2688/amax the block holding amax gets scale 448 and the element code 6, so the
  // largest magnitude dequantizes exactly (up to one rounding of g).
  std::vector<float> block(16, 0.1f);
  block[5] = -3.25f;
  float const g = nvfp4_global_scale(3.25f);
  std::uint8_t packed[8];
  std::uint8_t const scale = nvfp4_quantize_block(block.data(), g, packed);
  EXPECT_EQ(decode_e4m3(scale), 448.0f);
  float const back = nvfp4_element(packed, &scale, g, 5);
  EXPECT_NEAR(back, -3.25f, 3.25f * 1e-6f);
}

TEST(Nvfp4, ZeroBlockQuantizesToZero) {
  std::vector<float> block(16, 0.0f);
  std::uint8_t packed[8];
  std::uint8_t const scale = nvfp4_quantize_block(block.data(), 1.0f, packed);
  EXPECT_EQ(scale, 0);
  for (std::size_t i = 0; i < 16; ++i) EXPECT_EQ(nvfp4_element(packed, &scale, 1.0f, i), 0.0f);
}

TEST(Nvfp4, QuantizeDequantizeErrorWithinFormatBound) {
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> log_mag(-6.0f, 6.0f);
  constexpr std::size_t kBlocks = 20000;
  std::vector<float> x(kBlocks * 16);
  for (std::size_t b = 0; b < kBlocks; ++b) {
    float const block_magnitude = std::pow(10.0f, log_mag(rng) / 3.0f);
    for (std::size_t i = 0; i < 16; ++i) x[b * 16 + i] = normal(rng) * block_magnitude;
  }
  float amax = 0.0f;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  float const g = nvfp4_global_scale(amax);
  std::vector<std::uint8_t> packed(x.size() / 2), scales(kBlocks);
  for (std::size_t b = 0; b < kBlocks; ++b) {
    scales[b] = nvfp4_quantize_block(&x[b * 16], g, &packed[b * 8]);
  }
  double err2 = 0.0, ref2 = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    float const back = nvfp4_element(packed.data(), scales.data(), g, i);
    // e2m1's widest gap is 2 (between 4 and 6), so rounding moves a value at most 1 unit of
    // the block's dequantization multiplier; a block scale rounded down can saturate at 6,
    // costing at most 6 * 2^-4 more units.
    float const unit = nvfp4_dequant_multiplier(scales[i / 16], g);
    ASSERT_LE(std::fabs(back - x[i]), unit * 1.375f + 1e-30f) << "element " << i;
    err2 += double(back - x[i]) * double(back - x[i]);
    ref2 += double(x[i]) * double(x[i]);
  }
  // A Gaussian block quantized to e2m1 loses ~10% (relative L2); far worse means a bug.
  EXPECT_LT(std::sqrt(err2 / ref2), 0.2);
}

TEST(Traits, BitsAndBytes) {
  static_assert(FormatTraits<DataType::Nvfp4>::bits == 4);
  static_assert(FormatTraits<DataType::Nvfp4>::subbyte);
  static_assert(!FormatTraits<DataType::Bf16>::subbyte);
  EXPECT_EQ(payload_bytes(DataType::Nvfp4, 32), 16u);
  EXPECT_EQ(payload_bytes(DataType::Nvfp4, 33), 17u);
  EXPECT_EQ(payload_bytes(DataType::Fp8E5M2, 33), 33u);
  EXPECT_EQ(payload_bytes(DataType::Bf16, 3), 6u);
  EXPECT_EQ(nvfp4_scale_bytes(7168), 448u);
  EXPECT_STREQ(to_string(DataType::Fp8E5M2), "fp8e5m2");
}

}  // namespace
