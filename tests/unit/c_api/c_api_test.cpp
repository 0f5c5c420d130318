// The C ABI without a GPU: argument checking, status codes and error texts.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

#include "symmcomm/c_api.h"
#include "symmcomm/error.hpp"

namespace {

bool last_error_has(const char* text) {
  return std::string(symmcomm_last_error()).find(text) != std::string::npos;
}

TEST(CApi, VersionAndIdSize) {
  EXPECT_STREQ(symmcomm_version(), "0.1.0");
  EXPECT_EQ(symmcomm_unique_id_bytes(), static_cast<size_t>(NCCL_UNIQUE_ID_BYTES));
  EXPECT_EQ(symmcomm_abi_version(), SYMMCOMM_C_ABI_VERSION);
}

TEST(CApi, NullArgumentsAreInvalidArguments) {
  symmcomm_comm_t comm = nullptr;
  EXPECT_EQ(symmcomm_comm_wrap(nullptr, 0, &comm), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("nccl_comm is NULL"));
  EXPECT_EQ(symmcomm_comm_wrap(reinterpret_cast<ncclComm_t>(0x10), 0, nullptr),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("out is NULL"));
  // Values that cannot be a pointer to a communicator are refused, named, never dereferenced.
  for (std::uintptr_t const bad : {std::uintptr_t{1}, std::uintptr_t{4095},
                                   std::uintptr_t{0x7f0000001003}, ~std::uintptr_t{0}}) {
    EXPECT_EQ(symmcomm_comm_wrap(reinterpret_cast<ncclComm_t>(bad), 1, &comm),
              SYMMCOMM_ERROR_INVALID_ARGUMENT)
        << bad;
    EXPECT_TRUE(last_error_has("cannot be the address of an ncclComm_t")) << symmcomm_last_error();
    EXPECT_EQ(comm, nullptr);
  }
  EXPECT_EQ(symmcomm_comm_info(nullptr, nullptr, nullptr, nullptr, nullptr),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("comm is NULL"));
  // Releasing NULL is a no-op that succeeds, as free(NULL).
  EXPECT_EQ(symmcomm_comm_release(nullptr), SYMMCOMM_SUCCESS);
  EXPECT_EQ(symmcomm_pool_destroy(nullptr), SYMMCOMM_SUCCESS);
  EXPECT_EQ(symmcomm_pool_reserve(nullptr, 1024), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("pool is NULL"));
  void* p = nullptr;
  EXPECT_EQ(symmcomm_pool_allocate(nullptr, 64, 0, nullptr, &p), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(symmcomm_pool_stats(nullptr, nullptr, nullptr, nullptr, nullptr),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(symmcomm_get_unique_id(nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(symmcomm_torch_set_pool(nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  int symmetric = 0;
  EXPECT_EQ(symmcomm_provenance(nullptr, &p, 8, &symmetric, nullptr),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  // Codecs and fused quantize + gather: the NULL tensor or communicator is named.
  EXPECT_EQ(symmcomm_quantize_fp8(&p, nullptr, 1, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("dst is NULL"));
  EXPECT_EQ(symmcomm_dequantize_fp8(nullptr, &p, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("src is NULL"));
  symmcomm_fp8_t bad_format{nullptr, nullptr, 16, SYMMCOMM_FP8_E4M3};
  int const seven = 7;  // what a C caller may pass
  static_assert(sizeof(bad_format.format) == sizeof(seven));
  std::memcpy(&bad_format.format, &seven, sizeof seven);
  EXPECT_EQ(symmcomm_quantize_fp8(&p, &bad_format, 1, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("dst->format 7 is not an FP8 format"));
  symmcomm_nvfp4_t recv{};
  int taken = -1;
  EXPECT_EQ(symmcomm_quantize_all_gather_nvfp4(nullptr, &p, 16, &recv, nullptr, SYMMCOMM_PATH_AUTO,
                                               nullptr, &taken),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("comm is NULL"));
  EXPECT_EQ(symmcomm_quantize_all_gather_fp8(nullptr, &p, 16, nullptr, nullptr, SYMMCOMM_PATH_AUTO,
                                             nullptr, &taken),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  std::size_t const counts[1] = {16};
  EXPECT_EQ(symmcomm_all_gatherv_bf16(nullptr, &p, &p, counts, SYMMCOMM_PATH_AUTO, nullptr, &taken),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("comm is NULL"));
  EXPECT_EQ(symmcomm_all_gatherv_nvfp4(nullptr, &recv, &recv, counts, SYMMCOMM_PATH_AUTO, nullptr,
                                       &taken),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(symmcomm_all_gatherv_fp8(nullptr, nullptr, nullptr, counts, SYMMCOMM_PATH_AUTO, nullptr,
                                     &taken),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  float out32 = 0.0f;
  EXPECT_EQ(symmcomm_reduce_scatter_nvfp4_fp32(nullptr, &recv, &out32, 1, SYMMCOMM_PATH_AUTO,
                                               nullptr, &taken),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("comm is NULL"));
  EXPECT_EQ(symmcomm_reduce_scatter_fp8_fp8(nullptr, nullptr, nullptr, SYMMCOMM_PATH_AUTO, nullptr,
                                            &taken),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(symmcomm_all_gather_nvfp4_swizzled(nullptr, &recv, &recv, 112, SYMMCOMM_PATH_AUTO,
                                               nullptr, &taken),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("comm is NULL"));
  EXPECT_EQ(symmcomm_all_gatherv_nvfp4_swizzled(nullptr, &recv, &recv, counts, 112,
                                                SYMMCOMM_PATH_AUTO, nullptr, &taken),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(symmcomm_quantize_all_gather_nvfp4_swizzled(nullptr, &p, 16, &recv, nullptr, 112,
                                                        SYMMCOMM_PATH_AUTO, nullptr, &taken),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(taken, -1);  // untouched on failure
}

TEST(CApi, BadValuesNameTheArgument) {
  char id[NCCL_UNIQUE_ID_BYTES] = {};
  symmcomm_comm_t comm = nullptr;
  EXPECT_EQ(symmcomm_comm_init(0, id, 0, 0, &comm), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("nranks 0 is not positive"));
  EXPECT_EQ(symmcomm_comm_init(2, id, 5, 0, &comm), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("rank 5 is outside 0..1"));
  EXPECT_EQ(symmcomm_comm_init(1, nullptr, 0, 0, &comm), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("id is NULL"));
  symmcomm_nvfp4_t bad{nullptr, nullptr, nullptr, 17};
  EXPECT_EQ(symmcomm_quantize_nvfp4(nullptr, &bad, 1, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("dst.count 17 is not a multiple"));
  EXPECT_EQ(symmcomm_dequantize_nvfp4(nullptr, nullptr, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("src is NULL"));
}

TEST(CApi, TorchEntryPointsNeverThrowAndReportFailure) {
  EXPECT_EQ(symmcomm_torch_alloc(1024, 0, nullptr), nullptr);  // no pool set
  EXPECT_TRUE(last_error_has("no pool set for device 0"));
  EXPECT_EQ(symmcomm_torch_alloc(-1, 0, nullptr), nullptr);
  EXPECT_TRUE(last_error_has("size -1 is not positive"));
  EXPECT_EQ(symmcomm_torch_alloc(64, 999, nullptr), nullptr);
  symmcomm_torch_free(nullptr, 0, 0, nullptr);                           // a no-op
  symmcomm_torch_free(reinterpret_cast<void*>(0x1000), 64, 0, nullptr);  // logged, ignored
  EXPECT_TRUE(last_error_has("no pool set for device 0"));
}

// The library carries a private C++ runtime. A program that also links symmcomm's C++ code
// (this test: throw_logic_error below) must not capture the library's internal calls, or an
// exception thrown under one runtime would be caught under the other (std::terminate). The
// library binds its own symbols to itself (-Bsymbolic), so its error paths stay inside it.
TEST(CApi, ErrorPathsStayInsideTheLibraryWhenTheProgramLinksSymmcommToo) {
  EXPECT_THROW(symmcomm::error_support::throw_logic_error("from the program", __FILE__, __LINE__),
               symmcomm::LogicError);
  EXPECT_EQ(symmcomm_comm_info(nullptr, nullptr, nullptr, nullptr, nullptr),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(symmcomm_last_error()).find("comm is NULL"), std::string::npos)
      << symmcomm_last_error();
}

TEST(CApi, LastErrorIsPerThread) {
  EXPECT_EQ(symmcomm_pool_reserve(nullptr, 1), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  std::string other;
  std::thread t([&] { other = symmcomm_last_error(); });
  t.join();
  EXPECT_TRUE(other.empty());
  EXPECT_TRUE(last_error_has("pool is NULL"));
}

}  // namespace
