// On a machine without a usable GPU the codecs say so, naming the cause, instead of passing on
// the CUDA runtime's "driver version is insufficient" from whichever call failed first.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "symmcomm/error.hpp"
#include "symmcomm/formats/codecs.hpp"

namespace {

using namespace symmcomm;

TEST(CodecsWithoutGpu, SayThereIsNoCudaDevice) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) {
    GTEST_SKIP() << "this machine has a GPU: the codecs run there (tests/gpu)";
  }
  (void)cudaGetLastError();
  auto* fake = reinterpret_cast<std::uint8_t*>(std::uintptr_t{1} << 20);
  Nvfp4View const dst{fake, fake + 4096, reinterpret_cast<float*>(fake + 8192), 64};
  const auto* src = reinterpret_cast<const bf16*>(fake + 16384);
  for (int call = 0; call < 2; ++call) {
    try {
      if (call == 0) {
        quantize_nvfp4(src, dst, ScaleMode::Compute, nullptr);
      } else {
        dequantize_nvfp4(dst, reinterpret_cast<bf16*>(fake + 16384), nullptr);
      }
      ADD_FAILURE() << "call " << call << " ran without a GPU";
    } catch (const CudaError& e) {
      EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
    }
  }
}

// Scale swizzling: bad arguments are refused naming them on any machine; without a GPU a good
// call says there is no device.
TEST(SwizzleScales, BadArgumentsAreNamedAndNoGpuIsSaid) {
  auto* fake = reinterpret_cast<std::uint8_t*>(std::uintptr_t{1} << 20);
  auto const text = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(text([&] {
              swizzle_nvfp4_scales(nullptr, 3, 4, fake, nullptr);
            }).find("linear is null but holds 12 scales"),
            std::string::npos);
  EXPECT_NE(text([&] {
              swizzle_nvfp4_scales(fake, 3, 4, nullptr, nullptr);
            }).find("swizzled is null but needs 512 bytes"),
            std::string::npos);
  EXPECT_NE(text([&] { swizzle_nvfp4_scales(fake, 3, 4, fake + 8, nullptr); }).find("overlaps"),
            std::string::npos);
  swizzle_nvfp4_scales(nullptr, 0, 4, nullptr, nullptr);  // nothing to do: no device needed
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) {
    GTEST_SKIP() << "this machine has a GPU: the swizzle kernel runs there (tests/gpu)";
  }
  (void)cudaGetLastError();
  EXPECT_NE(
      text([&] { swizzle_nvfp4_scales(fake, 3, 4, fake + 4096, nullptr); }).find("no CUDA device"),
      std::string::npos);
}

}  // namespace
