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

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>

#include "communicators.hpp"
#include "ops.hpp"
#include "tensors.hpp"

namespace symmcomm::torch_ops {
namespace {

using Tensors3 = std::tuple<at::Tensor, at::Tensor, at::Tensor>;
using Shape = c10::SmallVector<int64_t, 8>;

Communicators::Lease lease(Str group) {
  std::string_view const name(group.data(), group.size());
  auto entry = communicators().find(name);
  TORCH_CHECK_VALUE(static_cast<bool>(entry), communicators().unknown(name));
  return entry;
}

using torch_ops::stream_of;  // the device's, beside the communicator's below
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

/// symmcomm_all_gather or symmcomm_reduce_scatter: the collectives of equal counts.
using EqualCountCall = symmcomm_status_t (*)(symmcomm_comm_t, const symmcomm_tensor_t*,
                                             const symmcomm_tensor_t*, const symmcomm_options_t*,
                                             symmcomm_stream_t, symmcomm_plan_t*);

/// Runs `fn` from `send` into `recv` on the current stream of the communicator's device.
void run(EqualCountCall fn, const Communicator& c, const symmcomm_tensor_t& send,
         const symmcomm_tensor_t& recv) {
  check(fn(c.comm, &send, &recv, nullptr, stream_of(c), nullptr));
}

/// `fn` of the BF16 tensor `x` into the BF16 tensor `out`.
void run_bf16(EqualCountCall fn, const Communicator& c, const at::Tensor& x,
              const at::Tensor& out) {
  PlainInput const send(x, "send", c.device);
  run(fn, c, send.ref, plain(out, "recv", kBf16Only, c.device));
}

at::Tensor all_gather(const at::Tensor& x, Str group) {
  auto const c = lease(group);
  check_rows(x, "x");
  at::Tensor out = at::empty(with_rows(x, x.size(0) * c->size), x.options());
  run_bf16(symmcomm_all_gather, *c, x, out);
  return out;
}

void all_gather_out(const at::Tensor& x, const at::Tensor& out, Str group) {
  auto const c = lease(group);
  run_bf16(symmcomm_all_gather, *c, x, out);
}

void gather_nvfp4(const Communicator& c, const at::Tensor& data, const at::Tensor& block_scales,
                  const at::Tensor& global_scale, const Tensors3& out,
                  const Optional<int64_t>& row_elements) {
  Nvfp4Input const send(data, block_scales, global_scale, "send", c.device);
  auto const& a = send.ref;
  auto const b = nvfp4(std::get<0>(out), std::get<1>(out), std::get<2>(out), "recv", c.device,
                       c.size, row_elements);
  run(symmcomm_all_gather, c, a, b);
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
  Fp8Input const send(data, scale, "send", c->device);
  auto const& a = send.ref;
  auto const b = fp8(out_data, out_scale, "recv", c->device, c->size);
  TORCH_CHECK_VALUE(a.dtype == b.dtype, "send and recv have different FP8 formats");
  run(symmcomm_all_gather, *c, a, b);
  return {std::move(out_data), std::move(out_scale)};
}

at::Tensor reduce_scatter(const at::Tensor& x, Str group) {
  auto const c = lease(group);
  check_rows(x, "x");
  at::Tensor out = at::empty(shard(x, c->size, "dim 0"), x.options());
  run_bf16(symmcomm_reduce_scatter, *c, x, out);
  return out;
}

void reduce_scatter_out(const at::Tensor& x, const at::Tensor& out, Str group) {
  auto const c = lease(group);
  run_bf16(symmcomm_reduce_scatter, *c, x, out);
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
  Nvfp4Input const send(data, block_scales, global_scale, "send", c->device);
  auto const& a = send.ref;
  auto const b = plain(out, "recv", kBf16OrF32, c->device);
  run(symmcomm_reduce_scatter, *c, a, b);
  return out;
}

at::Tensor reduce_scatter_fp8(const at::Tensor& data, const at::Tensor& scale, Str group,
                              c10::ScalarType out_dtype) {
  auto const c = lease(group);
  check_rows(data, "data");
  at::Tensor out = at::empty(shard(data, c->size, "dim 0"), data.options().dtype(out_dtype));
  Fp8Input const send(data, scale, "send", c->device);
  auto const& a = send.ref;
  auto const b = plain(out, "recv", kBf16OrF32, c->device);
  run(symmcomm_reduce_scatter, *c, a, b);
  return out;
}

/// A v-collective's host counts as the C ABI takes them: `counts` rows per rank (one per rank)
/// times `per_row` elements each, checked as the Python implementations check them, before any
/// output is allocated (a negative count names counts, not the tensor's shape).
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
  auto const elements = elements_of(counts, row_elements_of(x), c->size);
  at::Tensor out = at::empty(with_rows(x, sum_of(counts)), x.options());
  PlainInput const send(x, "send", c->device);
  auto const& a = send.ref;
  auto const b = plain(out, "recv", kBf16Only, c->device);
  check(symmcomm_all_gatherv(c->comm, &a, &b, elements.data(), nullptr, stream_of(*c), nullptr));
  return out;
}

Tensors3 all_gatherv_nvfp4(const at::Tensor& data, const at::Tensor& block_scales,
                           const at::Tensor& global_scale, c10::IntArrayRef counts, Str group,
                           Optional<int64_t> row_elements) {
  auto const c = lease(group);
  check_rows(data, "data");
  auto const elements = elements_of(counts, row_elements_of(data) * 2, c->size);
  Tensors3 out =
      nvfp4_gathered(data, block_scales, global_scale, c->size, sum_of(counts), row_elements);
  Nvfp4Input const send(data, block_scales, global_scale, "send", c->device);
  auto const& a = send.ref;
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
  auto const elements = elements_of(counts, row_elements_of(x), c->size);
  at::Tensor out = at::empty(with_rows(x, counts[static_cast<size_t>(c->rank)]), x.options());
  PlainInput const send(x, "send", c->device);
  auto const& a = send.ref;
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
  PlainInput const input(x, "input", c->device);
  auto const& a = input.ref;
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
  Nvfp4Input const send(data, block_scales, global_scale, "send", c->device);
  auto const& a = send.ref;
  auto const b =
      nvfp4(std::get<0>(out), std::get<1>(out), std::get<2>(out), "recv", c->device, 1, {});
  run(symmcomm_reduce_scatter, *c, a, b);
  return out;
}

std::tuple<at::Tensor, at::Tensor> reduce_scatter_fp8_q(const at::Tensor& data,
                                                        const at::Tensor& scale, Str group) {
  auto const c = lease(group);
  check_rows(data, "data");
  at::Tensor out_data = at::empty(shard(data, c->size, "dim 0"), data.options());
  at::Tensor out_scale = at::empty({1}, scale.options());
  Fp8Input const send(data, scale, "send", c->device);
  auto const& a = send.ref;
  auto const b = fp8(out_data, out_scale, "recv", c->device, 1);
  TORCH_CHECK_VALUE(a.dtype == b.dtype, "send and recv have different FP8 formats");
  run(symmcomm_reduce_scatter, *c, a, b);
  return {std::move(out_data), std::move(out_scale)};
}

// ---- codecs (no communicator: the tensors' own device) -----------------------------------------

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
  PlainInput const src(x, "src", cuda_index_of(x));
  int const device = cuda_index_of(x);
  auto const& a = src.ref;
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
  Nvfp4Input const src(data, block_scales, global_scale, "src", device);
  auto const& a = src.ref;
  check_same_count(a, b);
  check(symmcomm_dequantize(&a, &b, stream_of(device)));
  return out;
}

// ---- counts on the device ------------------------------------------------------------------

/// symmcomm_all_gatherv_device or symmcomm_reduce_scatterv_device: the collectives whose counts
/// live on the device.
using DeviceCountCall = symmcomm_status_t (*)(symmcomm_comm_t, const symmcomm_tensor_t*,
                                              const symmcomm_tensor_t*, size_t,
                                              const symmcomm_device_counts_t*,
                                              const symmcomm_options_t*, symmcomm_stream_t,
                                              symmcomm_plan_t*);

/// Runs `fn` from `send` into `recv` in rows of `row` elements, `capacity` rows per rank, with
/// the count tensors checked as symmcomm.DeviceCounts checks them.
void run_device_counts(DeviceCountCall fn, const Communicator& c, const symmcomm_tensor_t& send,
                       const symmcomm_tensor_t& recv, size_t row, size_t capacity,
                       const at::Tensor& count, const at::Tensor& counts, const at::Tensor& offsets,
                       const at::Tensor& overflow) {
  auto const dc = device_counts(count, counts, offsets, overflow, c.size, c.device, capacity);
  check(fn(c.comm, &send, &recv, row, &dc, nullptr, stream_of(c), nullptr));
}

at::Tensor all_gatherv_device(const at::Tensor& x, const at::Tensor& count,
                              const at::Tensor& counts, const at::Tensor& offsets,
                              const at::Tensor& overflow, Str group) {
  auto const c = lease(group);
  check_rows(x, "x");
  at::Tensor out = at::empty(with_rows(x, x.size(0) * c->size), x.options());
  auto const row = static_cast<size_t>(std::max<int64_t>(1, row_elements_of(x)));
  PlainInput const send(x, "send", c->device);
  auto const& a = send.ref;
  auto const b = plain(out, "recv", kBf16Only, c->device);
  run_device_counts(symmcomm_all_gatherv_device, *c, a, b, row, a.count / row, count, counts,
                    offsets, overflow);
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
  check_row_elements(row);  // rows of no element: nothing to divide the capacity by
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
  Nvfp4Input const send(data, block_scales, global_scale, "send", c->device);
  auto const& a = send.ref;
  Optional<int64_t> swizzled_rows;
  if (swizzled_scales) swizzled_rows = row;
  auto const b = nvfp4(std::get<0>(out), std::get<1>(out), std::get<2>(out), "recv", c->device,
                       c->size, swizzled_rows);
  auto const row_size = static_cast<size_t>(row);
  run_device_counts(symmcomm_all_gatherv_device, *c, a, b, row_size, a.count / row_size, count,
                    counts, offsets, overflow);
  return out;
}

at::Tensor reduce_scatterv_device(const at::Tensor& x, const at::Tensor& count,
                                  const at::Tensor& counts, const at::Tensor& offsets,
                                  const at::Tensor& overflow, Str group) {
  auto const c = lease(group);
  check_rows(x, "x");
  at::Tensor out = at::empty(shard(x, c->size, "dim 0"), x.options());
  auto const row = static_cast<size_t>(std::max<int64_t>(1, row_elements_of(x)));
  PlainInput const send(x, "send", c->device);
  auto const& a = send.ref;
  auto const b = plain(out, "recv", kBf16Only, c->device);
  run_device_counts(symmcomm_reduce_scatterv_device, *c, a, b, row, b.count / row, count, counts,
                    offsets, overflow);
  return out;
}

at::Tensor reduce_scatterv_device_nvfp4(const at::Tensor& data, const at::Tensor& block_scales,
                                        const at::Tensor& global_scale, const at::Tensor& count,
                                        const at::Tensor& counts, const at::Tensor& offsets,
                                        const at::Tensor& overflow, Str group) {
  auto const c = lease(group);
  at::Tensor out = at::empty(nvfp4_sum_shape(data, c->size), data.options().dtype(at::kBFloat16));
  check_row_elements(row_elements_of(data) * 2);
  auto const row = static_cast<size_t>(row_elements_of(data) * 2);
  Nvfp4Input const send(data, block_scales, global_scale, "send", c->device);
  auto const& a = send.ref;
  auto const b = plain(out, "recv", kBf16Only, c->device);
  run_device_counts(symmcomm_reduce_scatterv_device, *c, a, b, row, b.count / row, count, counts,
                    offsets, overflow);
  return out;
}

}  // namespace

void implement(torch::Library& lib) {
#define SYMMCOMM_TORCH_IMPL(op) lib.impl(#op, TORCH_FN(op));
  SYMMCOMM_TORCH_COLLECTIVE_OPERATORS(SYMMCOMM_TORCH_IMPL)
#undef SYMMCOMM_TORCH_IMPL
  implement_moe(lib);
}

}  // namespace symmcomm::torch_ops
