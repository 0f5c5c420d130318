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

TEST(EmptyCommunicator, WrappingANullCommNamesTheCall) {
  EXPECT_NE(logic_error_text([] { Communicator::borrow(nullptr); }).find("Communicator::borrow"),
            std::string::npos);
  EXPECT_NE(logic_error_text([] { Communicator::own(nullptr); }).find("Communicator::own"),
            std::string::npos);
}

}  // namespace
