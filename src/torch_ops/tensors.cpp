#include "tensors.hpp"

#include <c10/cuda/CUDAStream.h>

#include <cstring>

namespace symmcomm::torch_ops {
namespace {

struct DtypeTable {
  Kind kind[static_cast<int>(c10::ScalarType::NumOptions)] = {};
  const char* python_name[static_cast<int>(c10::ScalarType::NumOptions)] = {};
  Optional<c10::ScalarType> e4m3;

  DtypeTable() {
    struct Known {
      const char* cpp;
      const char* python;
      Kind kind;
    };
    static constexpr Known known[] = {{"BFloat16", "bfloat16", kBf16},
                                      {"Float", "float32", kF32},
                                      {"Byte", "uint8", kBytes},
                                      {"Char", "int8", kBytes},
                                      {"Float4_e2m1fn_x2", "float4_e2m1fn_x2", kFp4x2},
                                      {"Float8_e4m3fn", "float8_e4m3fn", kE4m3},
                                      {"Float8_e5m2", "float8_e5m2", kE5m2},
                                      {"Half", "float16", kOther},
                                      {"Double", "float64", kOther},
                                      {"Short", "int16", kOther},
                                      {"Int", "int32", kI32},
                                      {"Long", "int64", kOther},
                                      {"Bool", "bool", kOther}};
    for (int i = 0; i < static_cast<int>(c10::ScalarType::NumOptions); ++i) {
      auto const st = static_cast<c10::ScalarType>(i);
      const char* name = c10::toString(st);
      python_name[i] = name;
      for (auto const& k : known) {
        if (std::strcmp(name, k.cpp) != 0) continue;
        kind[i] = k.kind;
        python_name[i] = k.python;
        if (k.kind == kE4m3) e4m3 = st;
      }
    }
  }
};

const DtypeTable& dtypes() {
  static const DtypeTable table;
  return table;
}

}  // namespace

Kind kind_of(const at::Tensor& t) {
  return dtypes().kind[static_cast<int>(t.scalar_type())];
}

const char* python_name(const at::Tensor& t) {
  return dtypes().python_name[static_cast<int>(t.scalar_type())];
}

c10::ScalarType float8_e4m3fn() {
  auto const& e4m3 = dtypes().e4m3;
  TORCH_CHECK(e4m3.has_value(), "symmcomm: this PyTorch (", TORCH_VERSION,
              ") has no float8_e4m3fn for NVFP4 block scales");
  return *e4m3;
}

// ---- checks -------------------------------------------------------------------------------

// scripts/check_torch_ops_cpu.sh builds these files with SYMMCOMM_TORCH_CPU_CHECK, against a
// PyTorch without CUDA: there CPU tensors stand for the tensors of "device -1", so that every
// check after the device's runs on CPU tensors. The library itself never defines it.
#ifdef SYMMCOMM_TORCH_CPU_CHECK
constexpr bool kCpuStandsIn = true;
#else
constexpr bool kCpuStandsIn = false;
#endif

void* checked(const at::Tensor& t, const char* name, const char* part, const Allowed& allowed,
              int device) {
  TORCH_CHECK_VALUE(t.defined(), name, part, " must be a CUDA tensor, got None");
  bool const stands_in = kCpuStandsIn && device == -1 && t.is_cpu();
  TORCH_CHECK_VALUE(t.is_cuda() || stands_in, name, part, " must be on a CUDA device, got ",
                    t.device());
  TORCH_CHECK_VALUE(t.get_device() == device, name, part, " is on cuda:", t.get_device(),
                    ", but the communicator's rank is on cuda:", device);
  TORCH_CHECK_VALUE(t.is_contiguous(), name, part, " must be contiguous");
  TORCH_CHECK_VALUE((kind_of(t) & allowed.kinds) != 0, name, part, " has dtype ", python_name(t),
                    "; expected ", allowed.text);
  return t.data_ptr();
}

void check_row_elements(const Optional<int64_t>& row_elements) {
  if (row_elements.has_value()) {
    TORCH_CHECK_VALUE(*row_elements >= 1, "row_elements must be >= 1, got ", *row_elements);
  }
}

void check_rows(const at::Tensor& t, const char* name) {
  TORCH_CHECK_VALUE(t.dim() >= 1, name,
                    " must have at least one dimension (rows), got a 0-d tensor");
}

int64_t swizzled_scale_bytes(int64_t rows, int64_t scale_cols) {
  return (rows + 127) / 128 * 128 * ((scale_cols + 3) / 4 * 4);
}

symmcomm_tensor_t plain(const at::Tensor& t, const char* name, const Allowed& allowed, int device) {
  void* data = checked(t, name, "", allowed, device);
  auto const dtype = kind_of(t) == kF32 ? SYMMCOMM_DTYPE_FP32 : SYMMCOMM_DTYPE_BF16;
  return {dtype,   SYMMCOMM_SCALE_LAYOUT_LINEAR,   data, nullptr,
          nullptr, static_cast<size_t>(t.numel()), 0};
}

symmcomm_tensor_t nvfp4(const at::Tensor& data, const at::Tensor& block_scales,
                        const at::Tensor& global_scale, const char* name, int device,
                        int64_t scales_expected, const Optional<int64_t>& row_elements) {
  void* d = checked(data, name, ".data", kNvfp4Data, device);
  void* s = checked(block_scales, name, ".block_scales", kBlockScales, device);
  void* g = checked(global_scale, name, ".global_scale", kF32Only, device);
  int64_t const n_data = data.numel();
  int64_t const n_scales = block_scales.numel();
  int64_t const count = 2 * n_data;
  auto layout = SYMMCOMM_SCALE_LAYOUT_LINEAR;
  if (row_elements.has_value()) {
    check_row_elements(row_elements);
    int64_t const re = *row_elements;
    layout = SYMMCOMM_SCALE_LAYOUT_SWIZZLED_128X4;
    // The scale tensor's size, for rows the library will accept (it refuses the others).
    if (re % kNvfp4Block == 0 && count % re == 0) {
      int64_t const rows = count / re;
      int64_t const need = swizzled_scale_bytes(rows, re / kNvfp4Block);
      TORCH_CHECK_VALUE(n_scales >= need, name, ".block_scales has ", n_scales,
                        " elements; swizzled scales of ", rows, " rows of ", re, " need ", need,
                        " (symmcomm.swizzled_scale_bytes)");
    }
  } else {
    TORCH_CHECK_VALUE(n_scales == count / kNvfp4Block, name, ".block_scales has ", n_scales,
                      " elements; ", n_data, " data bytes need ", count / kNvfp4Block,
                      " (one per 16 elements)");
  }
  TORCH_CHECK_VALUE(global_scale.numel() >= scales_expected, name, ".global_scale has ",
                    global_scale.numel(), " elements; expected ", scales_expected);
  return {SYMMCOMM_DTYPE_NVFP4,
          layout,
          d,
          s,
          static_cast<float*>(g),
          static_cast<size_t>(count),
          static_cast<size_t>(row_elements.value_or(0))};
}

symmcomm_tensor_t fp8(const at::Tensor& data, const at::Tensor& scale, const char* name, int device,
                      int64_t scales_expected) {
  void* d = checked(data, name, ".data", kFp8Data, device);
  void* s = checked(scale, name, ".scale", kF32Only, device);
  TORCH_CHECK_VALUE(scale.numel() >= scales_expected, name, ".scale has ", scale.numel(),
                    " elements; expected ", scales_expected);
  auto const dtype = kind_of(data) == kE5m2 ? SYMMCOMM_DTYPE_FP8_E5M2 : SYMMCOMM_DTYPE_FP8_E4M3;
  return {dtype,   SYMMCOMM_SCALE_LAYOUT_LINEAR, d,
          nullptr, static_cast<float*>(s),       static_cast<size_t>(data.numel()),
          0};
}

void check_same_count(const symmcomm_tensor_t& src, const symmcomm_tensor_t& dst) {
  TORCH_CHECK_VALUE(src.count == dst.count, "dst holds ", dst.count, " elements, src ", src.count);
}

int cuda_index_of(const at::Tensor& t) {
  return t.is_cuda() ? static_cast<int>(t.get_device()) : -1;
}

symmcomm_device_counts_t device_counts(const at::Tensor& count, const at::Tensor& counts,
                                       const at::Tensor& offsets, const at::Tensor& overflow,
                                       int size, int device, size_t capacity) {
  struct Part {
    const at::Tensor* t;
    const char* name;
    int64_t elements;
  };
  Part const parts[] = {{&count, "count", 1},
                        {&counts, "counts", size},
                        {&offsets, "offsets", size},
                        {&overflow, "overflow", 1}};
  void* ptr[4] = {};
  for (int i = 0; i < 4; ++i) {
    ptr[i] = checked(*parts[i].t, "counts.", parts[i].name, kInt32Only, device);
    TORCH_CHECK_VALUE(parts[i].t->numel() == parts[i].elements, "counts.", parts[i].name, " has ",
                      parts[i].t->numel(), " elements; expected ", parts[i].elements);
  }
  return {static_cast<const int32_t*>(ptr[0]), capacity, static_cast<int32_t*>(ptr[1]),
          static_cast<int32_t*>(ptr[2]), static_cast<int32_t*>(ptr[3])};
}

void check(symmcomm_status_t status) {
  if (status == SYMMCOMM_SUCCESS) return;
  const char* text = symmcomm_last_error();
  TORCH_CHECK_VALUE(status != SYMMCOMM_ERROR_INVALID_ARGUMENT, text);
  const char* name = symmcomm_enum_name(SYMMCOMM_ENUM_STATUS, static_cast<int>(status));
  TORCH_CHECK(false, "symmcomm (", name ? name : "unknown status", "): ", text);
}

symmcomm_stream_t stream_of(int device) {
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
}

}  // namespace symmcomm::torch_ops
