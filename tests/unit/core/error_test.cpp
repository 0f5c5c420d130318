#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "symmcomm/error.hpp"
#include "symmcomm/logging.hpp"
#include "symmcomm/runtime.hpp"
#include "symmcomm/version.hpp"

namespace {

using namespace symmcomm;

TEST(Error, ExpectsThrowsLogicErrorWithStreamedMessageAndLocation) {
  int const count = 7;
  try {
    SYMMCOMM_EXPECTS(count % 2 == 0, "count " << count << " is odd");
    FAIL() << "no throw";
  } catch (const LogicError& e) {
    std::string const what = e.what();
    EXPECT_NE(what.find("count 7 is odd"), std::string::npos) << what;
    EXPECT_NE(what.find("error_test.cpp:"), std::string::npos) << what;
  }
}

TEST(Error, CudaTryMapsCodes) {
  EXPECT_THROW(SYMMCOMM_CUDA_TRY(cudaErrorInvalidValue), CudaError);
  EXPECT_THROW(SYMMCOMM_CUDA_TRY(cudaErrorMemoryAllocation), OutOfMemory);
  try {
    SYMMCOMM_CUDA_TRY(cudaErrorInvalidValue);
  } catch (const CudaError& e) {
    EXPECT_EQ(e.code(), cudaErrorInvalidValue);
    EXPECT_NE(std::string(e.what()).find("cudaErrorInvalidValue"), std::string::npos);
  }
}

TEST(Error, NcclTryCarriesResult) {
  try {
    SYMMCOMM_NCCL_TRY(ncclInvalidArgument);
    FAIL() << "no throw";
  } catch (const NcclError& e) {
    EXPECT_EQ(e.code(), ncclInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("ncclInvalidArgument"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(SYMMCOMM_NCCL_TRY(ncclSuccess));
}

TEST(Error, AllDeriveFromError) {
  EXPECT_THROW(SYMMCOMM_FAIL("x"), Error);
  EXPECT_THROW(SYMMCOMM_CUDA_TRY(cudaErrorInvalidValue), Error);
  EXPECT_THROW(SYMMCOMM_NCCL_TRY(ncclSystemError), Error);
}

TEST(Logging, LevelsParseAndSinkCaptures) {
  EXPECT_EQ(parse_log_level("DEBUG"), LogLevel::Debug);
  EXPECT_EQ(parse_log_level("off"), LogLevel::Off);
  EXPECT_THROW(parse_log_level("verbose"), LogicError);
  std::vector<std::string> seen;
  LogSink previous = set_log_sink([&](LogLevel, const std::string& m) { seen.push_back(m); });
  LogLevel const old = log_level();
  set_log_level(LogLevel::Info);
  SYMMCOMM_LOG_DEBUG("hidden " << 1);
  SYMMCOMM_LOG_INFO("shown " << 2);
  set_log_level(old);
  set_log_sink(previous);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], "shown 2");
}

TEST(Runtime, VersionsAndKnownBugTable) {
  EXPECT_EQ(NcclVersion::from_code(22809).minor, 28);
  EXPECT_EQ(NcclVersion::from_code(22809).patch, 9);
  EXPECT_TRUE(nccl_has_pdl_stale_input_bug({2, 28, 3}));
  EXPECT_TRUE(nccl_has_pdl_stale_input_bug({2, 30, 6}));
  EXPECT_FALSE(nccl_has_pdl_stale_input_bug({2, 30, 7}));
  EXPECT_FALSE(nccl_has_pdl_stale_input_bug({2, 27, 7}));
  EXPECT_EQ(nccl_build_version().code(), NCCL_VERSION_CODE);
  // ncclGetVersion needs no GPU.
  NcclVersion const loaded = nccl_runtime_version();
  EXPECT_GE(loaded, kMinNcclVersion);
  EXPECT_NO_THROW(check_nccl_runtime());
  EXPECT_FALSE(std::string(kVersion).empty());
}

TEST(Runtime, DeviceApiVersionRule) {
  // 2.28 has unversioned structs: the exact build version only.
  EXPECT_TRUE(nccl_device_api_compatible({2, 28, 3}, {2, 28, 3}));
  EXPECT_FALSE(nccl_device_api_compatible({2, 28, 9}, {2, 28, 3}));
  EXPECT_FALSE(nccl_device_api_compatible({2, 30, 7}, {2, 28, 9}));
  // From 2.29.2 a newer NCCL accepts older headers' structs; an older one cannot.
  EXPECT_TRUE(nccl_device_api_compatible({2, 30, 7}, {2, 29, 2}));
  EXPECT_TRUE(nccl_device_api_compatible({2, 30, 7}, {2, 30, 7}));
  EXPECT_FALSE(nccl_device_api_compatible({2, 30, 4}, {2, 30, 7}));
  EXPECT_FALSE(nccl_device_api_compatible({2, 28, 9}, {2, 30, 7}));
  EXPECT_FALSE(nccl_device_api_compatible({2, 29, 2}, {2, 29, 1}));
  // Registration rule of NCCL's symmetric kernels.
  EXPECT_FALSE(nccl_symmetric_needs_peer_side_only({2, 28, 9}));
  EXPECT_TRUE(nccl_symmetric_needs_peer_side_only({2, 29, 0}));
  EXPECT_TRUE(nccl_symmetric_needs_peer_side_only({2, 30, 7}));
}

}  // namespace
