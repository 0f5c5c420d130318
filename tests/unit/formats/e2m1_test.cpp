#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "formats/e2m1_bits.hpp"
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

// The quantize kernels' magnitude form (one fused multiply-add on the e2m1 grid, integer
// arithmetic for the code) against the reference encoder: every float within 2^16 ulps of each
// grid point and midpoint (the only places where rounding can go wrong), the special values
// but NaN, and a million random floats. (All 2^32 - 2^24 non-NaN floats were checked once on
// the host as well: 0 mismatches.)
TEST(E2m1, MagnitudeFormMatchesEncoderEverywhereButNaN) {
  using symmcomm::detail::e2m1_magnitude_biased;
  using symmcomm::detail::kE2m1MagnitudeBias;
  std::size_t checked = 0, mismatches = 0;
  auto check = [&](float y) {
    if (std::isnan(y)) return;
    ++checked;
    std::uint32_t const got = e2m1_magnitude_biased(y) - kE2m1MagnitudeBias;
    std::uint32_t const want = symmcomm::encode_e2m1(y) & 7u;
    if (got != want && ++mismatches < 10) ADD_FAILURE() << "y = " << y << " got " << got;
  };
  for (float m : {0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f,
                  5.0f, 6.0f, 6.5f, 7.0f, 8.0f}) {
    std::uint32_t const b = symmcomm::bits::float_bits(m);
    for (std::int64_t d = -65536; d <= 65536; ++d) {
      std::int64_t const u = static_cast<std::int64_t>(b) + d;
      if (u < 0) continue;
      float const y = from_bits(static_cast<std::uint32_t>(u));
      check(y);
      check(-y);
    }
  }
  float const inf = std::numeric_limits<float>::infinity();
  for (float y : {inf, -inf, std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::denorm_min(), -0.0f, 1e30f, -1e-30f}) {
    check(y);
  }
  std::mt19937 rng(99);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (int i = 0; i < 1'000'000; ++i) check(from_bits(bits(rng)));
  EXPECT_GT(checked, 4'000'000u);
  EXPECT_EQ(mismatches, 0u);
}

// Eight magnitudes packed with their modular bias, and the signs taken straight from bf16 input
// words, give the reference word for finite inputs times a finite non-negative multiplier —
// the condition under which the bf16 quantize kernels use this form.
TEST(E2m1, PackedMagnitudesWithBf16SignsEqualTheEncoderWord) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<std::uint32_t> bits;
  std::uniform_real_distribution<float> log_mult(-8.0f, 8.0f);
  for (int trial = 0; trial < 200'000; ++trial) {
    std::uint32_t w[4];
    float y[8];
    float const mult = trial % 17 == 0 ? 0.0f : std::exp2(log_mult(rng));
    std::uint32_t want = 0;
    for (int i = 0; i < 4; ++i) {
      w[i] = bits(rng);
      for (int half = 0; half < 2; ++half) {
        std::uint32_t h = (w[i] >> (16 * half)) & 0xffffu;
        if ((h & 0x7f80u) == 0x7f80u) h &= 0xbfffu;  // make infinities and NaNs finite
        if (trial % 3 == 0) h = (h & 0x8000u) | (0x3f00u + (h & 0xffu));  // near 0.5 .. 2
        w[i] = (w[i] & ~(0xffffu << (16 * half))) | (h << (16 * half));
        float const x = from_bits(h << 16);
        int const j = 2 * i + half;
        y[j] = x * mult;
        want |= static_cast<std::uint32_t>(symmcomm::encode_e2m1(y[j])) << (4 * j);
      }
    }
    std::uint32_t const got =
        symmcomm::detail::e2m1x8_magnitudes(y) | symmcomm::detail::bf16x8_signs_as_e2m1(w);
    ASSERT_EQ(got, want) << "trial " << trial << " mult " << mult;
  }
}

TEST(E2m1, Bf16SignsLandOnEveryCodesSignBitAlone) {
  for (int j = 0; j < 8; ++j) {
    std::uint32_t w[4] = {0x7fff7fffu, 0x7fff7fffu, 0x7fff7fffu, 0x7fff7fffu};
    w[j / 2] |= 0x8000u << (16 * (j % 2));
    EXPECT_EQ(symmcomm::detail::bf16x8_signs_as_e2m1(w), 0x8u << (4 * j)) << "element " << j;
  }
  std::uint32_t const all[4] = {0x80008000u, 0x80008000u, 0x80008000u, 0x80008000u};
  EXPECT_EQ(symmcomm::detail::bf16x8_signs_as_e2m1(all), 0x88888888u);
}

TEST(E2m1, BytePermSelectsBytesAsCuda) {
  EXPECT_EQ(symmcomm::detail::byte_perm(0x33221100u, 0x77665544u, 0x5173u), 0x55117733u);
  EXPECT_EQ(symmcomm::detail::byte_perm(0x33221100u, 0x77665544u, 0x3210u), 0x33221100u);
  EXPECT_EQ(symmcomm::detail::byte_perm(0x33221100u, 0x77665544u, 0x7654u), 0x77665544u);
}

}  // namespace
