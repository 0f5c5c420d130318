// Codec kernels vs the CPU reference (the same host/device arithmetic), bit for bit, with
// poisoned outputs so that an element the kernel never wrote shows up as a mismatch.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "formats/codecs_internal.hpp"
#include "support/gpu_test.hpp"
#include "symmcomm/formats/codecs.hpp"

namespace {

using namespace symmcomm;
using symmcomm::test::DeviceArray;

std::vector<std::uint16_t> random_bf16(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> log_mag(-4.0f, 4.0f);
  std::vector<std::uint16_t> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    float const magnitude = (i / 16) % 7 == 0 ? std::exp2(log_mag(rng) * 4.0f) : 1.0f;
    v[i] = float_to_bf16_bits(normal(rng) * magnitude);
  }
  return v;
}

// Adds NaN, +-inf and -0 at a few places (the encoders' special cases must agree too).
std::vector<std::uint16_t> with_specials(std::vector<std::uint16_t> v) {
  std::uint16_t const specials[] = {0x7fc0, 0xffc0, 0x7f81, 0x7f80, 0xff80, 0x8000};
  for (std::size_t i = 0, k = 0; i < v.size(); i += 997, ++k) v[i] = specials[k % 6];
  return v;
}

// Absolute maximum ignoring NaN (as the kernels' fmaxf does; std::fmax would let a signalling
// NaN reset the running maximum).
float host_amax(const std::vector<std::uint16_t>& x) {
  float m = 0.0f;
  for (auto b : x) {
    float const a = std::fabs(bf16_bits_to_float(b));
    if (a > m) m = a;
  }
  return m;
}

struct Nvfp4Device {
  explicit Nvfp4Device(std::size_t n) : data(n / 2), scales(n / 16), global(1), count(n) {}
  Nvfp4View view() { return Nvfp4View{data.get(), scales.get(), global.get(), count}; }
  DeviceArray<std::uint8_t> data, scales;
  DeviceArray<float> global;
  std::size_t count;
};

// Both dequantize outputs of `q`, downloaded: bf16 bits and fp32.
struct Dequantized {
  std::vector<std::uint16_t> bf16_bits;
  std::vector<float> f32;
};
Dequantized dequantize_both(Nvfp4Device& q) {
  DeviceArray<std::uint16_t> out_bf16(q.count);
  DeviceArray<float> out_f32(q.count);
  dequantize_nvfp4(q.view(), reinterpret_cast<bf16*>(out_bf16.get()), nullptr);
  dequantize_nvfp4(q.view(), out_f32.get(), nullptr);
  return {out_bf16.download(), out_f32.download()};
}

class Nvfp4Kernels : public ::testing::TestWithParam<std::size_t> {};

TEST_P(Nvfp4Kernels, QuantizeAndDequantizeMatchCpuBitForBit) {
  SYMMCOMM_REQUIRE_GPU();
  std::size_t const n = GetParam();
  // Specials and computed scales on separate inputs: one +inf makes the computed global scale
  // that of an infinite amax, which would hide the multi-CTA amax reduction.
  for (bool specials : {false, true}) {
    auto const plain = random_bf16(n, static_cast<std::uint32_t>(n));
    auto const x = specials ? with_specials(plain) : plain;
    DeviceArray<std::uint16_t> src(n);
    src.upload(x);
    // Given; Compute in separate launches; Compute in one cooperative launch.
    for (int shape = 0; shape < 3; ++shape) {
      ScaleMode const mode = shape == 0 ? ScaleMode::Given : ScaleMode::Compute;
      auto const launch =
          shape == 2 ? detail::QuantizeLaunch::One : detail::QuantizeLaunch::Separate;
      SCOPED_TRACE(std::string(specials ? "with NaN/inf/-0" : "finite") + ", " +
                   (shape == 0   ? "given scale"
                    : shape == 1 ? "computed scale, separate launches"
                                 : "computed scale, one launch"));
      Nvfp4Device q(n);
      float const given = 123.5f;
      // Compute must not depend on what the slot held: a NaN there first.
      q.global.upload({mode == ScaleMode::Given ? given : std::nanf("")});
      detail::quantize_nvfp4(reinterpret_cast<const bf16*>(src.get()), q.view(), mode, launch,
                             nullptr);
      SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
      float const g = mode == ScaleMode::Given ? given : nvfp4_global_scale(host_amax(x));
      ASSERT_EQ(q.global.download()[0], g);
      if (mode == ScaleMode::Compute && !specials) {
        ASSERT_NE(g, nvfp4_global_scale(std::numeric_limits<float>::infinity()))
            << "a finite input must give a computed, finite-amax scale";
      }

      std::vector<std::uint8_t> ref_data(n / 2), ref_scales(n / 16);
      std::vector<float> block(16);
      for (std::size_t b = 0; b < n / 16; ++b) {
        for (int i = 0; i < 16; ++i) block[i] = bf16_bits_to_float(x[b * 16 + i]);
        ref_scales[b] = nvfp4_quantize_block(block.data(), g, &ref_data[b * 8]);
      }
      auto const got_data = q.data.download();
      auto const got_scales = q.scales.download();
      ASSERT_EQ(got_scales, ref_scales);
      ASSERT_EQ(got_data, ref_data);

      auto const [got_bf16, got_f32] = dequantize_both(q);
      for (std::size_t i = 0; i < n; ++i) {
        float const ref = nvfp4_element(ref_data.data(), ref_scales.data(), g, i);
        ASSERT_EQ(got_f32[i], ref) << "element " << i;
        ASSERT_EQ(got_bf16[i], float_to_bf16_bits(ref)) << "element " << i;
      }
    }
  }
}

// The one-launch computed-scale quantize captured in a CUDA graph (engines replay decode steps)
// and replayed on new inputs: each replay's bytes equal the separate launches' on that input.
TEST(CodecKernels, OneLaunchComputedScaleQuantizeReplaysFromAGraph) {
  SYMMCOMM_REQUIRE_GPU();
  std::size_t const n = 7168 * 64;
  DeviceArray<std::uint16_t> src(n);
  Nvfp4Device graph_out(n), reference(n);
  cudaStream_t stream = nullptr;
  SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  detail::quantize_nvfp4(reinterpret_cast<const bf16*>(src.get()), graph_out.view(),
                         ScaleMode::Compute, detail::QuantizeLaunch::One, stream);
  SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  SYMMCOMM_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
  for (std::uint32_t round = 0; round < 3; ++round) {
    SCOPED_TRACE("replay " + std::to_string(round));
    auto const x = random_bf16(n, 1000 + round);
    src.upload(x, stream);  // ordered with the stream that reads it
    SYMMCOMM_CUDA_TRY(cudaGraphLaunch(exec, stream));
    detail::quantize_nvfp4(reinterpret_cast<const bf16*>(src.get()), reference.view(),
                           ScaleMode::Compute, detail::QuantizeLaunch::Separate, stream);
    SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(stream));
    ASSERT_EQ(graph_out.global.download(), reference.global.download());
    ASSERT_EQ(graph_out.global.download()[0], nvfp4_global_scale(host_amax(x)));
    ASSERT_EQ(graph_out.scales.download(), reference.scales.download());
    ASSERT_EQ(graph_out.data.download(), reference.data.download());
  }
  SYMMCOMM_CUDA_TRY(cudaGraphExecDestroy(exec));
  SYMMCOMM_CUDA_TRY(cudaGraphDestroy(graph));
  SYMMCOMM_CUDA_TRY(cudaStreamDestroy(stream));
}

// The scale alone (what the fused quantize + gather computes first), one cooperative launch vs
// the separate launches: the same float for NVFP4 and both FP8 formats, eager and replayed from
// a graph, across sizes on both sides of kOneLaunchMaxElements.
TEST(CodecKernels, OneLaunchScaleEqualsSeparateLaunchesAndTheHost) {
  SYMMCOMM_REQUIRE_GPU();
  cudaStream_t stream = nullptr;
  SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  DeviceArray<float> one(1), separate(1), replayed(1);
  for (std::size_t n : {std::size_t{8}, std::size_t{7168}, std::size_t{7168 * 64},
                        detail::kOneLaunchMaxElements + 8}) {
    DeviceArray<std::uint16_t> src(n);
    auto const* in = reinterpret_cast<const bf16*>(src.get());
    for (DataType type : {DataType::Nvfp4, DataType::Fp8E4M3, DataType::Fp8E5M2}) {
      SCOPED_TRACE(std::to_string(n) + " elements, type " + std::to_string(static_cast<int>(type)));
      cudaGraph_t graph = nullptr;
      SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      detail::scale_from_amax(in, n, replayed.get(), type, detail::QuantizeLaunch::One, stream);
      SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(stream, &graph));
      cudaGraphExec_t exec = nullptr;
      SYMMCOMM_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
      for (std::uint32_t round = 0; round < 2; ++round) {
        auto const x = random_bf16(n, 77 + round);
        src.upload(x, stream);  // ordered with the stream that reads it
        detail::scale_from_amax(in, n, one.get(), type, detail::QuantizeLaunch::One, stream);
        detail::scale_from_amax(in, n, separate.get(), type, detail::QuantizeLaunch::Separate,
                                stream);
        SYMMCOMM_CUDA_TRY(cudaGraphLaunch(exec, stream));
        SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(stream));
        float const want = type == DataType::Nvfp4
                               ? nvfp4_global_scale(host_amax(x))
                               : fp8_scale_from_amax(host_amax(x), fp8_format_of(type));
        ASSERT_EQ(separate.download()[0], want);
        ASSERT_EQ(one.download()[0], want);
        ASSERT_EQ(replayed.download()[0], want);
      }
      SYMMCOMM_CUDA_TRY(cudaGraphExecDestroy(exec));
      SYMMCOMM_CUDA_TRY(cudaGraphDestroy(graph));
    }
  }
  SYMMCOMM_CUDA_TRY(cudaStreamDestroy(stream));
}

INSTANTIATE_TEST_SUITE_P(Sizes, Nvfp4Kernels,
                         ::testing::Values(16, 16 * 3, 7168, 16 * 100003, std::size_t{1} << 24));

class Fp8Kernels : public ::testing::TestWithParam<Fp8Format> {};

TEST_P(Fp8Kernels, QuantizeAndDequantizeMatchCpuBitForBit) {
  SYMMCOMM_REQUIRE_GPU();
  Fp8Format const f = GetParam();
  for (std::size_t n : {std::size_t{8}, std::size_t{7168 * 3}, std::size_t{8 * 1000003}}) {
    // Finite input (computed scales from a real amax), then NaN/+-inf/-0 mixed in.
    for (bool specials : {false, true}) {
      auto x = specials ? with_specials(random_bf16(n, 5)) : random_bf16(n, 5);
      DeviceArray<std::uint16_t> src(n);
      src.upload(x);
      for (ScaleMode mode : {ScaleMode::Given, ScaleMode::Compute}) {
        SCOPED_TRACE(std::to_string(n) + (specials ? " with NaN/inf/-0" : " finite") +
                     (mode == ScaleMode::Given ? ", given scale" : ", computed scale"));
        DeviceArray<std::uint8_t> codes(n);
        DeviceArray<float> scale(1);
        // A small given scale pushes many values past the format's maximum: saturation checked.
        float const given = f == Fp8Format::E4M3 ? 0.01f : 1e-4f;
        if (mode == ScaleMode::Given) scale.upload({given});
        Fp8View const view{codes.get(), scale.get(), n, f};
        quantize_fp8(reinterpret_cast<const bf16*>(src.get()), view, mode, nullptr);
        SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
        float const s = mode == ScaleMode::Given ? given : fp8_scale_from_amax(host_amax(x), f);
        ASSERT_EQ(scale.download()[0], s);
        if (mode == ScaleMode::Compute && !specials) {
          ASSERT_NE(s, fp8_scale_from_amax(std::numeric_limits<float>::infinity(), f));
        }
        float const inv = 1.0f / s;
        auto const got = codes.download();
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_EQ(got[i], encode_fp8(bf16_bits_to_float(x[i]) * inv, f)) << "element " << i;
        }
        DeviceArray<float> out(n);
        DeviceArray<std::uint16_t> out_bf16(n);
        dequantize_fp8(view, out.get(), nullptr);
        dequantize_fp8(view, reinterpret_cast<bf16*>(out_bf16.get()), nullptr);
        auto const back = out.download();
        auto const back_bf16 = out_bf16.download();
        for (std::size_t i = 0; i < n; ++i) {
          float const ref = decode_fp8(got[i], f) * s;
          ASSERT_TRUE(std::isnan(ref) ? std::isnan(back[i]) : back[i] == ref)
              << "element " << i << ": " << back[i] << " vs " << ref;
          ASSERT_EQ(back_bf16[i], float_to_bf16_bits(ref)) << "element " << i;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, Fp8Kernels, ::testing::Values(Fp8Format::E4M3, Fp8Format::E5M2),
                         [](const auto& p) {
                           return p.param == Fp8Format::E4M3 ? "E4M3" : "E5M2";
                         });

// Every e2m1 code pair under every block scale code (NaN codes included), for a plain, a
// typical and a tiny global scale: the tiny one makes multipliers beyond 2^113 (the decoder's
// per-element fallback) and infinite ones.
TEST(CodecKernels, Nvfp4DequantizeOfEveryCodeAndScaleMatchesCpu) {
  SYMMCOMM_REQUIRE_GPU();
  constexpr std::size_t kBlocks = 256 * 32;  // each scale code with all 256 data bytes
  constexpr std::size_t n = kBlocks * 16;
  std::vector<std::uint8_t> data(n / 2), scales(kBlocks);
  for (std::size_t b = 0; b < kBlocks; ++b) {
    std::size_t const code = b % 256, round = b / 256;
    scales[b] = static_cast<std::uint8_t>(code);
    for (std::size_t j = 0; j < 8; ++j)
      data[b * 8 + j] = static_cast<std::uint8_t>((code * 8 + round * 8 + j) % 256);
  }
  auto const same = [](float got, float want) {
    return std::isnan(want) ? std::isnan(got)
                            : got == want && std::signbit(got) == std::signbit(want);
  };
  auto const bf16_nan = [](std::uint16_t b) {
    return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0;
  };
  for (float const g : {1.0f, 123.5f, std::ldexp(1.0f, -120)}) {
    Nvfp4Device q(n);
    q.data.upload(data);
    q.scales.upload(scales);
    q.global.upload({g});
    auto const [got_bf16, got_f32] = dequantize_both(q);
    for (std::size_t i = 0; i < n; ++i) {
      float const ref = nvfp4_element(data.data(), scales.data(), g, i);
      ASSERT_TRUE(same(got_f32[i], ref))
          << "global scale " << g << ", element " << i << ": " << got_f32[i] << " vs " << ref;
      if (std::isnan(ref)) {
        ASSERT_TRUE(bf16_nan(got_bf16[i])) << "global scale " << g << ", element " << i;
      } else {
        ASSERT_EQ(got_bf16[i], float_to_bf16_bits(ref))
            << "global scale " << g << ", element " << i;
      }
    }
  }
}

TEST(CodecKernels, RejectBadArgumentsBeforeLaunching) {
  Nvfp4View bad{nullptr, nullptr, nullptr, 17};
  EXPECT_THROW(quantize_nvfp4(static_cast<const bf16*>(nullptr), bad, ScaleMode::Given, nullptr),
               LogicError);
  auto* fake = reinterpret_cast<std::uint8_t*>(std::uintptr_t{0x1000});
  auto* fake_scale = reinterpret_cast<float*>(std::uintptr_t{0x2000});
  Nvfp4View const ok{fake, fake, fake_scale, 32};
  EXPECT_THROW(quantize_nvfp4(static_cast<const bf16*>(nullptr), ok, ScaleMode::Given, nullptr),
               LogicError);
  EXPECT_THROW(quantize_nvfp4(reinterpret_cast<const bf16*>(std::uintptr_t{0x1002}), ok,
                              ScaleMode::Given, nullptr),
               LogicError);
  Fp8View const odd{fake, fake_scale, 12, Fp8Format::E4M3};
  EXPECT_THROW(quantize_fp8(reinterpret_cast<const bf16*>(fake), odd, ScaleMode::Given, nullptr),
               LogicError);
}

}  // namespace
