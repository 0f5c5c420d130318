// The accuracy of NVFP4 MoE dispatch under each way of giving an expert's rows one global
// scale (a grouped GEMM applies one alpha per expert, and its rows come from every rank),
// against the BF16 layer: the relative error of an expert's output over every rank's tokens.
//
//   static    one scale per layer from a calibration batch, the same on every rank (what
//             MoeGroup assumes and checks: kMoeErrorGlobalScale);
//   dynamic   each rank's own scale from its tokens' amax: the best NVFP4 can do per rank, but
//             not one alpha per expert (the reference point the others are measured against);
//   rescaled  each rank's own scale, block scales re-encoded on arrival for the group's one
//             alpha (the smallest rank scale, so no block scale overflows): a second e4m3
//             rounding of every block scale;
//   static/2  the static scheme calibrated at half the live amax (a calibration that missed the
//             largest activations): blocks past the calibrated range clip.
// And the FP8 wire beside them (MoeConfig::wire = Fp8E4M3: e4m3 with a scale per 128 elements,
// no global scale, twice NVFP4's bytes), the reference point for what NVFP4 costs in accuracy.
//
// The tokens: bf16 rows ~ N(0, sigma_r^2) with sigma growing with the rank (ranks see different
// batches) and a few outlier channels (20x), as LLM activations have; the expert: one [H, D]
// matrix ~ N(0, 1/H). The codecs are symmcomm's host functions, which its kernels match bit for
// bit (tests/gpu/codecs_test.cpp), so the figures are those of the GPU path. Output: one table
// row per scheme, the relative Frobenius error of x_q W against x W, and (with --check) exit 1
// unless static <= 1.25 x dynamic (the claim docs/moe.md makes).
// Usage: symmcomm_moe_accuracy [--hidden 7168 (a multiple of 128)] [--out 256] [--tokens 64]
//                              [--ranks 8] [--check]

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "symmcomm/formats/bf16.hpp"
#include "symmcomm/formats/fp8.hpp"
#include "symmcomm/formats/nvfp4.hpp"

namespace {

using symmcomm::kNvfp4BlockBytes;
using symmcomm::kNvfp4BlockSize;

struct Shape {
  int hidden = 7168, out = 256, tokens = 64, ranks = 8;
  bool check = false;
};

// One rank's tokens [tokens][hidden] as floats exactly representable in bf16.
std::vector<float> tokens_of(const Shape& s, int rank, std::uint32_t seed) {
  std::mt19937 rng(seed * 131 + static_cast<unsigned>(rank));
  float const sigma = 0.5f + 0.25f * static_cast<float>(rank);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> x(static_cast<std::size_t>(s.tokens) * s.hidden);
  for (std::size_t i = 0; i < x.size(); ++i) {
    float v = normal(rng);
    if ((i % static_cast<std::size_t>(s.hidden)) % 997 == 0) v *= 20.0f;  // outlier channels
    x[i] = symmcomm::bf16_bits_to_float(symmcomm::float_to_bf16_bits(v));
  }
  return x;
}

float amax_of(const std::vector<float>& x) {
  float m = 0.0f;
  for (float v : x) m = std::fmax(m, std::fabs(v));
  return m;
}

// x quantized to NVFP4 with global scale `g` (data and block scales).
struct Quantized {
  std::vector<std::uint8_t> data, scales;
  float global_scale = 1.0f;
};

Quantized quantize(const std::vector<float>& x, float g) {
  Quantized q;
  q.global_scale = g;
  q.data.resize(x.size() / 2);
  q.scales.resize(x.size() / kNvfp4BlockSize);
  for (std::size_t b = 0; b < q.scales.size(); ++b) {
    q.scales[b] =
        symmcomm::nvfp4_quantize_block(&x[b * kNvfp4BlockSize], g, &q.data[b * kNvfp4BlockBytes]);
  }
  return q;
}

// The block scales re-encoded for global scale `to` (dequantizing with `to` gives what `from`
// gave, up to the second e4m3 rounding).
void rescale(Quantized& q, float to) {
  for (auto& code : q.scales) {
    code = symmcomm::encode_e4m3(symmcomm::decode_e4m3(code) * to / q.global_scale);
  }
  q.global_scale = to;
}

// x through the FP8 wire: each 128-element block quantized as the dispatch does
// (fp8_quantize_block), then dequantized.
std::vector<float> through_fp8(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  std::vector<std::uint8_t> codes(symmcomm::kFp8BlockSize);
  for (std::size_t b = 0; b < x.size() / symmcomm::kFp8BlockSize; ++b) {
    const float* in = &x[b * symmcomm::kFp8BlockSize];
    float const scale = symmcomm::fp8_quantize_block(in, symmcomm::kFp8BlockSize, codes.data());
    for (int i = 0; i < symmcomm::kFp8BlockSize; ++i) {
      y[b * symmcomm::kFp8BlockSize + static_cast<std::size_t>(i)] =
          symmcomm::decode_e4m3(codes[static_cast<std::size_t>(i)]) * scale;
    }
  }
  return y;
}

std::vector<float> dequantize(const Quantized& q) {
  std::vector<float> x(q.data.size() * 2);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = symmcomm::nvfp4_element(q.data.data(), q.scales.data(), q.global_scale, i);
  }
  return x;
}

// rows x W for W [hidden][out] (double accumulation).
std::vector<double> matmul(const std::vector<float>& x, const std::vector<float>& w,
                           const Shape& s) {
  std::size_t const rows = x.size() / static_cast<std::size_t>(s.hidden);
  std::vector<double> y(rows * static_cast<std::size_t>(s.out), 0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = &x[r * static_cast<std::size_t>(s.hidden)];
    double* yr = &y[r * static_cast<std::size_t>(s.out)];
    for (int k = 0; k < s.hidden; ++k) {
      double const a = xr[k];
      if (a == 0.0) continue;
      const float* wk = &w[static_cast<std::size_t>(k) * s.out];
      for (int j = 0; j < s.out; ++j) yr[j] += a * wk[j];
    }
  }
  return y;
}

Shape parse(int argc, char** argv) {
  Shape s;
  for (int i = 1; i < argc; ++i) {
    std::string const a = argv[i];
    auto value = [&](int& field) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "symmcomm_moe_accuracy: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      field = std::atoi(argv[++i]);
      if (field <= 0) {
        std::fprintf(stderr, "symmcomm_moe_accuracy: %s %s must be positive\n", a.c_str(), argv[i]);
        std::exit(2);
      }
    };
    if (a == "--hidden") {
      value(s.hidden);
    } else if (a == "--out") {
      value(s.out);
    } else if (a == "--tokens") {
      value(s.tokens);
    } else if (a == "--ranks") {
      value(s.ranks);
    } else if (a == "--check") {
      s.check = true;
    } else {
      std::fprintf(stderr, "symmcomm_moe_accuracy: unknown argument %s (see the file comment)\n",
                   a.c_str());
      std::exit(2);
    }
  }
  if (s.hidden % symmcomm::kFp8BlockSize != 0) {
    std::fprintf(stderr, "symmcomm_moe_accuracy: --hidden %d is not a multiple of 128\n", s.hidden);
    std::exit(2);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  Shape const s = parse(argc, argv);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(static_cast<float>(s.hidden)));
  std::vector<float> w(static_cast<std::size_t>(s.hidden) * s.out);
  for (float& v : w) v = normal(rng);
  // The static scale: from a calibration batch of every rank (other tokens than the live ones).
  float calibration_amax = 0.0f;
  for (int r = 0; r < s.ranks; ++r)
    calibration_amax = std::fmax(calibration_amax, amax_of(tokens_of(s, r, 1)));
  float const g_static = symmcomm::nvfp4_global_scale(calibration_amax);
  std::vector<std::vector<float>> live;
  float g_min = 0.0f;
  for (int r = 0; r < s.ranks; ++r) {
    live.push_back(tokens_of(s, r, 2));
    float const g = symmcomm::nvfp4_global_scale(amax_of(live.back()));
    g_min = r == 0 ? g : std::fmin(g_min, g);
  }
  const char* const names[] = {"static", "dynamic", "rescaled", "static/2"};
  constexpr int kSchemes = 4;
  double err[kSchemes] = {};
  double ref_norm = 0.0, err_fp8 = 0.0;
  for (int r = 0; r < s.ranks; ++r) {
    std::vector<double> const ref = matmul(live[static_cast<std::size_t>(r)], w, s);
    for (double v : ref) ref_norm += v * v;
    float const g_own = symmcomm::nvfp4_global_scale(amax_of(live[static_cast<std::size_t>(r)]));
    const std::vector<float>& x = live[static_cast<std::size_t>(r)];
    Quantized q[kSchemes] = {quantize(x, g_static), quantize(x, g_own), quantize(x, g_own),
                             quantize(x, 2.0f * g_static)};
    rescale(q[2], g_min);
    for (int k = 0; k < kSchemes; ++k) {
      std::vector<double> const y = matmul(dequantize(q[k]), w, s);
      for (std::size_t i = 0; i < y.size(); ++i) err[k] += (y[i] - ref[i]) * (y[i] - ref[i]);
    }
    std::vector<double> const y8 = matmul(through_fp8(x), w, s);
    for (std::size_t i = 0; i < y8.size(); ++i) err_fp8 += (y8[i] - ref[i]) * (y8[i] - ref[i]);
  }
  std::printf(
      "# NVFP4 MoE dispatch accuracy against BF16: %d ranks x %d tokens, hidden %d, "
      "expert output columns %d; calibration amax %.3f (static scale %.4g)\n",
      s.ranks, s.tokens, s.hidden, s.out, calibration_amax, g_static);
  std::printf("| scheme | relative error of the expert output | vs dynamic |\n|---|---|---|\n");
  for (int k = 0; k < kSchemes; ++k) {
    std::printf("| %s | %.5f | %.3f |\n", names[k], std::sqrt(err[k] / ref_norm),
                std::sqrt(err[k] / err[1]));
  }
  std::printf("| fp8 wire (e4m3, a scale per 128) | %.5f | %.3f |\n", std::sqrt(err_fp8 / ref_norm),
              std::sqrt(err_fp8 / err[1]));
  if (s.check && std::sqrt(err[0] / err[1]) > 1.25) {
    std::fprintf(stderr,
                 "symmcomm_moe_accuracy: the static scale's error is %.3f x the "
                 "dynamic one's (more than 1.25)\n",
                 std::sqrt(err[0] / err[1]));
    return 1;
  }
  return 0;
}
