// Which GPUs a build runs on (symmcomm/build_info.hpp), without a GPU: SASS within a major
// version, PTX for every later GPU, arch-specific builds only on their own architecture, and
// CMake keywords reported as unknown rather than guessed.

#include "symmcomm/build_info.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using symmcomm::device_code;
using symmcomm::DeviceCode;

TEST(BuildInfo, DefaultListRunsHopperAndBlackwellFromSassAndLaterGpusFromPtx) {
  const char* const list = "90-real,100-real,120";
  EXPECT_EQ(device_code(list, 9, 0), DeviceCode::Sass);   // H100, H200
  EXPECT_EQ(device_code(list, 10, 0), DeviceCode::Sass);  // B200, GB200
  EXPECT_EQ(device_code(list, 10, 3), DeviceCode::Sass);  // B300: sm_100 SASS runs on sm_103
  EXPECT_EQ(device_code(list, 12, 0), DeviceCode::Sass);  // RTX Blackwell
  EXPECT_EQ(device_code(list, 12, 1), DeviceCode::Sass);  // sm_121: a later minor of sm_120
  EXPECT_EQ(device_code(list, 13, 0), DeviceCode::Ptx);   // a later GPU JITs compute_120
  EXPECT_EQ(device_code(list, 8, 0), DeviceCode::None);   // A100: nothing old enough
  EXPECT_EQ(device_code(list, 11, 0), DeviceCode::None);  // sm_110: no SASS, PTX is newer
}

TEST(BuildInfo, PtxOnlyAndArchSpecificBuilds) {
  EXPECT_EQ(device_code("90-virtual", 9, 0), DeviceCode::Ptx);
  EXPECT_EQ(device_code("90-virtual", 10, 0), DeviceCode::Ptx);
  EXPECT_EQ(device_code("90", 12, 0), DeviceCode::Ptx);
  EXPECT_EQ(device_code("90-real", 10, 0), DeviceCode::None);
  EXPECT_EQ(device_code("100a-real", 10, 0), DeviceCode::Sass);
  EXPECT_EQ(device_code("100a-real", 10, 3), DeviceCode::None);  // "a": this architecture only
  EXPECT_EQ(device_code("100a", 12, 0), DeviceCode::None);       // and its PTX is not portable
}

TEST(BuildInfo, KeywordsAndBadEntriesAreUnknown) {
  EXPECT_EQ(device_code("native", 9, 0), DeviceCode::Unknown);
  EXPECT_EQ(device_code("all-major", 9, 0), DeviceCode::Unknown);
  EXPECT_EQ(device_code("90-sass", 9, 0), DeviceCode::Unknown);
  EXPECT_STREQ(symmcomm::to_string(DeviceCode::Ptx), "ptx-jit");
}

// This build's own list is what CMake compiled it for: never empty, and parseable.
TEST(BuildInfo, ThisBuildNamesItsArchitectures) {
  std::string const list = symmcomm::built_cuda_architectures();
  EXPECT_FALSE(list.empty());
  EXPECT_EQ(list.find(';'), std::string::npos) << list;
  if (list != "native") {
    EXPECT_NE(device_code(9, 0), DeviceCode::Unknown) << list;
  }
}

}  // namespace
