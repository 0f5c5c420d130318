// Calls on an empty Communicator (default-constructed or moved from) name the communicator,
// never a count mismatch against comm.size() == 0; wrapping a null ncclComm_t names the call.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "support/tensors.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/error.hpp"

namespace {

using namespace symmcomm;

using test::logic_error_text;

TEST(EmptyCommunicator, CollectivesSayTheCommunicatorIsEmpty) {
  Communicator const empty;
  // Well-formed views (never dereferenced: the communicator is refused first), with counts
  // that comm.size() == 0 could not match.
  auto* fake = reinterpret_cast<std::uint8_t*>(std::uintptr_t{1} << 20);
  Bf16Span const none{reinterpret_cast<bf16*>(fake), 16};
  Nvfp4View const fp4{fake, fake + 4096, reinterpret_cast<float*>(fake + 8192), 16};
  std::vector<std::string> const messages = {
      logic_error_text([&] { all_gather(empty, none, none, nullptr); }),
      logic_error_text([&] { all_gather(empty, fp4, fp4, nullptr); }),
      logic_error_text([&] { all_gatherv(empty, none, none, {}, nullptr); }),
      logic_error_text([&] { reduce_scatter(empty, none, none, nullptr); }),
      logic_error_text([&] { quantize_all_gather(empty, none, fp4, nullptr, nullptr); }),
  };
  for (const auto& m : messages) {
    EXPECT_NE(m.find("comm is empty"), std::string::npos) << m;
    EXPECT_EQ(m.find("count"), std::string::npos) << m;
  }
}

// Send sides and inputs are read-only: an engine's `const bf16*` / const quantized tensors go in
// without const_cast (these calls must compile; the empty communicator is refused first).
TEST(EmptyCommunicator, SendSidesTakeConstTensors) {
  Communicator const empty;
  auto* fake = reinterpret_cast<std::uint8_t*>(std::uintptr_t{1} << 20);
  const auto* input = reinterpret_cast<const bf16*>(fake);
  const std::uint8_t* codes = fake;
  const float* scale = reinterpret_cast<const float*>(fake + 8192);
  ConstBf16Span const in{input, 16};
  ConstNvfp4View const fp4_in{codes, codes + 4096, scale, 16};
  ConstFp8View const fp8_in{codes, scale, 16, Fp8Format::E4M3};
  Bf16Span const out{reinterpret_cast<bf16*>(fake), 16};
  Nvfp4View const fp4_out{fake, fake + 4096, reinterpret_cast<float*>(fake + 8192), 16};
  Fp8View const fp8_out{fake, reinterpret_cast<float*>(fake + 8192), 16, Fp8Format::E4M3};
  std::vector<std::string> const messages = {
      logic_error_text([&] { all_gather(empty, in, out, nullptr); }),
      logic_error_text([&] { all_gather(empty, fp4_in, fp4_out, nullptr); }),
      logic_error_text([&] { all_gather(empty, fp8_in, fp8_out, nullptr); }),
      logic_error_text([&] { all_gatherv(empty, fp4_in, fp4_out, {}, nullptr); }),
      logic_error_text([&] { reduce_scatter(empty, in, out, nullptr); }),
      logic_error_text([&] { reduce_scatter(empty, fp4_in, out, nullptr); }),
      logic_error_text([&] { reduce_scatter(empty, fp8_in, fp8_out, nullptr); }),
      logic_error_text([&] { quantize_all_gather(empty, in, fp4_out, scale, nullptr); }),
  };
  for (const auto& m : messages) EXPECT_NE(m.find("comm is empty"), std::string::npos) << m;
}

TEST(EmptyCommunicator, WrappingANullCommNamesTheCall) {
  EXPECT_NE(logic_error_text([] { Communicator::borrow(nullptr); }).find("Communicator::borrow"),
            std::string::npos);
  EXPECT_NE(logic_error_text([] { Communicator::own(nullptr); }).find("Communicator::own"),
            std::string::npos);
}

}  // namespace
