// The C ABI without a GPU: argument checking, status codes and error texts.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <cstddef>

#include "symmcomm/c_api.h"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/traits.hpp"
#include "symmcomm/path.hpp"

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
  // MoE groups: a NULL group or config is named; destroying NULL succeeds.
  symmcomm_moe_t group = nullptr;
  symmcomm_moe_config_t const config = {8, 2, 64, 4, 0, SYMMCOMM_PATH_AUTO, SYMMCOMM_DTYPE_NVFP4,
                                        0};
  EXPECT_EQ(symmcomm_moe_create(nullptr, &config, nullptr, &group),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("comm is NULL"));
  EXPECT_EQ(symmcomm_moe_create(nullptr, nullptr, nullptr, &group),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("config is NULL"));
  EXPECT_EQ(group, nullptr);
  EXPECT_EQ(symmcomm_moe_destroy(nullptr), SYMMCOMM_SUCCESS);
  EXPECT_EQ(symmcomm_moe_dispatch(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("group is NULL"));
  EXPECT_EQ(symmcomm_moe_combine(nullptr, nullptr, nullptr, nullptr),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(symmcomm_moe_check(nullptr, nullptr, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(symmcomm_moe_buffers(nullptr, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  int moe_ok = 1;
  EXPECT_EQ(symmcomm_moe_supported(nullptr, &moe_ok), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  int symmetric = 0;
  EXPECT_EQ(symmcomm_provenance(nullptr, &p, 8, &symmetric, nullptr),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  // Codecs and collectives: the NULL tensor or communicator is named, the plan left as it was.
  symmcomm_tensor_t const bf = symmcomm_tensor_bf16(&p, 16);
  symmcomm_tensor_t const q = symmcomm_tensor_nvfp4(&p, &p, nullptr, 16);
  EXPECT_EQ(symmcomm_quantize(&bf, nullptr, 1, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("dst is NULL"));
  EXPECT_EQ(symmcomm_dequantize(nullptr, &bf, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("src is NULL"));
  symmcomm_plan_t plan = SYMMCOMM_PLAN_INIT;
  std::size_t const counts[1] = {16};
  EXPECT_EQ(symmcomm_all_gather(nullptr, &bf, &bf, nullptr, nullptr, &plan),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("comm is NULL"));
  EXPECT_EQ(symmcomm_all_gather(nullptr, nullptr, &bf, nullptr, nullptr, &plan),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("send is NULL"));
  EXPECT_EQ(symmcomm_all_gatherv(nullptr, &q, &q, counts, nullptr, nullptr, &plan),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("comm is NULL"));
  EXPECT_EQ(symmcomm_reduce_scatter(nullptr, &q, nullptr, nullptr, nullptr, &plan),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("recv is NULL"));
  EXPECT_EQ(symmcomm_reduce_scatterv(nullptr, &q, &bf, counts, nullptr, nullptr, &plan),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("comm is NULL"));
  EXPECT_EQ(symmcomm_quantize_all_gather(nullptr, nullptr, nullptr, &q, nullptr, nullptr, &plan),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("input is NULL"));
  // device-count gathers with counts on the device: the counts struct and the output are named.
  std::int32_t* dev = reinterpret_cast<std::int32_t*>(std::uintptr_t{1} << 20);
  symmcomm_device_counts_t const dc{dev, 1, dev + 16, dev + 32, dev + 48};
  EXPECT_EQ(symmcomm_all_gatherv_device(nullptr, &bf, &bf, 16, nullptr, nullptr, nullptr, &plan),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("counts is NULL"));
  EXPECT_EQ(symmcomm_all_gatherv_device(nullptr, &bf, &bf, 16, &dc, nullptr, nullptr, &plan),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("comm is NULL"));
  EXPECT_EQ(symmcomm_all_gatherv_device(nullptr, &bf, &q, 16, &dc, nullptr, nullptr, &plan),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("comm is NULL"));  // arguments first, then the communicator
  EXPECT_EQ(symmcomm_reduce_scatterv_device(nullptr, &q, &bf, 16, nullptr, nullptr, nullptr, &plan),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("counts is NULL"));
  EXPECT_EQ(symmcomm_reduce_scatterv_device(nullptr, &q, &bf, 16, &dc, nullptr, nullptr, &plan),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("comm is NULL"));
  int over = -1;
  EXPECT_EQ(symmcomm_device_counts_overflowed(nullptr, &dc, nullptr, 1, nullptr),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("overflowed is NULL"));
  EXPECT_EQ(symmcomm_device_counts_overflowed(nullptr, &dc, nullptr, 1, &over),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("comm is NULL"));
  EXPECT_EQ(over, -1);
  EXPECT_EQ(plan.path, SYMMCOMM_TOOK_FALLBACK);  // untouched on failure
  EXPECT_EQ(plan.reason, SYMMCOMM_REASON_FORCED_FALLBACK);
}

// What the tagged tensors refuse: each error names the argument and the value.
TEST(CApi, TensorDescriptorsAreChecked) {
  void* p = reinterpret_cast<void*>(0x10000);
  symmcomm_tensor_t const bf = symmcomm_tensor_bf16(p, 16);
  int const nine = 9;  // what a C caller may store in an enum field
  symmcomm_tensor_t bad = bf;
  std::memcpy(&bad.dtype, &nine, sizeof nine);
  EXPECT_EQ(symmcomm_quantize(&bad, &bf, 1, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("src.dtype 9 is not a symmcomm_dtype_t")) << symmcomm_last_error();
  bad = symmcomm_tensor_nvfp4(p, p, nullptr, 16);
  std::memcpy(&bad.scale_layout, &nine, sizeof nine);
  EXPECT_EQ(symmcomm_quantize(&bf, &bad, 1, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("dst.scale_layout 9 is not a symmcomm_scale_layout_t"));
  bad = bf;
  bad.block_scales = p;
  EXPECT_EQ(symmcomm_dequantize(&bf, &bad, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("dst.block_scales must be NULL for bf16"));
  bad = bf;
  bad.scales = static_cast<float*>(p);
  EXPECT_EQ(symmcomm_dequantize(&bf, &bad, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("dst.scales must be NULL for bf16"));
  bad = bf;
  bad.row_elements = 64;
  EXPECT_EQ(symmcomm_quantize(&bad, &bf, 1, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("src: scale_layout and row_elements apply to nvfp4 only, not bf16"));
  bad = symmcomm_tensor_nvfp4(p, p, nullptr, 16);
  bad.row_elements = 64;
  EXPECT_EQ(symmcomm_dequantize(&bad, &bf, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("src.row_elements 64 is set but scale_layout is linear"));
  // Combinations no overload takes, and swizzled scales where only linear ones are read.
  symmcomm_tensor_t const f32 = symmcomm_tensor_fp32(static_cast<float*>(p), 16);
  EXPECT_EQ(symmcomm_quantize(&bf, &f32, 1, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("quantize of src bf16 into dst fp32 is not supported"));
  symmcomm_tensor_t const sw = symmcomm_tensor_nvfp4_swizzled(p, p, nullptr, 64, 64);
  EXPECT_EQ(symmcomm_dequantize(&sw, &bf, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("dequantize needs src's block scales linear"));
  symmcomm_tensor_t const q16 = symmcomm_tensor_nvfp4(p, p, nullptr, 32);
  EXPECT_EQ(symmcomm_quantize(&bf, &q16, 1, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("src holds 16 elements, dst 32"));
}

// Options are size-versioned: an older (smaller) struct takes defaults for what it lacks, a
// newer (larger) one is accepted while what this library does not know is zero.
TEST(CApi, OptionsAreSizeVersioned) {
  symmcomm_tensor_t const bf = symmcomm_tensor_bf16(reinterpret_cast<void*>(0x10000), 16);
  symmcomm_options_t o = SYMMCOMM_OPTIONS_INIT;
  EXPECT_EQ(o.struct_size, sizeof(symmcomm_options_t));
  EXPECT_EQ(o.pdl_fence, 1);
  o.struct_size = 4;
  EXPECT_EQ(symmcomm_all_gather(nullptr, &bf, &bf, &o, nullptr, nullptr),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("options->struct_size 4 is too small")) << symmcomm_last_error();
  int const seven = 7;
  o = symmcomm_options_t SYMMCOMM_OPTIONS_INIT;
  std::memcpy(&o.path, &seven, sizeof seven);
  EXPECT_EQ(symmcomm_all_gather(nullptr, &bf, &bf, &o, nullptr, nullptr),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("options->path 7 is not a symmcomm_path_t"));
  // A struct of the first version's head only (size and path): accepted, defaults for the rest.
  o = symmcomm_options_t SYMMCOMM_OPTIONS_INIT;
  o.struct_size = offsetof(symmcomm_options_t, agree_plan);
  o.agree_plan = 5;  // beyond struct_size: never read
  EXPECT_EQ(symmcomm_all_gather(nullptr, &bf, &bf, &o, nullptr, nullptr),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("comm is NULL"));  // options passed; the communicator is next
  // A newer caller's larger struct: zero tail accepted, a set field this library lacks refused.
  struct Newer {
    symmcomm_options_t base;
    std::uint64_t future_field;
  } newer{SYMMCOMM_OPTIONS_INIT, 0};
  newer.base.struct_size = sizeof newer;
  EXPECT_EQ(symmcomm_all_gather(nullptr, &bf, &bf, &newer.base, nullptr, nullptr),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("comm is NULL"));
  newer.future_field = 1;
  EXPECT_EQ(symmcomm_all_gather(nullptr, &bf, &bf, &newer.base, nullptr, nullptr),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has(("options sets fields this library (C ABI " +
                              std::to_string(SYMMCOMM_C_ABI_VERSION) + ") does not know")
                                 .c_str()))
      << symmcomm_last_error();
  // A plan out-parameter too small for the library to write is refused before anything runs.
  symmcomm_plan_t plan = SYMMCOMM_PLAN_INIT;
  plan.struct_size = 8;
  EXPECT_EQ(symmcomm_all_gather(nullptr, &bf, &bf, nullptr, nullptr, &plan),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("plan->struct_size 8 is smaller than"));
}

TEST(CApi, PlanDescribeAndEnumNames) {
  symmcomm_plan_t plan = SYMMCOMM_PLAN_INIT;
  std::size_t needed = 0;
  EXPECT_EQ(symmcomm_plan_describe(nullptr, nullptr, 0, &needed), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("plan is NULL"));
  EXPECT_EQ(symmcomm_plan_describe(&plan, nullptr, 16, &needed), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("text is NULL but capacity is 16"));
  // A plan no collective wrote (its public fields and private record disagree) is refused.
  EXPECT_EQ(symmcomm_plan_describe(&plan, nullptr, 0, &needed), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("plan was not written by a symmcomm collective"));
  // Every enumeration's names, in value order, ending with NULL.
  auto names = [](symmcomm_enum_t kind) {
    std::vector<std::string> out;
    for (int v = 0; symmcomm_enum_name(kind, v) != nullptr; ++v) {
      out.emplace_back(symmcomm_enum_name(kind, v));
    }
    return out;
  };
  EXPECT_EQ(names(SYMMCOMM_ENUM_PATH),
            (std::vector<std::string>{"auto", "nccl-symmetric", "lsa-kernel", "fallback"}));
  EXPECT_EQ(names(SYMMCOMM_ENUM_PATH_TAKEN),
            (std::vector<std::string>{"nccl-symmetric", "lsa-kernel", "fallback"}));
  EXPECT_EQ(names(SYMMCOMM_ENUM_DTYPE),
            (std::vector<std::string>{"nvfp4", "fp8e4m3", "fp8e5m2", "bf16", "fp32"}));
  EXPECT_EQ(names(SYMMCOMM_ENUM_SCALE_LAYOUT),
            (std::vector<std::string>{"linear", "swizzled128x4"}));
  EXPECT_EQ(names(SYMMCOMM_ENUM_STATUS).size(), SYMMCOMM_ERROR_TIMEOUT + 1u);
  EXPECT_EQ(names(SYMMCOMM_ENUM_STATUS)[SYMMCOMM_ERROR_INVALID_ARGUMENT], "invalid-argument");
  EXPECT_EQ(names(SYMMCOMM_ENUM_PLAN_REASON).size(),
            SYMMCOMM_REASON_DEVICE_COUNTS_IN_ONE_LAUNCH + 1u);
  EXPECT_EQ(names(SYMMCOMM_ENUM_PLAN_REASON)[SYMMCOMM_REASON_DEVICE_COUNTS], "device-counts");
  EXPECT_EQ(names(SYMMCOMM_ENUM_PLAN_REASON)[SYMMCOMM_REASON_DEVICE_COUNTS_IN_ONE_LAUNCH],
            "device-counts-in-one-launch");
  // The names the C++ API prints for the same values.
  for (int v = 0; v <= SYMMCOMM_DTYPE_FP32; ++v) {
    EXPECT_STREQ(symmcomm_enum_name(SYMMCOMM_ENUM_DTYPE, v),
                 symmcomm::to_string(static_cast<symmcomm::DataType>(v)));
  }
  for (int v = 0; v <= SYMMCOMM_TOOK_FALLBACK; ++v) {
    EXPECT_STREQ(symmcomm_enum_name(SYMMCOMM_ENUM_PATH_TAKEN, v),
                 symmcomm::to_string(static_cast<symmcomm::Path>(v)));
  }
  EXPECT_EQ(symmcomm_enum_name(SYMMCOMM_ENUM_PATH, -1), nullptr);
  // An unknown kind gives NULL too: tests/package/c_consumer passes one from C (in C++ an
  // out-of-range enumeration value cannot even be passed without undefined behaviour).
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
  symmcomm_tensor_t const src = symmcomm_tensor_bf16(nullptr, 17);
  symmcomm_tensor_t const bad = symmcomm_tensor_nvfp4(nullptr, nullptr, nullptr, 17);
  EXPECT_EQ(symmcomm_quantize(&src, &bad, 1, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(last_error_has("dst.count 17 is not a multiple")) << symmcomm_last_error();
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

namespace {

// The machine report through the C ABI: sized first, then written whole, text and JSON; a NULL
// buffer with room is a named argument error.
TEST(CApi, SystemReportIsSizedThenWritten) {
  size_t needed = 0;
  ASSERT_EQ(symmcomm_system_report(1, 0, nullptr, 0, &needed), SYMMCOMM_SUCCESS);
  ASSERT_GT(needed, 100u);
  std::string json(needed + 4096, '\0');
  ASSERT_EQ(symmcomm_system_report(1, 0, json.data(), json.size(), &needed), SYMMCOMM_SUCCESS);
  EXPECT_EQ(json.rfind("{\"schema\":\"symmcomm-info/1\"", 0), 0u) << json;
  EXPECT_NE(json.find("\"c_abi_version\":" + std::to_string(SYMMCOMM_C_ABI_VERSION)),
            std::string::npos);
  char small[16];
  ASSERT_EQ(symmcomm_system_report(0, 0, small, sizeof small, &needed), SYMMCOMM_SUCCESS);
  EXPECT_EQ(std::string(small),
            (std::string("symmcomm ") + symmcomm_version() + " (C ABI").substr(0, 15));
  EXPECT_EQ(symmcomm_system_report(0, 0, nullptr, 8, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(symmcomm_last_error()).find("text is NULL but capacity is 8"),
            std::string::npos);
  EXPECT_EQ(symmcomm_system_report(0, 65, nullptr, 0, nullptr), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(symmcomm_last_error()).find("probe_ranks 65 is outside 0..64"),
            std::string::npos);
}

}  // namespace
