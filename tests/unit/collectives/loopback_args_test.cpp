// Argument checking of the loopback runs of the LSA kernels (symmcomm/testing/loopback.hpp):
// every error is raised before anything is launched, so these run on the CPU with fake
// (aligned, never dereferenced) device pointers.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "symmcomm/error.hpp"
#include "symmcomm/testing/loopback.hpp"

namespace {

using namespace symmcomm;

template <class T>
T* fake(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const LogicError& e) {
    return e.what();
  }
  return "(no LogicError)";
}

Nvfp4View nvfp4(std::uintptr_t base, std::size_t count) {
  return Nvfp4View{fake<std::uint8_t>(base), fake<std::uint8_t>(base + 0x100000),
                   fake<float>(base + 0x200000), count};
}

TEST(LoopbackArgs, RankCountsAndListLengths) {
  std::vector<Bf16Span> nine(9, Bf16Span{fake<bf16>(0x10000), 16});
  std::vector<Bf16Span> nine_recv(9, Bf16Span{fake<bf16>(0x20000), 144});
  EXPECT_NE(error_of([&] {
              loopback::all_gather(nine, nine_recv, nullptr);
            }).find("send holds 9 views; loopback runs 1..8 virtual ranks"),
            std::string::npos);
  std::vector<Bf16Span> none;
  EXPECT_NE(error_of([&] { loopback::all_gather(none, none, nullptr); }).find("send holds 0"),
            std::string::npos);
  std::vector<Bf16Span> two(2, Bf16Span{fake<bf16>(0x10000), 16});
  std::vector<Bf16Span> three(3, Bf16Span{fake<bf16>(0x20000), 32});
  EXPECT_NE(error_of([&] {
              loopback::all_gather(two, three, nullptr);
            }).find("send holds 2 views but recv holds 3"),
            std::string::npos);
}

TEST(LoopbackArgs, CountsMustAddUpAndBeBlockMultiples) {
  std::vector<Nvfp4View> send = {nvfp4(0x1000000, 32), nvfp4(0x2000000, 48)};
  std::vector<Nvfp4View> recv = {nvfp4(0x3000000, 80), nvfp4(0x4000000, 64)};
  EXPECT_NE(error_of([&] {
              loopback::all_gather(send, recv, nullptr);
            }).find("recv[1].count 64 is not the sum of send counts 80"),
            std::string::npos);
  std::vector<Nvfp4View> odd = {nvfp4(0x1000000, 24), nvfp4(0x2000000, 48)};
  recv[0].count = recv[1].count = 72;
  EXPECT_NE(error_of([&] {
              loopback::all_gather(odd, recv, nullptr);
            }).find("send[0].count 24 is not a multiple of the NVFP4 block size"),
            std::string::npos);
  // Reduce-scatter: shards must be multiples of 16 and sum to every send's count.
  std::vector<Nvfp4View> rs_send = {nvfp4(0x1000000, 64), nvfp4(0x2000000, 48)};
  std::vector<Fp32Span> out = {Fp32Span{fake<float>(0x5000000), 32},
                               Fp32Span{fake<float>(0x6000000), 32}};
  EXPECT_NE(error_of([&] {
              loopback::reduce_scatter(rs_send, out, nullptr);
            }).find("send[1].count 48 is not the sum of recv counts 64"),
            std::string::npos);
}

TEST(LoopbackArgs, MissingScalesAndMixedFormatsAreNamed) {
  std::vector<Nvfp4View> send = {nvfp4(0x1000000, 32), nvfp4(0x2000000, 32)};
  send[1].global_scale = nullptr;
  std::vector<Nvfp4View> recv = {nvfp4(0x3000000, 64), nvfp4(0x4000000, 64)};
  EXPECT_NE(error_of([&] {
              loopback::all_gather(send, recv, nullptr);
            }).find("send[1].global_scale is null"),
            std::string::npos);
  std::vector<Fp8View> f8 = {
      Fp8View{fake<std::uint8_t>(0x1000000), fake<float>(0x1100000), 64, Fp8Format::E4M3},
      Fp8View{fake<std::uint8_t>(0x2000000), fake<float>(0x2100000), 64, Fp8Format::E5M2}};
  std::vector<Bf16Span> out = {Bf16Span{fake<bf16>(0x5000000), 64},
                               Bf16Span{fake<bf16>(0x6000000), 64}};
  f8[0].count = f8[1].count = 128;
  EXPECT_NE(error_of([&] {
              loopback::reduce_scatter(f8, out, nullptr);
            }).find("send[1].format differs from send[0].format"),
            std::string::npos);
  std::vector<Bf16Span> in = {Bf16Span{fake<bf16>(0x7000000), 32},
                              Bf16Span{fake<bf16>(0x8000000), 32}};
  std::vector<const float*> scales = {fake<const float>(0x9000000), nullptr};
  EXPECT_NE(error_of([&] {
              loopback::quantize_all_gather(in, scales, recv, nullptr);
            }).find("scale[1] is null"),
            std::string::npos);
  scales.pop_back();
  EXPECT_NE(error_of([&] {
              loopback::quantize_all_gather(in, scales, recv, nullptr);
            }).find("scale holds 1 pointers for 2 virtual ranks"),
            std::string::npos);
}

}  // namespace
