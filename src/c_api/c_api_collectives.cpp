// The C ABI's codecs, collectives, plans and exported enumeration names (symmcomm/c_api.h):
// each entry point reads its tagged tensors once (c_api_internal.hpp) and dispatches on their
// dtypes to the C++ overload that takes them; the C++ call validates counts, pointers and
// windows and plans the path.

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "c_api_internal.hpp"
#include "symmcomm/c_api.h"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/ragged.hpp"
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

bool is_fp8(DataType d) {
  return d == DataType::Fp8E4M3 || d == DataType::Fp8E5M2;
}
bool is_quantized(DataType d) {
  return d == DataType::Nvfp4 || is_fp8(d);
}

[[noreturn]] void unsupported(const char* call, const Tensor& a, const Tensor& b) {
  SYMMCOMM_FAIL(call << " of " << a.name << " " << to_string(a.dtype) << " into " << b.name << " "
                     << to_string(b.dtype) << " is not supported");
}

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

Tensor tensor_of(const symmcomm_tensor_t* t, const char* name) {
  SYMMCOMM_EXPECTS(t != nullptr, name << " is NULL");
  std::string const n(name);
  auto const dtype = static_cast<DataType>(
      enum_value(t->dtype, kLastDtype, (n + ".dtype").c_str(), "symmcomm_dtype_t"));
  auto const layout = static_cast<ScaleLayout>(enum_value(
      t->scale_layout, kLastLayout, (n + ".scale_layout").c_str(), "symmcomm_scale_layout_t"));
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
  if (!is_quantized(dtype)) {
    SYMMCOMM_EXPECTS(t->scales == nullptr, name << ".scales must be NULL for " << to_string(dtype));
  }
  return Tensor{t, name, dtype, layout};
}

Bf16Span bf16_of(const Tensor& t) {
  return Bf16Span{static_cast<bf16*>(t.t->data), t.t->count};
}
Fp32Span fp32_of(const Tensor& t) {
  return Fp32Span{static_cast<float*>(t.t->data), t.t->count};
}
Fp8View fp8_of(const Tensor& t) {
  return Fp8View{static_cast<std::uint8_t*>(t.t->data), t.t->scales, t.t->count,
                 t.dtype == DataType::Fp8E5M2 ? Fp8Format::E5M2 : Fp8Format::E4M3};
}
Nvfp4View nvfp4_of(const Tensor& t) {
  return Nvfp4View{static_cast<std::uint8_t*>(t.t->data),
                   static_cast<std::uint8_t*>(t.t->block_scales),
                   t.t->scales,
                   t.t->count,
                   t.layout,
                   t.t->row_elements};
}

void require_linear(const Tensor& t, const char* what) {
  SYMMCOMM_EXPECTS(t.layout == ScaleLayout::Linear,
                   what << " needs " << t.name << "'s block scales linear, not swizzled128x4");
}

// What every collective entry point reads first, in this order (so argument errors come before
// the communicator's): its two tensors, its options and its plan out-parameter.
struct CollectiveArgs {
  Tensor a, b;
  Options o;
  const Communicator& c;
};
CollectiveArgs collective_args(symmcomm_comm_t comm, const symmcomm_tensor_t* first,
                               const char* first_name, const symmcomm_tensor_t* recv,
                               const symmcomm_options_t* options, const symmcomm_plan_t* plan) {
  Tensor a = tensor_of(first, first_name);
  Tensor b = tensor_of(recv, "recv");
  Options o = options_of(options);
  check_plan_out(plan);
  return CollectiveArgs{a, b, o, comm_of(comm)};
}

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
    Tensor const a = tensor_of(src, "src"), b = tensor_of(dst, "dst");
    require_linear(b, "quantize");
    SYMMCOMM_EXPECTS(a.t->count == b.t->count,
                     "src holds " << a.t->count << " elements, dst " << b.t->count);
    auto const mode =
        compute_scale != 0 ? symmcomm::ScaleMode::Compute : symmcomm::ScaleMode::Given;
    if (a.dtype == DataType::Bf16 && b.dtype == DataType::Nvfp4) {
      symmcomm::quantize_nvfp4(bf16_of(a).data, nvfp4_of(b), mode, stream);
    } else if (a.dtype == DataType::Fp32 && b.dtype == DataType::Nvfp4) {
      symmcomm::quantize_nvfp4(fp32_of(a).data, nvfp4_of(b), mode, stream);
    } else if (a.dtype == DataType::Bf16 && is_fp8(b.dtype)) {
      symmcomm::quantize_fp8(bf16_of(a).data, fp8_of(b), mode, stream);
    } else if (a.dtype == DataType::Fp32 && is_fp8(b.dtype)) {
      symmcomm::quantize_fp8(fp32_of(a).data, fp8_of(b), mode, stream);
    } else {
      unsupported("quantize", a, b);
    }
  });
}

symmcomm_status_t symmcomm_dequantize(const symmcomm_tensor_t* src, const symmcomm_tensor_t* dst,
                                      symmcomm_stream_t stream) {
  return guarded([&] {
    Tensor const a = tensor_of(src, "src"), b = tensor_of(dst, "dst");
    require_linear(a, "dequantize");
    SYMMCOMM_EXPECTS(a.t->count == b.t->count,
                     "src holds " << a.t->count << " elements, dst " << b.t->count);
    if (a.dtype == DataType::Nvfp4 && b.dtype == DataType::Bf16) {
      symmcomm::dequantize_nvfp4(nvfp4_of(a), bf16_of(b).data, stream);
    } else if (a.dtype == DataType::Nvfp4 && b.dtype == DataType::Fp32) {
      symmcomm::dequantize_nvfp4(nvfp4_of(a), fp32_of(b).data, stream);
    } else if (is_fp8(a.dtype) && b.dtype == DataType::Bf16) {
      symmcomm::dequantize_fp8(fp8_of(a), bf16_of(b).data, stream);
    } else if (is_fp8(a.dtype) && b.dtype == DataType::Fp32) {
      symmcomm::dequantize_fp8(fp8_of(a), fp32_of(b).data, stream);
    } else {
      unsupported("dequantize", a, b);
    }
  });
}

symmcomm_status_t symmcomm_all_gather(symmcomm_comm_t comm, const symmcomm_tensor_t* send,
                                      const symmcomm_tensor_t* recv,
                                      const symmcomm_options_t* options, symmcomm_stream_t stream,
                                      symmcomm_plan_t* plan) {
  return guarded([&] {
    auto const [a, b, o, c] = collective_args(comm, send, "send", recv, options, plan);
    require_linear(a, "all_gather");
    SYMMCOMM_EXPECTS(a.dtype == b.dtype, "all_gather: send is " << to_string(a.dtype) << ", recv "
                                                                << to_string(b.dtype));
    if (a.dtype == DataType::Bf16) {
      report(symmcomm::all_gather(c, bf16_of(a), bf16_of(b), stream, o), plan);
    } else if (is_fp8(a.dtype)) {
      report(symmcomm::all_gather(c, fp8_of(a), fp8_of(b), stream, o), plan);
    } else if (a.dtype == DataType::Nvfp4) {
      report(symmcomm::all_gather(c, nvfp4_of(a), nvfp4_of(b), stream, o), plan);
    } else {
      unsupported("all_gather", a, b);
    }
  });
}

symmcomm_status_t symmcomm_all_gatherv(symmcomm_comm_t comm, const symmcomm_tensor_t* send,
                                       const symmcomm_tensor_t* recv, const size_t* counts,
                                       const symmcomm_options_t* options, symmcomm_stream_t stream,
                                       symmcomm_plan_t* plan) {
  return guarded([&] {
    auto const [a, b, o, c] = collective_args(comm, send, "send", recv, options, plan);
    std::vector<std::size_t> const n = counts_of(c, counts);
    require_linear(a, "all_gatherv");
    SYMMCOMM_EXPECTS(a.dtype == b.dtype, "all_gatherv: send is " << to_string(a.dtype) << ", recv "
                                                                 << to_string(b.dtype));
    if (a.dtype == DataType::Bf16) {
      report(symmcomm::all_gatherv(c, bf16_of(a), bf16_of(b), n, stream, o), plan);
    } else if (is_fp8(a.dtype)) {
      report(symmcomm::all_gatherv(c, fp8_of(a), fp8_of(b), n, stream, o), plan);
    } else if (a.dtype == DataType::Nvfp4) {
      report(symmcomm::all_gatherv(c, nvfp4_of(a), nvfp4_of(b), n, stream, o), plan);
    } else {
      unsupported("all_gatherv", a, b);
    }
  });
}

symmcomm_status_t symmcomm_reduce_scatter(symmcomm_comm_t comm, const symmcomm_tensor_t* send,
                                          const symmcomm_tensor_t* recv,
                                          const symmcomm_options_t* options,
                                          symmcomm_stream_t stream, symmcomm_plan_t* plan) {
  return guarded([&] {
    auto const [a, b, o, c] = collective_args(comm, send, "send", recv, options, plan);
    require_linear(a, "reduce_scatter");
    require_linear(b, "reduce_scatter");
    DataType const x = a.dtype, y = b.dtype;
    if (x == DataType::Bf16 && y == DataType::Bf16) {
      report(symmcomm::reduce_scatter(c, bf16_of(a), bf16_of(b), stream, o), plan);
    } else if (x == DataType::Fp32 && y == DataType::Fp32) {
      report(symmcomm::reduce_scatter(c, fp32_of(a), fp32_of(b), stream, o), plan);
    } else if (x == DataType::Nvfp4 && y == DataType::Bf16) {
      report(symmcomm::reduce_scatter(c, nvfp4_of(a), bf16_of(b), stream, o), plan);
    } else if (x == DataType::Nvfp4 && y == DataType::Fp32) {
      report(symmcomm::reduce_scatter(c, nvfp4_of(a), fp32_of(b), stream, o), plan);
    } else if (x == DataType::Nvfp4 && y == DataType::Nvfp4) {
      report(symmcomm::reduce_scatter(c, nvfp4_of(a), nvfp4_of(b), stream, o), plan);
    } else if (is_fp8(x) && y == DataType::Bf16) {
      report(symmcomm::reduce_scatter(c, fp8_of(a), bf16_of(b), stream, o), plan);
    } else if (is_fp8(x) && y == DataType::Fp32) {
      report(symmcomm::reduce_scatter(c, fp8_of(a), fp32_of(b), stream, o), plan);
    } else if (is_fp8(x) && x == y) {
      report(symmcomm::reduce_scatter(c, fp8_of(a), fp8_of(b), stream, o), plan);
    } else {
      unsupported("reduce_scatter", a, b);
    }
  });
}

symmcomm_status_t symmcomm_reduce_scatterv(symmcomm_comm_t comm, const symmcomm_tensor_t* send,
                                           const symmcomm_tensor_t* recv, const size_t* counts,
                                           const symmcomm_options_t* options,
                                           symmcomm_stream_t stream, symmcomm_plan_t* plan) {
  return guarded([&] {
    auto const [a, b, o, c] = collective_args(comm, send, "send", recv, options, plan);
    std::vector<std::size_t> const n = counts_of(c, counts);
    require_linear(a, "reduce_scatterv");
    if (a.dtype == DataType::Bf16 && b.dtype == DataType::Bf16) {
      report(symmcomm::reduce_scatterv(c, bf16_of(a), bf16_of(b), n, stream, o), plan);
    } else if (a.dtype == DataType::Nvfp4 && b.dtype == DataType::Bf16) {
      report(symmcomm::reduce_scatterv(c, nvfp4_of(a), bf16_of(b), n, stream, o), plan);
    } else if (is_fp8(a.dtype) && b.dtype == DataType::Bf16) {
      report(symmcomm::reduce_scatterv(c, fp8_of(a), bf16_of(b), n, stream, o), plan);
    } else {
      unsupported("reduce_scatterv", a, b);
    }
  });
}

symmcomm_status_t symmcomm_quantize_all_gather(symmcomm_comm_t comm, const symmcomm_tensor_t* input,
                                               const float* scale, const symmcomm_tensor_t* recv,
                                               const symmcomm_options_t* options,
                                               symmcomm_stream_t stream, symmcomm_plan_t* plan) {
  return guarded([&] {
    auto const [a, b, o, c] = collective_args(comm, input, "input", recv, options, plan);
    if (a.dtype == DataType::Bf16 && b.dtype == DataType::Nvfp4) {
      report(symmcomm::quantize_all_gather(c, bf16_of(a), nvfp4_of(b), scale, stream, o), plan);
    } else if (a.dtype == DataType::Bf16 && is_fp8(b.dtype)) {
      report(symmcomm::quantize_all_gather(c, bf16_of(a), fp8_of(b), scale, stream, o), plan);
    } else {
      unsupported("quantize_all_gather", a, b);
    }
  });
}

symmcomm_status_t symmcomm_all_gatherv_device(symmcomm_comm_t comm, const symmcomm_tensor_t* send,
                                              const symmcomm_tensor_t* recv, size_t row_elements,
                                              const symmcomm_device_counts_t* counts,
                                              const symmcomm_options_t* options,
                                              symmcomm_stream_t stream, symmcomm_plan_t* plan) {
  return guarded([&] {
    symmcomm::DeviceCounts const dc = device_counts_of(counts);
    auto const [a, b, o, c] = collective_args(comm, send, "send", recv, options, plan);
    require_linear(a, "all_gatherv (device counts)");  // recv may be swizzled (NVFP4)
    SYMMCOMM_EXPECTS(a.dtype == b.dtype, "all_gatherv (device counts): send is "
                                             << to_string(a.dtype) << ", recv "
                                             << to_string(b.dtype));
    if (a.dtype == DataType::Bf16) {
      report(symmcomm::all_gatherv(c, bf16_of(a), bf16_of(b), row_elements, dc, stream, o), plan);
    } else if (is_fp8(a.dtype)) {
      report(symmcomm::all_gatherv(c, fp8_of(a), fp8_of(b), row_elements, dc, stream, o), plan);
    } else if (a.dtype == DataType::Nvfp4) {
      report(symmcomm::all_gatherv(c, nvfp4_of(a), nvfp4_of(b), row_elements, dc, stream, o), plan);
    } else {
      unsupported("all_gatherv (device counts)", a, b);
    }
  });
}

symmcomm_status_t symmcomm_reduce_scatterv_device(
    symmcomm_comm_t comm, const symmcomm_tensor_t* send, const symmcomm_tensor_t* recv,
    size_t row_elements, const symmcomm_device_counts_t* counts, const symmcomm_options_t* options,
    symmcomm_stream_t stream, symmcomm_plan_t* plan) {
  return guarded([&] {
    symmcomm::DeviceCounts const dc = device_counts_of(counts);
    auto const [a, b, o, c] = collective_args(comm, send, "send", recv, options, plan);
    require_linear(a, "reduce_scatterv (device counts)");
    if (a.dtype == DataType::Bf16 && b.dtype == DataType::Bf16) {
      report(symmcomm::reduce_scatterv(c, bf16_of(a), bf16_of(b), row_elements, dc, stream, o),
             plan);
    } else if (a.dtype == DataType::Nvfp4 && b.dtype == DataType::Bf16) {
      report(symmcomm::reduce_scatterv(c, nvfp4_of(a), bf16_of(b), row_elements, dc, stream, o),
             plan);
    } else {
      unsupported("reduce_scatterv (device counts)", a, b);
    }
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
