// at::Tensor -> symmcomm_tensor_t for symmcomm's C++ PyTorch operators: the checks their
// Python implementations make (device, contiguity, dtype, the sizes behind each pointer), with
// the same texts, and the descriptors the C ABI takes.
#pragma once

#include <ATen/ATen.h>
#include <torch/version.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "symmcomm/c_api.h"

namespace symmcomm::torch_ops {

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

constexpr int64_t kNvfp4Block = 16;

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

/// Raises the library's failure: ValueError for an invalid argument, RuntimeError otherwise.
void check(symmcomm_status_t status);
/// PyTorch's current CUDA stream of `device` (the stream every operator runs on).
symmcomm_stream_t stream_of(int device);

Kind kind_of(const at::Tensor& t);
/// PyTorch's Python name of `t`'s dtype ("bfloat16", ...), as the Python implementations print it.
const char* python_name(const at::Tensor& t);
/// NVFP4 block scales' dtype; raises where this PyTorch has none.
c10::ScalarType float8_e4m3fn();

/// The data pointer of `t` (named `name` + `part`, e.g. "send" ".data"), checked as the Python
/// implementations check it: a CUDA tensor on `device`, contiguous, of an accepted dtype.
void* checked(const at::Tensor& t, const char* name, const char* part, const Allowed& allowed,
              int device);
void check_row_elements(const Optional<int64_t>& row_elements);
/// `t` has a dim 0 (rows).
void check_rows(const at::Tensor& t, const char* name);
/// symmcomm.swizzled_scale_bytes.
int64_t swizzled_scale_bytes(int64_t rows, int64_t scale_cols);
/// The CUDA device index of `t`, -1 for a tensor elsewhere (its checks then say so).
int cuda_index_of(const at::Tensor& t);

/// A BF16 (or, where `allowed` says, FP32) tensor.
symmcomm_tensor_t plain(const at::Tensor& t, const char* name, const Allowed& allowed, int device);
/// An NVFP4 tensor of `scales_expected` global scales at least; with row_elements, block scales
/// in the swizzled layout of rows of that many elements (a gather's receive side).
symmcomm_tensor_t nvfp4(const at::Tensor& data, const at::Tensor& block_scales,
                        const at::Tensor& global_scale, const char* name, int device,
                        int64_t scales_expected, const Optional<int64_t>& row_elements);
/// An FP8 tensor of `scales_expected` scales at least (its format from the data's dtype).
symmcomm_tensor_t fp8(const at::Tensor& data, const at::Tensor& scale, const char* name, int device,
                      int64_t scales_expected);
/// The device counts of a device-count call, checked as symmcomm.DeviceCounts is: int32 tensors of
/// 1 (count, overflow) and `size` (counts, offsets) elements.
symmcomm_device_counts_t device_counts(const at::Tensor& count, const at::Tensor& counts,
                                       const at::Tensor& offsets, const at::Tensor& overflow,
                                       int size, int device, size_t capacity);
/// A codec's source and destination hold as many elements.
void check_same_count(const symmcomm_tensor_t& src, const symmcomm_tensor_t& dst);

/// An input of a call made contiguous (a copy when it is not, kept alive for the call) and
/// described: BF16.
struct PlainInput {
  at::Tensor tensor;
  symmcomm_tensor_t ref;
  PlainInput(const at::Tensor& t, const char* name, int device)
      : tensor(t.contiguous()), ref(plain(tensor, name, kBf16Only, device)) {}
};

/// The same for an NVFP4 input of one global scale.
struct Nvfp4Input {
  at::Tensor data, block_scales;
  symmcomm_tensor_t ref;
  Nvfp4Input(const at::Tensor& d, const at::Tensor& s, const at::Tensor& global_scale,
             const char* name, int device)
      : data(d.contiguous()),
        block_scales(s.contiguous()),
        ref(nvfp4(data, block_scales, global_scale, name, device, 1, {})) {}
};

/// The same for an FP8 input of one scale.
struct Fp8Input {
  at::Tensor data;
  symmcomm_tensor_t ref;
  Fp8Input(const at::Tensor& d, const at::Tensor& scale, const char* name, int device)
      : data(d.contiguous()), ref(fp8(data, scale, name, device, 1)) {}
};

}  // namespace symmcomm::torch_ops
