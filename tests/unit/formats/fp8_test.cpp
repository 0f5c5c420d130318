#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "symmcomm/formats/bf16.hpp"
#include "symmcomm/formats/fp8.hpp"

namespace {

using symmcomm::Fp8Format;

std::uint8_t cuda_encode(float x, Fp8Format f) {
  return static_cast<std::uint8_t>(
      __nv_cvt_float_to_fp8(x, __NV_SATFINITE, f == Fp8Format::E4M3 ? __NV_E4M3 : __NV_E5M2));
}

float cuda_decode(std::uint8_t code, Fp8Format f) {
  if (f == Fp8Format::E4M3) {
    __nv_fp8_e4m3 v;
    v.__x = code;
    return static_cast<float>(v);
  }
  __nv_fp8_e5m2 v;
  v.__x = code;
  return static_cast<float>(v);
}

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

class Fp8Codec : public ::testing::TestWithParam<Fp8Format> {};

TEST_P(Fp8Codec, EveryCodeDecodesAsCuda) {
  Fp8Format const f = GetParam();
  for (unsigned code = 0; code < 256; ++code) {
    float const ours = symmcomm::decode_fp8(static_cast<std::uint8_t>(code), f);
    float const theirs = cuda_decode(static_cast<std::uint8_t>(code), f);
    if (std::isnan(theirs)) {
      EXPECT_TRUE(std::isnan(ours)) << "code " << code;
    } else {
      EXPECT_EQ(ours, theirs) << "code " << code;
      EXPECT_EQ(std::signbit(ours), std::signbit(theirs)) << "code " << code;
    }
  }
}

TEST_P(Fp8Codec, EdgeCasesEncodeAsCuda) {
  Fp8Format const f = GetParam();
  float const inf = std::numeric_limits<float>::infinity();
  float const max = symmcomm::fp8_max(f);
  std::vector<float> edges = {0.0f,
                              -0.0f,
                              inf,
                              -inf,
                              std::nanf(""),
                              -std::nanf(""),
                              max,
                              -max,
                              max * 1.03f,
                              max * 1.0625f,
                              max * 1.07f,
                              max * 1.1f,
                              1e-45f,
                              1e-10f,
                              1.953125e-3f,
                              9.765625e-4f,
                              0.0009765626f,
                              1.52587890625e-05f,
                              7.62939453125e-06f,
                              65504.0f,
                              61440.0f,
                              61439.996f,
                              464.0f,
                              464.00003f,
                              1.0f + 1.0f / 16,
                              1.0f + 3.0f / 16};
  for (float x : edges) {
    EXPECT_EQ(symmcomm::encode_fp8(x, f), cuda_encode(x, f)) << "x = " << x;
  }
}

TEST_P(Fp8Codec, MillionRandomFloatsEncodeAsCuda) {
  Fp8Format const f = GetParam();
  std::mt19937 rng(99);
  std::uniform_int_distribution<std::uint32_t> bits;
  std::uniform_real_distribution<float> exponent(-20.0f, 18.0f);
  std::size_t mismatches = 0;
  for (int i = 0; i < 1'000'000; ++i) {
    float x = (i % 2 == 0) ? from_bits(bits(rng)) : std::exp2(exponent(rng));
    if (i % 4 == 1) x = -x;
    if (symmcomm::encode_fp8(x, f) != cuda_encode(x, f)) {
      if (++mismatches < 10) ADD_FAILURE() << "x = " << x;
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST_P(Fp8Codec, ScaleFromAmax) {
  Fp8Format const f = GetParam();
  EXPECT_EQ(symmcomm::fp8_scale_from_amax(symmcomm::fp8_max(f) * 2.0f, f), 2.0f);
  EXPECT_EQ(symmcomm::fp8_scale_from_amax(0.0f, f), 1.0f);
  EXPECT_EQ(symmcomm::fp8_scale_from_amax(std::nanf(""), f), 1.0f);
  EXPECT_EQ(symmcomm::fp8_scale_from_amax(std::numeric_limits<float>::infinity(), f), 1.0f);
}

INSTANTIATE_TEST_SUITE_P(Formats, Fp8Codec, ::testing::Values(Fp8Format::E4M3, Fp8Format::E5M2),
                         [](const auto& p) {
                           return p.param == Fp8Format::E4M3 ? "E4M3" : "E5M2";
                         });

TEST(Fp8Block, ABlockMapsItsAbsoluteMaximumTo448AndKeepsItsScale) {
  std::vector<float> x(symmcomm::kFp8BlockSize);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 10.0f);
  for (float& v : x) v = normal(rng);
  x[17] = -896.0f;  // the block's amax: scale 2
  std::vector<std::uint8_t> codes(x.size());
  float const scale =
      symmcomm::fp8_quantize_block(x.data(), static_cast<int>(x.size()), codes.data());
  EXPECT_EQ(scale, 2.0f);
  EXPECT_EQ(codes[17], 0xfe);  // -448
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(codes[i], cuda_encode(x[i] * 0.5f, Fp8Format::E4M3)) << i;
    // Dequantized within half an e4m3 ulp (2^-4 relative) of the input, or below its
    // subnormal step.
    double const back = symmcomm::decode_e4m3(codes[i]) * scale;
    EXPECT_LE(std::abs(back - x[i]), std::max(std::abs(x[i]) / 16.0, scale * std::ldexp(1.0, -10)))
        << i;
  }
  std::vector<float> const zeros(symmcomm::kFp8BlockSize, 0.0f);
  EXPECT_EQ(symmcomm::fp8_quantize_block(zeros.data(), symmcomm::kFp8BlockSize, codes.data()),
            1.0f);
  for (std::uint8_t c : codes) EXPECT_EQ(c, 0);
}

TEST(Bf16, MillionRandomFloatsRoundAsCuda) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint32_t> bits;
  std::size_t mismatches = 0;
  for (int i = 0; i < 1'000'000; ++i) {
    float const x = from_bits(bits(rng));
    __nv_bfloat16_raw const raw = __float2bfloat16_rn(x);
    std::uint16_t const ours = symmcomm::float_to_bf16_bits(x);
    bool const both_nan =
        std::isnan(x) && ((ours & 0x7fff) > 0x7f80) && ((raw.x & 0x7fff) > 0x7f80);
    if (ours != raw.x && !both_nan) {
      if (++mismatches < 10) ADD_FAILURE() << "x = " << x;
    }
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(symmcomm::bf16_bits_to_float(symmcomm::float_to_bf16_bits(1.5f)), 1.5f);
}

}  // namespace
