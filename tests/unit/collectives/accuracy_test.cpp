// Accuracy of quantized reduce-scatter (CPU, the kernels' arithmetic): fp32 accumulation with
// one rounding at the end, against an fp64 reference, beside a per-step FP8 ring reduction
// (what a reduction in the low-precision type along a ring gives) and beside one quantization
// of the exact sum.

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <vector>

#include "support/reference.hpp"
#include "symmcomm/formats/bf16.hpp"

namespace {

using namespace symmcomm;
using namespace symmcomm::test;

constexpr int kRanks = 8;
constexpr std::size_t kCount = 1 << 16;

std::vector<std::vector<float>> inputs(std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::vector<float>> x(kRanks, std::vector<float>(kCount));
  for (auto& r : x) {
    for (auto& v : r) v = normal(rng);
  }
  return x;
}

std::vector<float> to_bf16(const std::vector<float>& v) {
  std::vector<float> out;
  for (float f : v) out.push_back(bf16_bits_to_float(float_to_bf16_bits(f)));
  return out;
}

// A ring that sums FP8 values and rounds to FP8 at every step, with one shared scale (NCCL's
// fp8 reductions have no per-rank scales). Each rank's original input is quantized once, with
// that scale, as it would be handed to NCCL.
std::vector<double> fp8_ring(const std::vector<std::vector<float>>& x, Fp8Format f, float scale) {
  std::vector<double> out(kCount);
  float const inv = 1.0f / scale;
  for (std::size_t i = 0; i < kCount; ++i) {
    float partial = decode_fp8(encode_fp8(x[0][i] * inv, f), f);
    for (int r = 1; r < kRanks; ++r) {
      float const next = decode_fp8(encode_fp8(x[static_cast<std::size_t>(r)][i] * inv, f), f);
      partial = decode_fp8(encode_fp8(partial + next, f), f);
    }
    out[i] = static_cast<double>(partial) * scale;
  }
  return out;
}

// The fp64 sum of the original (unquantized) inputs.
std::vector<double> exact_float_sum(const std::vector<std::vector<float>>& x) {
  std::vector<double> s(kCount, 0.0);
  for (const auto& r : x) {
    for (std::size_t i = 0; i < kCount; ++i) s[i] += r[i];
  }
  return s;
}

// Errors (relative L2 vs fp64) of every output form of a quantized reduce-scatter whose inputs
// are `q`; `quantize` re-quantizes a float vector in the input's format.
struct Errors {
  double fp32, bf16, requantized, one_quantization_of_exact_sum;
};

template <class Q, class Quantize>
Errors errors_of(const std::vector<Q>& q, Quantize quantize) {
  auto const exact = exact_sum(q, 0, kCount);
  auto const ours32 = reduce_like_kernel(q, 0, kCount);
  auto const ours_q = quantize(ours32);
  auto const once = quantize(std::vector<float>(exact.begin(), exact.end()));
  std::vector<double> ours_requant(kCount), exact_requant(kCount);
  for (std::size_t i = 0; i < kCount; ++i) {
    ours_requant[i] = ours_q.value(i);
    exact_requant[i] = once.value(i);
  }
  return Errors{relative_error(ours32, exact), relative_error(to_bf16(ours32), exact),
                relative_error(ours_requant, exact), relative_error(exact_requant, exact)};
}

void expect_one_rounding(const Errors& e) {
  EXPECT_LT(e.fp32, 1e-6);
  EXPECT_LT(e.bf16, 4e-3);
  EXPECT_LE(e.requantized, e.one_quantization_of_exact_sum * 1.001 + 1e-9);
}

TEST(Accuracy, Fp8ReduceScatterBeatsAPerStepRingAndMatchesOneRounding) {
  for (Fp8Format f : {Fp8Format::E4M3, Fp8Format::E5M2}) {
    auto const x = inputs(11);
    std::vector<HostFp8> q;
    for (const auto& r : x) q.push_back(HostFp8::quantize(r, f));
    Errors const e =
        errors_of(q, [f](const std::vector<float>& v) { return HostFp8::quantize(v, f); });
    // Against the sum of the original inputs, both starting from one quantization of each
    // input: symmcomm (per-rank scales, fp32 sum, re-quantized once) and the ring (shared
    // scale, rounded at every step).
    auto const truth = exact_float_sum(x);
    auto const ours_q = HostFp8::quantize(reduce_like_kernel(q, 0, kCount), f);
    std::vector<double> ours(kCount);
    for (std::size_t i = 0; i < kCount; ++i) ours[i] = ours_q.value(i);
    double const ours_error = relative_error(ours, truth);
    double const ring = relative_error(fp8_ring(x, f, ours_q.scale), truth);
    std::printf(
        "FP8 %s, %d ranks: fp32 out %.2e, bf16 out %.2e, re-quantized %.3e, one "
        "quantization of the exact sum %.3e; against the original inputs: symmcomm "
        "re-quantized %.3e, per-step fp8 ring %.3e (%.2fx)\n",
        f == Fp8Format::E4M3 ? "e4m3" : "e5m2", kRanks, e.fp32, e.bf16, e.requantized,
        e.one_quantization_of_exact_sum, ours_error, ring, ring / ours_error);
    expect_one_rounding(e);
    EXPECT_LT(ours_error, ring);
  }
}

TEST(Accuracy, Nvfp4ReduceScatterIsNoWorseThanOneQuantizationOfTheExactSum) {
  std::vector<HostNvfp4> q;
  for (const auto& r : inputs(12)) q.push_back(HostNvfp4::quantize(r));
  Errors const e = errors_of(q, [](const std::vector<float>& v) { return HostNvfp4::quantize(v); });
  std::printf(
      "NVFP4, %d ranks: fp32 out %.2e, bf16 out %.2e, re-quantized %.3e, one quantization "
      "of the exact sum %.3e\n",
      kRanks, e.fp32, e.bf16, e.requantized, e.one_quantization_of_exact_sum);
  expect_one_rounding(e);
}

}  // namespace
