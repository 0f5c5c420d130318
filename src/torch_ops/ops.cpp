// symmcomm's PyTorch operators in C++ (every operator of symmcomm.ops.OPS): PyTorch's
// dispatcher reaches the C ABI without a Python frame. Each operator does what its Python
// implementation in symmcomm.ops does, with the same output shapes (the Python fakes size both)
// and the same argument checks and texts: it checks what only PyTorch knows (device,
// contiguity, dtype, the sizes behind each pointer), allocates its outputs, and calls
// libsymmcomm_c.so on the current CUDA stream of the communicator's device (a codec: of its
// tensors' device); how counts relate is the library's one check. Invalid arguments raise
// ValueError (the Python implementations' symmcomm.LogicError is one), other failures
// RuntimeError naming the library's status.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

#include "communicators.hpp"
#include "ops.hpp"
#include "symmcomm_torch.h"

namespace symmcomm::torch_ops {
namespace {

// PyTorch 2.6 made c10::string_view std::string_view and deprecated the name; before it, schema
// inference knew only c10's types.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
using Str = std::string_view;
template <class T>
using Optional = std::optional<T>;
#else
using Str = c10::string_view;
template <class T>
using Optional = c10::optional<T>;
#endif

using Tensors3 = std::tuple<at::Tensor, at::Tensor, at::Tensor>;
using Shape = c10::SmallVector<int64_t, 8>;

constexpr int64_t kNvfp4Block = 16;

// ---- dtypes -------------------------------------------------------------------------------
// Kinds of element type the checks accept, found by ScalarType name once: float4 and float8
// exist only in newer PyTorch releases, and this file builds against several.
enum Kind : unsigned {
  kOther = 0,
  kBf16 = 1u << 0,
  kF32 = 1u << 1,
  kBytes = 1u << 2,  // uint8, int8: packed codes of any format
  kFp4x2 = 1u << 3,
  kE4m3 = 1u << 4,
  kE5m2 = 1u << 5,
  kI32 = 1u << 6,
};

/// Accepted kinds and how the Python implementations list them in an error.
struct Allowed {
  unsigned kinds;
  const char* text;
};
constexpr Allowed kBf16Only{kBf16, "bfloat16"};
constexpr Allowed kF32Only{kF32, "float32"};
constexpr Allowed kBf16OrF32{kBf16 | kF32, "bfloat16 or float32"};
constexpr Allowed kNvfp4Data{kFp4x2 | kBytes, "float4_e2m1fn_x2 or uint8 or int8"};
constexpr Allowed kBlockScales{kE4m3 | kBytes, "float8_e4m3fn or uint8 or int8"};
constexpr Allowed kFp8Data{kE4m3 | kE5m2 | kBytes, "float8_e4m3fn or float8_e5m2 or uint8 or int8"};
constexpr Allowed kInt32Only{kI32, "int32"};

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

/// The data pointer of `t` (named `name` + `part`, e.g. "send" ".data"), checked as the Python
/// implementations check it: a CUDA tensor on the communicator's device, contiguous, of an
/// accepted dtype.
void* checked(const at::Tensor& t, const char* name, const char* part, const Allowed& allowed,
              int device) {
  TORCH_CHECK_VALUE(t.defined(), name, part, " must be a CUDA tensor, got None");
  TORCH_CHECK_VALUE(t.is_cuda(), name, part, " must be on a CUDA device, got ", t.device());
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
                    " must have at least one dimension (rows), got a 0-d "
                    "tensor");
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

/// An NVFP4 tensor; with row_elements, block scales in the swizzled layout of rows of that many
/// elements (a gather's receive side).
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

/// Raises the library's failure: ValueError for an invalid argument, RuntimeError otherwise.
void check(symmcomm_status_t status) {
  if (status == SYMMCOMM_SUCCESS) return;
  const char* text = symmcomm_last_error();
  TORCH_CHECK_VALUE(status != SYMMCOMM_ERROR_INVALID_ARGUMENT, text);
  const char* name = symmcomm_enum_name(SYMMCOMM_ENUM_STATUS, static_cast<int>(status));
  TORCH_CHECK(false, "symmcomm (", name ? name : "unknown status", "): ", text);
}

Communicators::Lease lease(Str group) {
  std::string_view const name(group.data(), group.size());
  auto entry = communicators().find(name);
  TORCH_CHECK_VALUE(static_cast<bool>(entry), communicators().unknown(name));
  return entry;
}

symmcomm_stream_t stream_of(int device) {
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
}

symmcomm_stream_t stream_of(const Communicator& c) {
  return stream_of(c.device);
}

// ---- shapes (as symmcomm.ops' fakes compute them) -------------------------------------------

Shape shape_of(const at::Tensor& t) {
  return Shape(t.sizes().begin(), t.sizes().end());
}

/// `t`'s shape with dim 0 replaced by `rows`.
Shape with_rows(const at::Tensor& t, int64_t rows) {
  Shape s = shape_of(t);
  if (s.empty()) return Shape{rows};
  s[0] = rows;
  return s;
}

int64_t row_elements_of(const at::Tensor& t) {
  int64_t n = 1;
  for (int64_t i = 1; i < t.dim(); ++i) n *= t.size(i);
  return n;
}

/// This rank's shard of `t` split along dim 0 into `size` parts (`what` names dim 0 in the
/// error).
Shape shard(const at::Tensor& t, int64_t size, const char* what) {
  TORCH_CHECK(t.size(0) % size == 0, what, " (", t.size(0),
              ") is not divisible by the communicator's size ", size);
  return with_rows(t, t.size(0) / size);
}

/// The receive tensors of an NVFP4 gather of `rows_total` data rows.
Tensors3 nvfp4_gathered(const at::Tensor& data, const at::Tensor& block_scales,
                        const at::Tensor& global_scale, int64_t size, int64_t rows_total,
                        const Optional<int64_t>& row_elements) {
  check_row_elements(row_elements);
  at::Tensor scales;
  if (row_elements.has_value()) {
    int64_t const elements_total = rows_total * row_elements_of(data) * 2;
    int64_t const re = *row_elements;
    scales = at::empty({swizzled_scale_bytes(elements_total / re, re / kNvfp4Block)},
                       block_scales.options());
  } else {
    scales = at::empty(with_rows(block_scales, rows_total), block_scales.options());
  }
  return {at::empty(with_rows(data, rows_total), data.options()), std::move(scales),
          at::empty({size}, global_scale.options())};
}

// ---- operators (schemas in symmcomm.ops.OPS) ------------------------------------------------

void gather_bf16(const Communicator& c, const at::Tensor& x, const at::Tensor& out) {
  at::Tensor const send = x.contiguous();
  auto const a = plain(send, "send", kBf16Only, c.device);
  auto const b = plain(out, "recv", kBf16Only, c.device);
  check(symmcomm_all_gather(c.comm, &a, &b, nullptr, stream_of(c), nullptr));
}

at::Tensor all_gather(const at::Tensor& x, Str group) {
  auto const c = lease(group);
  check_rows(x, "x");
  at::Tensor out = at::empty(with_rows(x, x.size(0) * c->size), x.options());
  gather_bf16(*c, x, out);
  return out;
}

void all_gather_out(const at::Tensor& x, const at::Tensor& out, Str group) {
  auto const c = lease(group);
  gather_bf16(*c, x, out);
}

void gather_nvfp4(const Communicator& c, const at::Tensor& data, const at::Tensor& block_scales,
                  const at::Tensor& global_scale, const Tensors3& out,
                  const Optional<int64_t>& row_elements) {
  at::Tensor const send_data = data.contiguous();
  at::Tensor const send_scales = block_scales.contiguous();
  auto const a = nvfp4(send_data, send_scales, global_scale, "send", c.device, 1, {});
  auto const b = nvfp4(std::get<0>(out), std::get<1>(out), std::get<2>(out), "recv", c.device,
                       c.size, row_elements);
  check(symmcomm_all_gather(c.comm, &a, &b, nullptr, stream_of(c), nullptr));
}

Tensors3 all_gather_nvfp4(const at::Tensor& data, const at::Tensor& block_scales,
                          const at::Tensor& global_scale, Str group,
                          Optional<int64_t> row_elements) {
  auto const c = lease(group);
  check_rows(data, "data");
  Tensors3 out = nvfp4_gathered(data, block_scales, global_scale, c->size, data.size(0) * c->size,
                                row_elements);
  gather_nvfp4(*c, data, block_scales, global_scale, out, row_elements);
  return out;
}

void all_gather_nvfp4_out(const at::Tensor& data, const at::Tensor& block_scales,
                          const at::Tensor& global_scale, const at::Tensor& out_data,
                          const at::Tensor& out_block_scales, const at::Tensor& out_global_scale,
                          Str group, Optional<int64_t> row_elements) {
  auto const c = lease(group);
  gather_nvfp4(*c, data, block_scales, global_scale,
               Tensors3(out_data, out_block_scales, out_global_scale), row_elements);
}

std::tuple<at::Tensor, at::Tensor> all_gather_fp8(const at::Tensor& data, const at::Tensor& scale,
                                                  Str group) {
  auto const c = lease(group);
  check_rows(data, "data");
  at::Tensor out_data = at::empty(with_rows(data, data.size(0) * c->size), data.options());
  at::Tensor out_scale = at::empty({c->size}, scale.options());
  at::Tensor const send = data.contiguous();
  auto const a = fp8(send, scale, "send", c->device, 1);
  auto const b = fp8(out_data, out_scale, "recv", c->device, c->size);
  TORCH_CHECK_VALUE(a.dtype == b.dtype, "send and recv have different FP8 formats");
  check(symmcomm_all_gather(c->comm, &a, &b, nullptr, stream_of(*c), nullptr));
  return {std::move(out_data), std::move(out_scale)};
}

void reduce_bf16(const Communicator& c, const at::Tensor& x, const at::Tensor& out) {
  at::Tensor const send = x.contiguous();
  auto const a = plain(send, "send", kBf16Only, c.device);
  auto const b = plain(out, "recv", kBf16Only, c.device);
  check(symmcomm_reduce_scatter(c.comm, &a, &b, nullptr, stream_of(c), nullptr));
}

at::Tensor reduce_scatter(const at::Tensor& x, Str group) {
  auto const c = lease(group);
  check_rows(x, "x");
  at::Tensor out = at::empty(shard(x, c->size, "dim 0"), x.options());
  reduce_bf16(*c, x, out);
  return out;
}

void reduce_scatter_out(const at::Tensor& x, const at::Tensor& out, Str group) {
  auto const c = lease(group);
  reduce_bf16(*c, x, out);
}

/// The shard of the logical [rows, hidden] tensor whose NVFP4 data is [rows, hidden / 2]
/// (1-D data: n / 2 bytes, n elements).
Shape nvfp4_sum_shape(const at::Tensor& data, int64_t size) {
  check_rows(data, "data");
  TORCH_CHECK(data.size(0) % size == 0, "data's dim 0 (", data.size(0),
              ") is not divisible by the communicator's size ", size);
  if (data.dim() == 1) return Shape{data.size(0) * 2 / size};
  Shape s = shape_of(data);
  s[0] /= size;
  s.back() *= 2;
  return s;
}

at::Tensor reduce_scatter_nvfp4(const at::Tensor& data, const at::Tensor& block_scales,
                                const at::Tensor& global_scale, Str group,
                                c10::ScalarType out_dtype) {
  auto const c = lease(group);
  at::Tensor out = at::empty(nvfp4_sum_shape(data, c->size), data.options().dtype(out_dtype));
  at::Tensor const send_data = data.contiguous();
  at::Tensor const send_scales = block_scales.contiguous();
  auto const a = nvfp4(send_data, send_scales, global_scale, "send", c->device, 1, {});
  auto const b = plain(out, "recv", kBf16OrF32, c->device);
  check(symmcomm_reduce_scatter(c->comm, &a, &b, nullptr, stream_of(*c), nullptr));
  return out;
}

at::Tensor reduce_scatter_fp8(const at::Tensor& data, const at::Tensor& scale, Str group,
                              c10::ScalarType out_dtype) {
  auto const c = lease(group);
  check_rows(data, "data");
  at::Tensor out = at::empty(shard(data, c->size, "dim 0"), data.options().dtype(out_dtype));
  at::Tensor const send = data.contiguous();
  auto const a = fp8(send, scale, "send", c->device, 1);
  auto const b = plain(out, "recv", kBf16OrF32, c->device);
  check(symmcomm_reduce_scatter(c->comm, &a, &b, nullptr, stream_of(*c), nullptr));
  return out;
}

/// A v-collective's host counts as the C ABI takes them: `counts` rows per rank (one per rank)
/// times `per_row` elements each, checked as the Python implementations check them.
c10::SmallVector<size_t, 16> elements_of(c10::IntArrayRef counts, int64_t per_row, int size) {
  c10::SmallVector<int64_t, 16> elements;
  for (int64_t const c : counts) elements.push_back(c * per_row);
  if (static_cast<int64_t>(counts.size()) != size) {
    std::string list = "[";
    for (size_t i = 0; i < elements.size(); ++i) {
      list += (i ? ", " : "") + std::to_string(elements[i]);
    }
    TORCH_CHECK_VALUE(false, "counts must be a list of comm.size (", size, ") ints, got ",
                      list + "]");
  }
  c10::SmallVector<size_t, 16> out;
  for (size_t i = 0; i < elements.size(); ++i) {
    TORCH_CHECK_VALUE(elements[i] >= 0, "counts[", i, "] must be >= 0, got ", elements[i]);
    out.push_back(static_cast<size_t>(elements[i]));
  }
  return out;
}

int64_t sum_of(c10::IntArrayRef counts) {
  int64_t total = 0;
  for (int64_t const c : counts) total += c;
  return total;
}

at::Tensor all_gatherv(const at::Tensor& x, c10::IntArrayRef counts, Str group) {
  auto const c = lease(group);
  check_rows(x, "x");
  at::Tensor out = at::empty(with_rows(x, sum_of(counts)), x.options());
  auto const elements = elements_of(counts, row_elements_of(x), c->size);
  at::Tensor const send = x.contiguous();
  auto const a = plain(send, "send", kBf16Only, c->device);
  auto const b = plain(out, "recv", kBf16Only, c->device);
  check(symmcomm_all_gatherv(c->comm, &a, &b, elements.data(), nullptr, stream_of(*c), nullptr));
  return out;
}

Tensors3 all_gatherv_nvfp4(const at::Tensor& data, const at::Tensor& block_scales,
                           const at::Tensor& global_scale, c10::IntArrayRef counts, Str group,
                           Optional<int64_t> row_elements) {
  auto const c = lease(group);
  check_rows(data, "data");
  Tensors3 out =
      nvfp4_gathered(data, block_scales, global_scale, c->size, sum_of(counts), row_elements);
  auto const elements = elements_of(counts, row_elements_of(data) * 2, c->size);
  at::Tensor const send_data = data.contiguous();
  at::Tensor const send_scales = block_scales.contiguous();
  auto const a = nvfp4(send_data, send_scales, global_scale, "send", c->device, 1, {});
  auto const b = nvfp4(std::get<0>(out), std::get<1>(out), std::get<2>(out), "recv", c->device,
                       c->size, row_elements);
  check(symmcomm_all_gatherv(c->comm, &a, &b, elements.data(), nullptr, stream_of(*c), nullptr));
  return out;
}

at::Tensor reduce_scatterv(const at::Tensor& x, c10::IntArrayRef counts, Str group) {
  auto const c = lease(group);
  check_rows(x, "x");
  TORCH_CHECK_VALUE(static_cast<int64_t>(counts.size()) > c->rank, "counts has ", counts.size(),
                    " entries; rank ", c->rank, " needs its own");
  at::Tensor out = at::empty(with_rows(x, counts[static_cast<size_t>(c->rank)]), x.options());
  auto const elements = elements_of(counts, row_elements_of(x), c->size);
  at::Tensor const send = x.contiguous();
  auto const a = plain(send, "send", kBf16Only, c->device);
  auto const b = plain(out, "recv", kBf16Only, c->device);
  check(
      symmcomm_reduce_scatterv(c->comm, &a, &b, elements.data(), nullptr, stream_of(*c), nullptr));
  return out;
}

Tensors3 quantize_all_gather_nvfp4(const at::Tensor& x, const Optional<at::Tensor>& scale,
                                   Str group, Optional<int64_t> row_elements) {
  auto const c = lease(group);
  check_rows(x, "x");
  check_row_elements(row_elements);
  int64_t const size = c->size;
  // Per rank: data [..., hidden / 2] bytes, block scales [..., hidden / 16].
  Shape data_shape = shape_of(x);
  Shape scale_shape = shape_of(x);
  int64_t const hidden = data_shape.back();
  data_shape.back() = hidden / 2;
  scale_shape.back() = hidden / kNvfp4Block;
  data_shape[0] *= size;
  scale_shape[0] *= size;
  at::Tensor data = at::empty(data_shape, x.options().dtype(at::kByte));
  at::Tensor block_scales;
  if (row_elements.has_value()) {
    int64_t const re = *row_elements;
    block_scales = at::empty({swizzled_scale_bytes(x.numel() * size / re, re / kNvfp4Block)},
                             x.options().dtype(at::kByte));
  } else {
    block_scales = at::empty(scale_shape, x.options().dtype(float8_e4m3fn()));
  }
  at::Tensor global_scale = at::empty({size}, x.options().dtype(at::kFloat));
  at::Tensor const input = x.contiguous();
  auto const a = plain(input, "input", kBf16Only, c->device);
  const float* scale_ptr = nullptr;
  if (scale.has_value() && scale->defined()) {
    scale_ptr = static_cast<const float*>(checked(*scale, "scale", "", kF32Only, c->device));
    TORCH_CHECK_VALUE(scale->numel() >= 1, "scale is empty");
  }
  auto const b = nvfp4(data, block_scales, global_scale, "recv", c->device, size, row_elements);
  check(symmcomm_quantize_all_gather(c->comm, &a, scale_ptr, &b, nullptr, stream_of(*c), nullptr));
  return {std::move(data), std::move(block_scales), std::move(global_scale)};
}

Tensors3 reduce_scatter_nvfp4_q(const at::Tensor& data, const at::Tensor& block_scales,
                                const at::Tensor& global_scale, Str group) {
  auto const c = lease(group);
  check_rows(data, "data");
  check_rows(block_scales, "block_scales");
  Tensors3 out(at::empty(shard(data, c->size, "dim 0"), data.options()),
               at::empty(shard(block_scales, c->size, "dim 0"), block_scales.options()),
               at::empty({1}, global_scale.options()));
  at::Tensor const send_data = data.contiguous();
  at::Tensor const send_scales = block_scales.contiguous();
  auto const a = nvfp4(send_data, send_scales, global_scale, "send", c->device, 1, {});
  auto const b =
      nvfp4(std::get<0>(out), std::get<1>(out), std::get<2>(out), "recv", c->device, 1, {});
  check(symmcomm_reduce_scatter(c->comm, &a, &b, nullptr, stream_of(*c), nullptr));
  return out;
}

std::tuple<at::Tensor, at::Tensor> reduce_scatter_fp8_q(const at::Tensor& data,
                                                        const at::Tensor& scale, Str group) {
  auto const c = lease(group);
  check_rows(data, "data");
  at::Tensor out_data = at::empty(shard(data, c->size, "dim 0"), data.options());
  at::Tensor out_scale = at::empty({1}, scale.options());
  at::Tensor const send = data.contiguous();
  auto const a = fp8(send, scale, "send", c->device, 1);
  auto const b = fp8(out_data, out_scale, "recv", c->device, 1);
  TORCH_CHECK_VALUE(a.dtype == b.dtype, "send and recv have different FP8 formats");
  check(symmcomm_reduce_scatter(c->comm, &a, &b, nullptr, stream_of(*c), nullptr));
  return {std::move(out_data), std::move(out_scale)};
}

// ---- codecs (no communicator: the tensors' own device) -----------------------------------------

void check_same_count(const symmcomm_tensor_t& src, const symmcomm_tensor_t& dst) {
  TORCH_CHECK_VALUE(src.count == dst.count, "dst holds ", dst.count, " elements, src ", src.count);
}

int cuda_index_of(const at::Tensor& t) {
  return t.is_cuda() ? static_cast<int>(t.get_device()) : -1;
}

Tensors3 quantize_nvfp4(const at::Tensor& x, const Optional<at::Tensor>& global_scale) {
  check_rows(x, "x");
  Shape data_shape = shape_of(x);
  Shape scale_shape = shape_of(x);
  data_shape.back() /= 2;
  scale_shape.back() /= kNvfp4Block;
  at::Tensor data = at::empty(data_shape, x.options().dtype(at::kByte));
  at::Tensor block_scales = at::empty(scale_shape, x.options().dtype(float8_e4m3fn()));
  at::Tensor scale = at::empty({1}, x.options().dtype(at::kFloat));
  bool const given = global_scale.has_value() && global_scale->defined();
  if (given) scale.copy_(global_scale->reshape({1}));
  at::Tensor const src = x.contiguous();
  int const device = cuda_index_of(src);
  auto const a = plain(src, "src", kBf16Only, device);
  auto const b = nvfp4(data, block_scales, scale, "dst", device, 1, {});
  check_same_count(a, b);
  check(symmcomm_quantize(&a, &b, given ? 0 : 1, stream_of(device)));
  return {std::move(data), std::move(block_scales), std::move(scale)};
}

at::Tensor dequantize_nvfp4(const at::Tensor& data, const at::Tensor& block_scales,
                            const at::Tensor& global_scale) {
  check_rows(data, "data");
  Shape shape = shape_of(data);
  shape.back() *= 2;
  at::Tensor out = at::empty(shape, data.options().dtype(at::kBFloat16));
  int const device = cuda_index_of(out);
  auto const b = plain(out, "dst", kBf16Only, device);
  at::Tensor const src_data = data.contiguous();
  at::Tensor const src_scales = block_scales.contiguous();
  auto const a = nvfp4(src_data, src_scales, global_scale, "src", device, 1, {});
  check_same_count(a, b);
  check(symmcomm_dequantize(&a, &b, stream_of(device)));
  return out;
}

// ---- counts on the device ------------------------------------------------------------------

/// The device counts of a ragged call, checked as symmcomm.DeviceCounts is: int32 tensors of
/// 1 (count, overflow) and comm-size (counts, offsets) elements.
symmcomm_device_counts_t device_counts(const at::Tensor& count, const at::Tensor& counts,
                                       const at::Tensor& offsets, const at::Tensor& overflow,
                                       const Communicator& c, size_t capacity) {
  struct Part {
    const at::Tensor* t;
    const char* name;
    int64_t elements;
  };
  Part const parts[] = {{&count, "count", 1},
                        {&counts, "counts", c.size},
                        {&offsets, "offsets", c.size},
                        {&overflow, "overflow", 1}};
  void* ptr[4] = {};
  for (int i = 0; i < 4; ++i) {
    ptr[i] = checked(*parts[i].t, "counts.", parts[i].name, kInt32Only, c.device);
    TORCH_CHECK_VALUE(parts[i].t->numel() == parts[i].elements, "counts.", parts[i].name, " has ",
                      parts[i].t->numel(), " elements; expected ", parts[i].elements);
  }
  return {static_cast<const int32_t*>(ptr[0]), capacity, static_cast<int32_t*>(ptr[1]),
          static_cast<int32_t*>(ptr[2]), static_cast<int32_t*>(ptr[3])};
}

at::Tensor all_gatherv_device(const at::Tensor& x, const at::Tensor& count,
                              const at::Tensor& counts, const at::Tensor& offsets,
                              const at::Tensor& overflow, Str group) {
  auto const c = lease(group);
  check_rows(x, "x");
  at::Tensor out = at::empty(with_rows(x, x.size(0) * c->size), x.options());
  auto const row = static_cast<size_t>(std::max<int64_t>(1, row_elements_of(x)));
  at::Tensor const send = x.contiguous();
  auto const a = plain(send, "send", kBf16Only, c->device);
  auto const b = plain(out, "recv", kBf16Only, c->device);
  auto const dc = device_counts(count, counts, offsets, overflow, *c, a.count / row);
  check(symmcomm_all_gatherv_device(c->comm, &a, &b, row, &dc, nullptr, stream_of(*c), nullptr));
  return out;
}

Tensors3 all_gatherv_device_nvfp4(const at::Tensor& data, const at::Tensor& block_scales,
                                  const at::Tensor& global_scale, const at::Tensor& count,
                                  const at::Tensor& counts, const at::Tensor& offsets,
                                  const at::Tensor& overflow, Str group, bool swizzled_scales) {
  auto const c = lease(group);
  check_rows(data, "data");
  int64_t const rows = data.size(0) * c->size;
  int64_t const row = row_elements_of(data) * 2;
  Tensors3 out;
  if (swizzled_scales) {
    out = nvfp4_gathered(data, block_scales, global_scale, c->size, rows, row);
  } else {
    check_rows(block_scales, "block_scales");
    out = Tensors3(
        at::empty(with_rows(data, rows), data.options()),
        at::empty(with_rows(block_scales, block_scales.size(0) * c->size), block_scales.options()),
        at::empty({c->size}, global_scale.options()));
  }
  at::Tensor const send_data = data.contiguous();
  at::Tensor const send_scales = block_scales.contiguous();
  auto const a = nvfp4(send_data, send_scales, global_scale, "send", c->device, 1, {});
  Optional<int64_t> swizzled_rows;
  if (swizzled_scales) swizzled_rows = row;
  auto const b = nvfp4(std::get<0>(out), std::get<1>(out), std::get<2>(out), "recv", c->device,
                       c->size, swizzled_rows);
  auto const dc =
      device_counts(count, counts, offsets, overflow, *c, a.count / static_cast<size_t>(row));
  check(symmcomm_all_gatherv_device(c->comm, &a, &b, static_cast<size_t>(row), &dc, nullptr,
                                    stream_of(*c), nullptr));
  return out;
}

at::Tensor reduce_scatterv_device(const at::Tensor& x, const at::Tensor& count,
                                  const at::Tensor& counts, const at::Tensor& offsets,
                                  const at::Tensor& overflow, Str group) {
  auto const c = lease(group);
  check_rows(x, "x");
  at::Tensor out = at::empty(shard(x, c->size, "dim 0"), x.options());
  auto const row = static_cast<size_t>(std::max<int64_t>(1, row_elements_of(x)));
  at::Tensor const send = x.contiguous();
  auto const a = plain(send, "send", kBf16Only, c->device);
  auto const b = plain(out, "recv", kBf16Only, c->device);
  auto const dc = device_counts(count, counts, offsets, overflow, *c, b.count / row);
  check(
      symmcomm_reduce_scatterv_device(c->comm, &a, &b, row, &dc, nullptr, stream_of(*c), nullptr));
  return out;
}

at::Tensor reduce_scatterv_device_nvfp4(const at::Tensor& data, const at::Tensor& block_scales,
                                        const at::Tensor& global_scale, const at::Tensor& count,
                                        const at::Tensor& counts, const at::Tensor& offsets,
                                        const at::Tensor& overflow, Str group) {
  auto const c = lease(group);
  at::Tensor out = at::empty(nvfp4_sum_shape(data, c->size), data.options().dtype(at::kBFloat16));
  auto const row = static_cast<size_t>(row_elements_of(data) * 2);
  at::Tensor const send_data = data.contiguous();
  at::Tensor const send_scales = block_scales.contiguous();
  auto const a = nvfp4(send_data, send_scales, global_scale, "send", c->device, 1, {});
  auto const b = plain(out, "recv", kBf16Only, c->device);
  auto const dc = device_counts(count, counts, offsets, overflow, *c, b.count / row);
  check(
      symmcomm_reduce_scatterv_device(c->comm, &a, &b, row, &dc, nullptr, stream_of(*c), nullptr));
  return out;
}

// The operators implemented here: one list for the names the package reads and the
// registrations.
#define SYMMCOMM_TORCH_OPERATORS(X) \
  X(all_gather)                     \
  X(all_gather_out)                 \
  X(all_gather_nvfp4)               \
  X(all_gather_nvfp4_out)           \
  X(all_gather_fp8)                 \
  X(all_gatherv)                    \
  X(all_gatherv_nvfp4)              \
  X(reduce_scatterv)                \
  X(reduce_scatter)                 \
  X(reduce_scatter_out)             \
  X(reduce_scatter_nvfp4)           \
  X(reduce_scatter_fp8)             \
  X(reduce_scatter_nvfp4_q)         \
  X(reduce_scatter_fp8_q)           \
  X(quantize_all_gather_nvfp4)      \
  X(quantize_nvfp4)                 \
  X(dequantize_nvfp4)               \
  X(all_gatherv_device)             \
  X(all_gatherv_device_nvfp4)       \
  X(reduce_scatterv_device)         \
  X(reduce_scatterv_device_nvfp4)

#define SYMMCOMM_TORCH_NAME(op) #op ","
constexpr char kOperators[] = SYMMCOMM_TORCH_OPERATORS(SYMMCOMM_TORCH_NAME);
#undef SYMMCOMM_TORCH_NAME

/// torch::Library per namespace. Never destroyed: a registration outlives static destruction,
/// as PyTorch's own do (its dispatcher may go first).
std::mutex libraries_mutex;
std::map<std::string, std::unique_ptr<torch::Library>>& libraries() {
  static auto* all = new std::map<std::string, std::unique_ptr<torch::Library>>();
  return *all;
}

std::unique_ptr<torch::Library> implement_on_cuda(const std::string& ns) {
  auto lib = std::make_unique<torch::Library>(torch::Library::IMPL, ns, c10::DispatchKey::CUDA,
                                              __FILE__, __LINE__);
  implement(*lib);
  return lib;
}

int fail(char* error, size_t capacity, const char* text) {
  if (error != nullptr && capacity > 0) {
    size_t const n = std::min(std::strlen(text), capacity - 1);
    std::memcpy(error, text, n);
    error[n] = '\0';
  }
  return 1;
}

template <class Fn>
int guarded(char* error, size_t capacity, Fn&& fn) {
  try {
    fn();
    return 0;
  } catch (const c10::Error& e) {
    return fail(error, capacity, e.what_without_backtrace());
  } catch (const std::exception& e) {
    return fail(error, capacity, e.what());
  } catch (...) {
    return fail(error, capacity, "unknown exception");
  }
}

}  // namespace

void implement(torch::Library& lib) {
#define SYMMCOMM_TORCH_IMPL(op) lib.impl(#op, TORCH_FN(op));
  SYMMCOMM_TORCH_OPERATORS(SYMMCOMM_TORCH_IMPL)
#undef SYMMCOMM_TORCH_IMPL
}

}  // namespace symmcomm::torch_ops

using namespace symmcomm::torch_ops;

extern "C" {

int symmcomm_torch_abi_version(void) {
  return SYMMCOMM_TORCH_ABI_VERSION;
}

const char* symmcomm_torch_built_against(void) {
  return TORCH_VERSION;
}

const void* symmcomm_torch_c_library(void) {
  return reinterpret_cast<const void*>(&symmcomm_abi_version);
}

const char* symmcomm_torch_operators(void) {
  return kOperators;
}

int symmcomm_torch_register(const char* ns, char* error, size_t capacity) {
  if (ns == nullptr || *ns == '\0') return fail(error, capacity, "ns must be a non-empty string");
  return guarded(error, capacity, [&] {
    std::lock_guard<std::mutex> lock(libraries_mutex);
    auto& all = libraries();
    if (all.count(ns) != 0) return;
    // A failure destroys the partly filled library, taking back what it had registered.
    all.emplace(ns, implement_on_cuda(ns));
  });
}

int symmcomm_torch_set_communicator(const char* name, symmcomm_comm_t comm, char* error,
                                    size_t capacity) {
  if (name == nullptr || *name == '\0') {
    return fail(error, capacity, "name must be a non-empty string");
  }
  Communicator entry;
  entry.comm = comm;
  if (symmcomm_comm_info(comm, &entry.rank, &entry.size, &entry.device, nullptr) !=
      SYMMCOMM_SUCCESS) {
    return fail(error, capacity, symmcomm_last_error());
  }
  return guarded(error, capacity, [&] { communicators().set(name, entry); });
}

int symmcomm_torch_remove_communicator(const char* name) {
  return name != nullptr && communicators().remove(name) ? 1 : 0;
}

}  // extern "C"
