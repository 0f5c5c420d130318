// The C ABI's codecs, collectives, plans and exported enumeration names (symmcomm/c_api.h):
// each collective entry point reads its tagged tensors once into the library's call descriptor
// (src/collectives/call.hpp) and hands it to the same run() as the typed C++ overloads, which
// validates counts, pointers and windows once, plans and runs it; the codecs look their dtype
// pair up in a table.

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "c_api_internal.hpp"
#include "collectives/call.hpp"
#include "symmcomm/c_api.h"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/device_counts.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/formats/codecs.hpp"

namespace symmcomm::c_api {
namespace {

// The library's record of a plan inside symmcomm_plan_t::private_data.
static_assert(std::is_trivially_copyable_v<Plan>, "Plan is copied into symmcomm_plan_t");
// The record's last word marks a plan a collective wrote.
constexpr std::size_t kPlanWords = sizeof(symmcomm_plan_t::private_data) / sizeof(std::uint64_t);
constexpr std::uint64_t kPlanMark = 0x73796d6d636f6d6dULL;  // "symmcomm"
static_assert(sizeof(Plan) <= (kPlanWords - 1) * sizeof(std::uint64_t),
              "symmcomm_plan_t::private_data cannot hold a Plan and its mark");

constexpr int kLastDtype = SYMMCOMM_DTYPE_FP32;
constexpr int kLastLayout = SYMMCOMM_SCALE_LAYOUT_SWIZZLED_128X4;
constexpr int kLastPath = SYMMCOMM_PATH_FALLBACK;

static_assert(static_cast<int>(DataType::Nvfp4) == SYMMCOMM_DTYPE_NVFP4 &&
              static_cast<int>(DataType::Fp8E4M3) == SYMMCOMM_DTYPE_FP8_E4M3 &&
              static_cast<int>(DataType::Fp8E5M2) == SYMMCOMM_DTYPE_FP8_E5M2 &&
              static_cast<int>(DataType::Bf16) == SYMMCOMM_DTYPE_BF16 &&
              static_cast<int>(DataType::Fp32) == SYMMCOMM_DTYPE_FP32);
static_assert(static_cast<int>(PlanReason::DeviceCountsInOneLaunch) ==
              SYMMCOMM_REASON_DEVICE_COUNTS_IN_ONE_LAUNCH);
static_assert(static_cast<int>(Path::NcclSymmetric) == SYMMCOMM_TOOK_NCCL_SYMMETRIC &&
              static_cast<int>(Path::LsaKernel) == SYMMCOMM_TOOK_LSA_KERNEL &&
              static_cast<int>(Path::Fallback) == SYMMCOMM_TOOK_FALLBACK);
static_assert(static_cast<int>(PathChoice::Auto) == SYMMCOMM_PATH_AUTO &&
              static_cast<int>(PathChoice::Fallback) == SYMMCOMM_PATH_FALLBACK);

}  // namespace

symmcomm::DeviceCounts device_counts_of(const symmcomm_device_counts_t* counts) {
  SYMMCOMM_EXPECTS(counts != nullptr, "counts is NULL");
  return symmcomm::DeviceCounts{counts->count, counts->capacity, counts->counts, counts->offsets,
                                counts->overflow};
}

Options options_of(const symmcomm_options_t* options) {
  Options o;
  if (options == nullptr) return o;
  std::size_t const size = options->struct_size;
  std::size_t constexpr kFirst = offsetof(symmcomm_options_t, path) + sizeof(symmcomm_path_t);
  SYMMCOMM_EXPECTS(size >= kFirst, "options->struct_size "
                                       << size << " is too small (initialise with "
                                       << "SYMMCOMM_OPTIONS_INIT: sizeof(symmcomm_options_t))");
  symmcomm_options_t c = SYMMCOMM_OPTIONS_INIT;
  std::memcpy(&c, options, std::min(size, sizeof c));
  if (size > sizeof c) {
    auto const* extra = reinterpret_cast<const unsigned char*>(options);
    for (std::size_t i = sizeof c; i < size; ++i) {
      SYMMCOMM_EXPECTS(extra[i] == 0, "options sets fields this library (C ABI "
                                          << SYMMCOMM_C_ABI_VERSION
                                          << ") does not know: struct_size " << size << " > "
                                          << sizeof c << ", byte " << i << " is not zero");
    }
  }
  o.path =
      static_cast<PathChoice>(enum_value(c.path, kLastPath, "options->path", "symmcomm_path_t"));
  o.agree_plan = c.agree_plan != 0;
  o.pdl_fence = c.pdl_fence != 0;
  o.allow_staging = c.allow_staging != 0;
  o.workspace = c.workspace;
  o.workspace_bytes = c.workspace_bytes;
  o.staging = Staging{c.staging_send, c.staging_send_bytes, c.staging_recv, c.staging_recv_bytes};
  return o;
}

void check_plan_out(const symmcomm_plan_t* plan) {
  if (plan == nullptr) return;
  SYMMCOMM_EXPECTS(plan->struct_size >= sizeof(symmcomm_plan_t),
                   "plan->struct_size " << plan->struct_size << " is smaller than "
                                        << sizeof(symmcomm_plan_t)
                                        << " (initialise with SYMMCOMM_PLAN_INIT)");
}

void report(const Plan& plan, symmcomm_plan_t* out) {
  if (out == nullptr) return;
  out->path = static_cast<symmcomm_path_taken_t>(plan.path);
  out->reason = static_cast<symmcomm_plan_reason_t>(plan.why);
  out->staged = plan.staged ? 1 : 0;
  std::memset(out->private_data, 0, sizeof out->private_data);
  std::memcpy(out->private_data, &plan, sizeof plan);
  out->private_data[kPlanWords - 1] = kPlanMark;
}

detail::TensorRef tensor_of(const symmcomm_tensor_t* t, const char* name) {
  SYMMCOMM_EXPECTS(t != nullptr, name << " is NULL");
  std::string const n(name);
  auto const dtype = static_cast<DataType>(
      enum_value(t->dtype, kLastDtype, (n + ".dtype").c_str(), "symmcomm_dtype_t"));
  auto const layout = static_cast<ScaleLayout>(enum_value(
      t->scale_layout, kLastLayout, (n + ".scale_layout").c_str(), "symmcomm_scale_layout_t"));
  bool const quantized =
      dtype == DataType::Nvfp4 || dtype == DataType::Fp8E4M3 || dtype == DataType::Fp8E5M2;
  if (dtype != DataType::Nvfp4) {
    SYMMCOMM_EXPECTS(t->block_scales == nullptr,
                     name << ".block_scales must be NULL for " << to_string(dtype));
    SYMMCOMM_EXPECTS(
        layout == ScaleLayout::Linear && t->row_elements == 0,
        name << ": scale_layout and row_elements apply to nvfp4 only, not " << to_string(dtype));
  } else {
    SYMMCOMM_EXPECTS(
        layout == ScaleLayout::Swizzled128x4 || t->row_elements == 0,
        name << ".row_elements " << t->row_elements << " is set but scale_layout is linear");
  }
  if (!quantized) {
    SYMMCOMM_EXPECTS(t->scales == nullptr, name << ".scales must be NULL for " << to_string(dtype));
  }
  detail::TensorRef r;
  r.dtype = dtype;
  r.data = t->data;
  r.block_scales = t->block_scales;
  r.scales = t->scales;
  r.count = t->count;
  r.scale_layout = layout;
  r.row_elements = t->row_elements;
  return r;
}

namespace {

// A codec's dtype pair and its run. FP8 rows match either encoding (the view carries it).
using CodecRun = void (*)(const detail::TensorRef& src, const detail::TensorRef& dst,
                          ScaleMode mode, cudaStream_t stream);
struct Codec {
  DataType src, dst;
  CodecRun run;
};

bool same_class(DataType row, DataType t) {
  auto const fp8 = [](DataType d) { return d == DataType::Fp8E4M3 || d == DataType::Fp8E5M2; };
  return row == t || (fp8(row) && fp8(t));
}

template <class T>
const T* data_of(const detail::TensorRef& t) {
  return static_cast<const T*>(t.data);
}

constexpr Codec kQuantize[] = {
    {DataType::Bf16, DataType::Nvfp4,
     [](const detail::TensorRef& a, const detail::TensorRef& b, ScaleMode m, cudaStream_t s) {
       quantize_nvfp4(data_of<bf16>(a), b.nvfp4(), m, s);
     }},
    {DataType::Fp32, DataType::Nvfp4,
     [](const detail::TensorRef& a, const detail::TensorRef& b, ScaleMode m, cudaStream_t s) {
       quantize_nvfp4(data_of<float>(a), b.nvfp4(), m, s);
     }},
    {DataType::Bf16, DataType::Fp8E4M3,
     [](const detail::TensorRef& a, const detail::TensorRef& b, ScaleMode m, cudaStream_t s) {
       quantize_fp8(data_of<bf16>(a), b.fp8(), m, s);
     }},
    {DataType::Fp32, DataType::Fp8E4M3,
     [](const detail::TensorRef& a, const detail::TensorRef& b, ScaleMode m, cudaStream_t s) {
       quantize_fp8(data_of<float>(a), b.fp8(), m, s);
     }},
};

constexpr Codec kDequantize[] = {
    {DataType::Nvfp4, DataType::Bf16,
     [](const detail::TensorRef& a, const detail::TensorRef& b, ScaleMode, cudaStream_t s) {
       dequantize_nvfp4(a.nvfp4(), static_cast<bf16*>(b.data), s);
     }},
    {DataType::Nvfp4, DataType::Fp32,
     [](const detail::TensorRef& a, const detail::TensorRef& b, ScaleMode, cudaStream_t s) {
       dequantize_nvfp4(a.nvfp4(), static_cast<float*>(b.data), s);
     }},
    {DataType::Fp8E4M3, DataType::Bf16,
     [](const detail::TensorRef& a, const detail::TensorRef& b, ScaleMode, cudaStream_t s) {
       dequantize_fp8(a.fp8(), static_cast<bf16*>(b.data), s);
     }},
    {DataType::Fp8E4M3, DataType::Fp32,
     [](const detail::TensorRef& a, const detail::TensorRef& b, ScaleMode, cudaStream_t s) {
       dequantize_fp8(a.fp8(), static_cast<float*>(b.data), s);
     }},
};

/// Which side of a codec call holds the quantized tensor.
enum class QuantizedSide { Src, Dst };

// `call` ("quantize", "dequantize") of src into dst through the row of `table` that takes them;
// the quantized side's block scales must be linear.
template <std::size_t N>
void run_codec(const char* call, const Codec (&table)[N], const symmcomm_tensor_t* src,
               const symmcomm_tensor_t* dst, QuantizedSide side, ScaleMode mode,
               cudaStream_t stream) {
  detail::TensorRef const a = tensor_of(src, "src"), b = tensor_of(dst, "dst");
  const detail::TensorRef& q = side == QuantizedSide::Src ? a : b;
  const char* quantized = side == QuantizedSide::Src ? "src" : "dst";
  SYMMCOMM_EXPECTS(q.scale_layout == ScaleLayout::Linear,
                   call << " needs " << quantized << "'s block scales linear, not swizzled128x4");
  SYMMCOMM_EXPECTS(a.count == b.count, "src holds " << a.count << " elements, dst " << b.count);
  for (const Codec& c : table) {
    if (same_class(c.src, a.dtype) && same_class(c.dst, b.dtype)) {
      c.run(a, b, mode, stream);
      return;
    }
  }
  SYMMCOMM_FAIL(call << " of src " << to_string(a.dtype) << " into dst " << to_string(b.dtype)
                     << " is not supported");
}

// A collective entry point: the descriptor from `describe` (its tensors read and checked
// first), then the options, the plan out-parameter and the communicator, in that order; with
// `host_counts`, comm.size() counts from it; then run() and the plan reported.
template <class Describe>
symmcomm_status_t collective(symmcomm_comm_t comm, const symmcomm_options_t* options,
                             symmcomm_stream_t stream, symmcomm_plan_t* plan, Describe&& describe,
                             bool takes_host_counts = false, const size_t* host_counts = nullptr) {
  return guarded([&] {
    detail::CollectiveCall call = describe();
    Options const o = options_of(options);
    check_plan_out(plan);
    const Communicator& c = comm_of(comm);
    if (takes_host_counts) {
      SYMMCOMM_EXPECTS(host_counts != nullptr, "counts is NULL");
      call = detail::with_host_counts(call, host_counts, static_cast<std::size_t>(c.size()));
    }
    report(detail::run(c, call, stream, o), plan);
  });
}

}  // namespace
}  // namespace symmcomm::c_api

using namespace symmcomm::c_api;
using symmcomm::DataType;

extern "C" {

symmcomm_status_t symmcomm_plan_describe(const symmcomm_plan_t* plan, char* text, size_t capacity,
                                         size_t* needed) {
  return guarded([&] {
    SYMMCOMM_EXPECTS(plan != nullptr, "plan is NULL");
    check_plan_out(plan);
    SYMMCOMM_EXPECTS(text != nullptr || capacity == 0, "text is NULL but capacity is " << capacity);
    symmcomm::Plan p;
    std::memcpy(&p, plan->private_data, sizeof p);
    SYMMCOMM_EXPECTS(plan->private_data[kPlanWords - 1] == kPlanMark &&
                         static_cast<int>(p.path) == static_cast<int>(plan->path) &&
                         static_cast<int>(p.why) == static_cast<int>(plan->reason),
                     "plan was not written by a symmcomm collective (or was changed after)");
    std::string const s = p.reason();
    if (needed != nullptr) *needed = s.size() + 1;
    if (capacity > 0) {
      std::size_t const n = std::min(s.size(), capacity - 1);
      std::memcpy(text, s.data(), n);
      text[n] = '\0';
    }
  });
}

const char* symmcomm_enum_name(symmcomm_enum_t kind, int value) {
  static const char* const kStatus[] = {"success",       "invalid-argument", "cuda",     "nccl",
                                        "out-of-memory", "not-symmetric",    "internal", "timeout"};
  static const char* const kPath[] = {"auto", "nccl-symmetric", "lsa-kernel", "fallback"};
  static const char* const kTaken[] = {"nccl-symmetric", "lsa-kernel", "fallback"};
  static const char* const kDtype[] = {"nvfp4", "fp8e4m3", "fp8e5m2", "bf16", "fp32"};
  static const char* const kLayout[] = {"linear", "swizzled128x4"};
  static const char* const kReason[] = {
      "all-symmetric",        "lsa-kernel-faster",          "forced-fallback",
      "no-symmetric-support", "buffer-not-symmetric",       "variable-counts",
      "scaled-reduction",     "lsa-kernel-unavailable",     "staged",
      "fused-quantize",       "nccl-faster-here",           "forced",
      "nccl-cannot",          "lsa-kernel-fuses",           "quantized-send-in-workspace",
      "device-counts",        "device-counts-in-one-launch"};
  static_assert(sizeof kStatus / sizeof *kStatus == SYMMCOMM_ERROR_TIMEOUT + 1);
  static_assert(sizeof kTaken / sizeof *kTaken == SYMMCOMM_TOOK_FALLBACK + 1);
  static_assert(sizeof kReason / sizeof *kReason ==
                SYMMCOMM_REASON_DEVICE_COUNTS_IN_ONE_LAUNCH + 1);
  auto const pick = [value](const auto& table) -> const char* {
    auto const n = static_cast<int>(sizeof table / sizeof *table);
    return value >= 0 && value < n ? table[value] : nullptr;
  };
  int k = 0;
  std::memcpy(&k, &kind, sizeof k);
  switch (k) {
    case SYMMCOMM_ENUM_STATUS:
      return pick(kStatus);
    case SYMMCOMM_ENUM_PATH:
      return pick(kPath);
    case SYMMCOMM_ENUM_PATH_TAKEN:
      return pick(kTaken);
    case SYMMCOMM_ENUM_DTYPE:
      return pick(kDtype);
    case SYMMCOMM_ENUM_SCALE_LAYOUT:
      return pick(kLayout);
    case SYMMCOMM_ENUM_PLAN_REASON:
      return pick(kReason);
    default:
      return nullptr;
  }
}

symmcomm_status_t symmcomm_quantize(const symmcomm_tensor_t* src, const symmcomm_tensor_t* dst,
                                    int compute_scale, symmcomm_stream_t stream) {
  return guarded([&] {
    run_codec("quantize", kQuantize, src, dst, QuantizedSide::Dst,
              compute_scale != 0 ? symmcomm::ScaleMode::Compute : symmcomm::ScaleMode::Given,
              stream);
  });
}

symmcomm_status_t symmcomm_dequantize(const symmcomm_tensor_t* src, const symmcomm_tensor_t* dst,
                                      symmcomm_stream_t stream) {
  return guarded([&] {
    run_codec("dequantize", kDequantize, src, dst, QuantizedSide::Src, symmcomm::ScaleMode::Given,
              stream);
  });
}

symmcomm_status_t symmcomm_all_gather(symmcomm_comm_t comm, const symmcomm_tensor_t* send,
                                      const symmcomm_tensor_t* recv,
                                      const symmcomm_options_t* options, symmcomm_stream_t stream,
                                      symmcomm_plan_t* plan) {
  return collective(comm, options, stream, plan, [&] {
    return detail::gather_call(tensor_of(send, "send"), tensor_of(recv, "recv"));
  });
}

symmcomm_status_t symmcomm_all_gatherv(symmcomm_comm_t comm, const symmcomm_tensor_t* send,
                                       const symmcomm_tensor_t* recv, const size_t* counts,
                                       const symmcomm_options_t* options, symmcomm_stream_t stream,
                                       symmcomm_plan_t* plan) {
  return collective(
      comm, options, stream, plan,
      [&] { return detail::gather_call(tensor_of(send, "send"), tensor_of(recv, "recv")); }, true,
      counts);
}

symmcomm_status_t symmcomm_reduce_scatter(symmcomm_comm_t comm, const symmcomm_tensor_t* send,
                                          const symmcomm_tensor_t* recv,
                                          const symmcomm_options_t* options,
                                          symmcomm_stream_t stream, symmcomm_plan_t* plan) {
  return collective(comm, options, stream, plan, [&] {
    return detail::reduce_scatter_call(tensor_of(send, "send"), tensor_of(recv, "recv"));
  });
}

symmcomm_status_t symmcomm_reduce_scatterv(symmcomm_comm_t comm, const symmcomm_tensor_t* send,
                                           const symmcomm_tensor_t* recv, const size_t* counts,
                                           const symmcomm_options_t* options,
                                           symmcomm_stream_t stream, symmcomm_plan_t* plan) {
  return collective(
      comm, options, stream, plan,
      [&] { return detail::reduce_scatter_call(tensor_of(send, "send"), tensor_of(recv, "recv")); },
      true, counts);
}

symmcomm_status_t symmcomm_quantize_all_gather(symmcomm_comm_t comm, const symmcomm_tensor_t* input,
                                               const float* scale, const symmcomm_tensor_t* recv,
                                               const symmcomm_options_t* options,
                                               symmcomm_stream_t stream, symmcomm_plan_t* plan) {
  return collective(comm, options, stream, plan, [&] {
    return detail::quantize_gather_call(tensor_of(input, "input"), tensor_of(recv, "recv"), scale);
  });
}

symmcomm_status_t symmcomm_all_gatherv_device(symmcomm_comm_t comm, const symmcomm_tensor_t* send,
                                              const symmcomm_tensor_t* recv, size_t row_elements,
                                              const symmcomm_device_counts_t* counts,
                                              const symmcomm_options_t* options,
                                              symmcomm_stream_t stream, symmcomm_plan_t* plan) {
  return collective(comm, options, stream, plan, [&] {
    symmcomm::DeviceCounts const dc = device_counts_of(counts);
    return detail::with_device_counts(
        detail::gather_call(tensor_of(send, "send"), tensor_of(recv, "recv")), dc, row_elements);
  });
}

symmcomm_status_t symmcomm_reduce_scatterv_device(
    symmcomm_comm_t comm, const symmcomm_tensor_t* send, const symmcomm_tensor_t* recv,
    size_t row_elements, const symmcomm_device_counts_t* counts, const symmcomm_options_t* options,
    symmcomm_stream_t stream, symmcomm_plan_t* plan) {
  return collective(comm, options, stream, plan, [&] {
    symmcomm::DeviceCounts const dc = device_counts_of(counts);
    return detail::with_device_counts(
        detail::reduce_scatter_call(tensor_of(send, "send"), tensor_of(recv, "recv")), dc,
        row_elements);
  });
}

symmcomm_status_t symmcomm_device_counts_overflowed(symmcomm_comm_t comm,
                                                    const symmcomm_device_counts_t* counts,
                                                    symmcomm_stream_t stream, int clear,
                                                    int* overflowed) {
  return guarded([&] {
    symmcomm::DeviceCounts const dc = device_counts_of(counts);
    SYMMCOMM_EXPECTS(overflowed != nullptr, "overflowed is NULL");
    *overflowed = symmcomm::overflowed(comm_of(comm), dc, stream, clear != 0) ? 1 : 0;
  });
}

}  // extern "C"
