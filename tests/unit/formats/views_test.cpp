#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "symmcomm/error.hpp"
#include "symmcomm/formats/views.hpp"

namespace {

using namespace symmcomm;

// Fake, never dereferenced addresses: validation only looks at values.
auto* const kAligned = reinterpret_cast<std::uint8_t*>(std::uintptr_t{0x10000});
auto* const kMisaligned = reinterpret_cast<std::uint8_t*>(std::uintptr_t{0x10004});
auto* const kScale = reinterpret_cast<float*>(std::uintptr_t{0x20000});

template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const LogicError& e) {
    return e.what();
  }
  return "(no LogicError)";
}

// Mutable views convert to their read-only forms (field for field), never the other way, and a
// span converts only to the read-only span of its own element type.
TEST(Views, MutableViewsConvertToReadOnlyOnes) {
  auto* p = reinterpret_cast<std::uint8_t*>(std::uintptr_t{0x10000});
  auto* f = reinterpret_cast<float*>(std::uintptr_t{0x20000});
  Nvfp4View const m{p, p + 512, f, 1024};
  ConstNvfp4View const c = m;
  EXPECT_EQ(c.data, m.data);
  EXPECT_EQ(c.block_scales, m.block_scales);
  EXPECT_EQ(c.global_scale, m.global_scale);
  EXPECT_EQ(c.count, m.count);
  ConstNvfp4View const part = c.slice(32, 64);
  EXPECT_EQ(part.data, p + 16);
  EXPECT_EQ(part.block_scales, p + 512 + 2);
  EXPECT_THROW(c.slice(8, 16), LogicError);  // inside a block
  Fp8View const e{p, f, 64, Fp8Format::E5M2};
  ConstFp8View const ce = e;
  EXPECT_EQ(ce.dtype(), DataType::Fp8E5M2);
  EXPECT_EQ(ce.data, p);
  Bf16Span const b{reinterpret_cast<bf16*>(p), 8};
  ConstBf16Span const cb = b;
  EXPECT_EQ(cb.data, b.data);
  EXPECT_EQ(cb.count, 8u);
  static_assert(std::is_convertible_v<Nvfp4View, ConstNvfp4View>);
  static_assert(!std::is_convertible_v<ConstNvfp4View, Nvfp4View>);
  static_assert(!std::is_convertible_v<ConstFp8View, Fp8View>);
  static_assert(!std::is_convertible_v<ConstBf16Span, Bf16Span>);
  static_assert(!std::is_convertible_v<Bf16Span, ConstFp32Span>);
  static_assert(!std::is_convertible_v<Nvfp4View, ConstFp8View>);
}

TEST(Views, Nvfp4Valid) {
  Nvfp4View v{kAligned, kAligned, kScale, 64};
  EXPECT_NO_THROW(validate(v, "send"));
  EXPECT_EQ(v.data_bytes(), 32u);
  EXPECT_EQ(v.scale_bytes(), 4u);
  Nvfp4View const s = v.slice(32, 16);
  EXPECT_EQ(s.data, kAligned + 16);
  EXPECT_EQ(s.block_scales, kAligned + 2);
  EXPECT_EQ(s.count, 16u);
  EXPECT_NO_THROW(validate(Nvfp4View{}, "empty"));
  // A slice inside a block would pair element 8's data with block 0's scale.
  EXPECT_NE(message_of([&] { (void)v.slice(8, 16); }).find("Nvfp4View::slice(8, 16)"),
            std::string::npos);
  EXPECT_THROW((void)v.slice(16, 8), LogicError);
  EXPECT_THROW((void)v.slice(48, 32), LogicError);  // past the end
  EXPECT_EQ(v.slice(64, 0).count, 0u);
}

// A gathered tensor's part of one rank: its data, block scales and its own scale.
TEST(Views, RankPartOfAGatheredTensorHasItsOwnScale) {
  Nvfp4View const g{kAligned, kAligned + 4096, kScale, 4 * 64};  // 4 ranks x 64 elements
  Nvfp4View const p = g.rank_part(2, 4);
  EXPECT_EQ(p.data, kAligned + 2 * 32);
  EXPECT_EQ(p.block_scales, kAligned + 4096 + 2 * 4);
  EXPECT_EQ(p.global_scale, kScale + 2);
  EXPECT_EQ(p.count, 64u);
  ConstNvfp4View const c = ConstNvfp4View(g).rank_part(3, 4);
  EXPECT_EQ(c.global_scale, kScale + 3);
  EXPECT_EQ(c.data, kAligned + 3 * 32);
  EXPECT_NE(message_of([&] { (void)g.rank_part(4, 4); }).find("rank_part(4, 4): rank outside 0..3"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              (void)g.rank_part(0, 3);
            }).find("256 elements are not 3 equal parts of multiples of 16"),
            std::string::npos);
  EXPECT_THROW((void)g.rank_part(0, 32), LogicError);  // parts of 8 elements: not whole blocks
  Fp8View const f{kAligned, kScale, 300, Fp8Format::E5M2};
  Fp8View const q = f.rank_part(1, 3);
  EXPECT_EQ(q.data, kAligned + 100);
  EXPECT_EQ(q.scale, kScale + 1);
  EXPECT_EQ(q.count, 100u);
  EXPECT_EQ(q.format, Fp8Format::E5M2);
  EXPECT_THROW((void)f.rank_part(0, 7), LogicError);
}

TEST(Views, Nvfp4CountNotMultipleOfBlockNamesArgumentAndValue) {
  std::string const m = message_of([] {
    validate(Nvfp4View{kAligned, kAligned, kScale, 100}, "send");
  });
  EXPECT_NE(m.find("send.count 100"), std::string::npos) << m;
  EXPECT_NE(m.find("16"), std::string::npos) << m;
}

TEST(Views, Nvfp4MissingGlobalScale) {
  std::string const m = message_of([] {
    validate(Nvfp4View{kAligned, kAligned, nullptr, 16}, "recv");
  });
  EXPECT_NE(m.find("recv.global_scale is null"), std::string::npos) << m;
}

TEST(Views, Nvfp4NullDataAndScales) {
  EXPECT_NE(message_of([] {
              validate(Nvfp4View{nullptr, kAligned, kScale, 16}, "x");
            }).find("x.data is null"),
            std::string::npos);
  EXPECT_NE(message_of([] {
              validate(Nvfp4View{kAligned, nullptr, kScale, 16}, "x");
            }).find("x.block_scales is null"),
            std::string::npos);
}

TEST(Views, MisalignedDataNamesAddress) {
  std::string const m = message_of([] {
    validate(Nvfp4View{kMisaligned, kAligned, kScale, 16}, "send");
  });
  EXPECT_NE(m.find("send.data 0x10004 is not 16-byte aligned"), std::string::npos) << m;
  EXPECT_NO_THROW(validate(Nvfp4View{kMisaligned, kAligned, kScale, 16}, "send", 4));
}

TEST(Views, Fp8AndSpans) {
  EXPECT_NO_THROW(validate(Fp8View{kAligned, kScale, 10, Fp8Format::E5M2}, "a"));
  EXPECT_NE(message_of([] {
              validate(Fp8View{kAligned, nullptr, 10, Fp8Format::E4M3}, "a");
            }).find("a.scale is null"),
            std::string::npos);
  EXPECT_NE(message_of([] {
              validate(Fp8View{kAligned, kScale, 8, static_cast<Fp8Format>(7)}, "a");
            }).find("a.format 7"),
            std::string::npos);
  EXPECT_EQ((Fp8View{kAligned, kScale, 8, Fp8Format::E5M2}.dtype()), DataType::Fp8E5M2);
  EXPECT_EQ(Nvfp4View{}.dtype(), DataType::Nvfp4);
  EXPECT_NE(message_of([] {
              validate(Bf16Span{nullptr, 3}, "out");
            }).find("out.data is null"),
            std::string::npos);
  EXPECT_NE(message_of([] {
              validate(Fp32Span{reinterpret_cast<float*>(kMisaligned), 3}, "out");
            }).find("not 16-byte aligned"),
            std::string::npos);
  EXPECT_NO_THROW(validate(Bf16Span{}, "none"));
}

}  // namespace
