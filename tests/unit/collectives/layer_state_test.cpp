// The collectives' state of a communicator as the comm layer sees it (comm/layer_state.hpp),
// without a GPU: the switch bits each rank contributes to the creation's agreement, and a state
// that made no window holding no peer memory and releasing nothing.

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "collectives/scratch.hpp"
#include "comm/layer_state.hpp"

namespace {

using namespace symmcomm::detail;

// Sets an environment variable for one test and restores what it was.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* was = std::getenv(name);
    had_ = was != nullptr;
    if (had_) was_ = was;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, was_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string was_;
};

TEST(LayerState, EachSwitchIsOnUnlessItsVariableIsZero) {
  {
    ScopedEnv small("SYMMCOMM_LSA_LL", nullptr), lines("SYMMCOMM_LL_COUNTS", nullptr);
    EXPECT_EQ(layer_switches(), kSmallGatherSwitch | kCountsInLinesSwitch);
  }
  {
    ScopedEnv small("SYMMCOMM_LSA_LL", "0"), lines("SYMMCOMM_LL_COUNTS", "1");
    EXPECT_EQ(layer_switches(), std::uint32_t{kCountsInLinesSwitch});
  }
  {
    ScopedEnv small("SYMMCOMM_LSA_LL", "1"), lines("SYMMCOMM_LL_COUNTS", "0");
    EXPECT_EQ(layer_switches(), std::uint32_t{kSmallGatherSwitch});
  }
  {
    ScopedEnv small("SYMMCOMM_LSA_LL", "0"), lines("SYMMCOMM_LL_COUNTS", "0");
    EXPECT_EQ(layer_switches(), 0u);
  }
}

TEST(LayerState, MadeWithNoWindowItHoldsNoPeerMemoryAndReleasesNothing) {
  std::shared_ptr<LayerState> const made = make_layer_state(0);
  ASSERT_NE(made, nullptr);
  auto* scratch = dynamic_cast<CollectiveScratch*>(made.get());
  ASSERT_NE(scratch, nullptr) << "the collectives' state is what the comm layer makes";
  EXPECT_FALSE(made->holds_peer_memory());
  EXPECT_FALSE(scratch->has_window());
  EXPECT_FALSE(scratch->counts_in_lines) << "off until the ranks agree on it at creation";
}

}  // namespace
