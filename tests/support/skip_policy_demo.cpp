// One test that always skips, for the skip policy's own checks (tests/CMakeLists.txt).

#include <gtest/gtest.h>

TEST(SkipPolicyDemo, AlwaysSkips) {
  GTEST_SKIP() << "skip-policy demonstration";
}
