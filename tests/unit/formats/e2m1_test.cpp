#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "symmcomm/formats/e2m1.hpp"

namespace {

std::uint8_t cuda_encode(float x) {
  return static_cast<std::uint8_t>(__nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest));
}

float cuda_decode(std::uint8_t code) {
  __nv_fp4_e2m1 v;
  v.__x = code;
  return static_cast<float>(v);
}

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

TEST(E2m1, EveryCodeDecodesAsCuda) {
  for (unsigned code = 0; code < 16; ++code) {
    float const ours = symmcomm::decode_e2m1(static_cast<std::uint8_t>(code));
    float const theirs = cuda_decode(static_cast<std::uint8_t>(code));
    EXPECT_EQ(std::signbit(ours), std::signbit(theirs)) << "code " << code;
    EXPECT_EQ(ours, theirs) << "code " << code;
  }
}

TEST(E2m1, EdgeCasesEncodeAsCuda) {
  float const inf = std::numeric_limits<float>::infinity();
  std::vector<float> edges = {0.0f,          -0.0f,          0.25f,      -0.25f,  0.2500001f,
                              0.75f,         1.25f,          1.75f,      2.5f,    3.5f,
                              5.0f,          -5.0f,          5.0000005f, 6.0f,    6.5f,
                              7.0f,          1e30f,          -1e30f,     inf,     -inf,
                              std::nanf(""), -std::nanf(""), 1e-45f,     -1e-45f, 1.17549435e-38f,
                              0.7499999f,    4.9999995f};
  for (float x : edges) {
    EXPECT_EQ(symmcomm::encode_e2m1(x), cuda_encode(x)) << "x = " << x;
  }
  EXPECT_EQ(symmcomm::encode_e2m1(std::nanf("")), 0x7);  // NaN -> +6, as CUDA
  EXPECT_EQ(symmcomm::encode_e2m1(-inf), 0xF);           // -inf saturates to -6
}

TEST(E2m1, MillionRandomFloatsEncodeAsCuda) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> small(-8.0f, 8.0f);
  std::uniform_int_distribution<std::uint32_t> bits;
  std::size_t mismatches = 0;
  for (int i = 0; i < 1'000'000; ++i) {
    float const x = (i % 2 == 0) ? small(rng) : from_bits(bits(rng));
    if (symmcomm::encode_e2m1(x) != cuda_encode(x)) {
      if (++mismatches < 10) ADD_FAILURE() << "x = " << x;
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(E2m1, NeighboursOfEveryMidpointEncodeAsCuda) {
  for (float m : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f, 6.5f, 7.0f}) {
    for (float x : {std::nextafter(m, 0.0f), m, std::nextafter(m, 100.0f)}) {
      EXPECT_EQ(symmcomm::encode_e2m1(x), cuda_encode(x)) << "x = " << x;
      EXPECT_EQ(symmcomm::encode_e2m1(-x), cuda_encode(-x)) << "x = " << -x;
    }
  }
}

TEST(E2m1, RoundTripOfRepresentableValues) {
  for (unsigned code = 0; code < 16; ++code) {
    float const v = symmcomm::decode_e2m1(static_cast<std::uint8_t>(code));
    EXPECT_EQ(symmcomm::encode_e2m1(v), code) << "code " << code;
  }
}

TEST(E2m1, PackingPutsFirstElementInLowNibbleAsCuda) {
  std::uint8_t const ours =
      symmcomm::pack_e2m1x2(symmcomm::encode_e2m1(1.0f), symmcomm::encode_e2m1(-6.0f));
  auto const theirs =
      __nv_cvt_float2_to_fp4x2(make_float2(1.0f, -6.0f), __NV_E2M1, cudaRoundNearest);
  EXPECT_EQ(ours, static_cast<std::uint8_t>(theirs));
}

// The GPU reduce kernels decode eight codes at once through fp16 bit patterns: every code in
// every position, with random neighbours (which must not leak in), gives decode_e2m1 * 2^-14
// with its sign (CUDA's host fp16 conversion reads the halves).
TEST(E2m1, EightCodesAsHalfPairsAreExactInEveryPosition) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 4096; ++trial) {
    for (unsigned pos = 0; pos < 8; ++pos) {
      for (unsigned code = 0; code < 16; ++code) {
        std::uint32_t const w =
            (static_cast<std::uint32_t>(rng()) & ~(0xfu << (4 * pos))) | (code << (4 * pos));
        std::uint32_t h[4];
        symmcomm::detail::e2m1x8_to_half2_bits(w, h);
        std::uint32_t const pair = h[pos % 4];
        auto const bits = static_cast<unsigned short>(pos < 4 ? pair : pair >> 16);
        __half_raw raw;
        raw.x = bits;
        float const got = __half2float(__half(raw));
        float const want = symmcomm::decode_e2m1(static_cast<std::uint8_t>(code)) / 16384.0f;
        ASSERT_EQ(got, want) << "word " << std::hex << w << " code " << code << " at " << pos;
        ASSERT_EQ(std::signbit(got), std::signbit(want)) << "word " << std::hex << w;
      }
    }
  }
}

}  // namespace
