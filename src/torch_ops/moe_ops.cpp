// The MoE group's PyTorch operators in C++ (symmcomm.ops.OPS's moe_dispatch and moe_combine):
// what their Python implementations (python/symmcomm/_moe_ops.py) do, with the same checks and
// texts. moe_dispatch writes the dispatch into the tensors it is given; where they are the group's
// own (symmcomm.ops.moe_buffers) nothing is copied, else the group's are copied into them (what a
// functionalised graph passes). Both run on the current CUDA stream of the group's device.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>

#include "communicators.hpp"
#include "ops.hpp"
#include "tensors.hpp"

namespace symmcomm::torch_ops {
namespace {

MoeGroups::Lease moe_lease(Str group) {
  std::string_view const name(group.data(), group.size());
  auto entry = moe_groups().find(name);
  TORCH_CHECK_VALUE(static_cast<bool>(entry), moe_groups().unknown(name));
  return entry;
}

std::string shape_text(c10::IntArrayRef shape) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << "]";
  return s.str();
}

/// `t` (named `name`) has exactly `shape`, then the device, contiguity and dtype checks of every
/// operator; its data pointer.
void* expect(const at::Tensor& t, const char* name, c10::IntArrayRef shape, const Allowed& allowed,
             int device) {
  TORCH_CHECK_VALUE(t.sizes() == shape, name, " has shape ", shape_text(t.sizes()), "; expected ",
                    shape_text(shape));
  return checked(t, name, "", allowed, device);
}

bool given(const Optional<at::Tensor>& t) {
  return t.has_value() && t->defined();
}

/// `t`'s `rows` rows as the group's `max_rows`, the rest `fill` (no copy when it has them all).
at::Tensor padded(const at::Tensor& t, int64_t max_rows, double fill) {
  if (t.size(0) == max_rows) return t;
  at::Tensor full = at::full({max_rows, t.size(1)}, fill, t.options());
  full.narrow(0, 0, t.size(0)).copy_(t);
  return full;
}

/// Copies the group's tensor at `ptr` into `out` unless `out` is it.
void deliver(const at::Tensor& out, void* ptr) {
  if (out.numel() == 0 || out.data_ptr() == ptr) return;
  out.copy_(at::from_blob(ptr, out.sizes(), out.options()));
}

/// The Python name of a group's wire (symmcomm.moe.WIRES).
const char* wire_name(symmcomm_dtype_t wire) {
  return wire == SYMMCOMM_DTYPE_BF16 ? "bf16"
                                     : (wire == SYMMCOMM_DTYPE_FP8_E4M3 ? "fp8e4m3" : "nvfp4");
}

/// The dispatch's inputs checked against the group's shape: the rows of x (at most
/// max_tokens_per_rank); x NVFP4 data where block_scales is given.
int64_t check_tokens(const MoeGroupEntry& g, const at::Tensor& x,
                     const Optional<at::Tensor>& block_scales,
                     const Optional<at::Tensor>& global_scale, const at::Tensor& topk_idx,
                     const at::Tensor& topk_weights, const Optional<at::Tensor>& num_tokens) {
  const symmcomm_moe_config_t& c = g.config;
  bool const nvfp4_wire = c.wire == SYMMCOMM_DTYPE_NVFP4;
  char const* const wire = wire_name(c.wire);
  TORCH_CHECK_VALUE(x.dim() == 2, "x must be 2-D (tokens, hidden; NVFP4 data: hidden / 2 bytes), ",
                    "got shape ", shape_text(x.sizes()));
  int64_t const rows = x.size(0);
  TORCH_CHECK_VALUE(rows <= c.max_tokens_per_rank, "x has ", rows,
                    " rows; the group takes at most max_tokens_per_rank = ", c.max_tokens_per_rank);
  if (given(block_scales)) {
    TORCH_CHECK_VALUE(nvfp4_wire, "x is NVFP4 (block_scales given) but the group's wire is ", wire,
                      ": pass bf16 tokens");
    expect(x, "x", {rows, c.hidden / 2}, kNvfp4Data, g.device);
    expect(*block_scales, "block_scales", {rows, c.hidden / kNvfp4Block}, kBlockScales, g.device);
    TORCH_CHECK_VALUE(given(global_scale), "global_scale: NVFP4 x needs its global scale");
    expect(*global_scale, "global_scale", {1}, kF32Only, g.device);
  } else {
    expect(x, "x", {rows, c.hidden}, kBf16Only, g.device);
    if (!nvfp4_wire) {
      TORCH_CHECK_VALUE(!given(global_scale), "global_scale must be None on a ", wire, " wire");
    } else {
      TORCH_CHECK_VALUE(given(global_scale), "global_scale: bf16 x is quantized in the dispatch ",
                        "with the layer's static NVFP4 scale; pass it (float32 [1])");
      expect(*global_scale, "global_scale", {1}, kF32Only, g.device);
    }
  }
  expect(topk_idx, "topk_idx", {rows, c.top_k}, kInt32Only, g.device);
  expect(topk_weights, "topk_weights", {rows, c.top_k}, kF32Only, g.device);
  if (given(num_tokens)) expect(*num_tokens, "num_tokens", {1}, kInt32Only, g.device);
  return rows;
}

/// The output tensors checked against the group's buffers' shapes.
void check_outputs(const MoeGroupEntry& g, const at::Tensor& data, const at::Tensor& scales,
                   const at::Tensor& expert_count, const at::Tensor& global_scale,
                   const at::Tensor& overflow, const at::Tensor& error) {
  const symmcomm_moe_config_t& c = g.config;
  int64_t const L = g.buffers.local_experts, cap = g.buffers.capacity;
  if (c.wire == SYMMCOMM_DTYPE_BF16) {
    expect(data, "out_data", {L, cap, c.hidden}, kBf16Only, g.device);
    expect(scales, "out_block_scales", {L, 0}, kBlockScales, g.device);
  } else if (c.wire == SYMMCOMM_DTYPE_FP8_E4M3) {
    expect(data, "out_data", {L, cap, c.hidden}, kBlockScales, g.device);
    expect(scales, "out_block_scales", {L, static_cast<int64_t>(g.buffers.expert_scale_bytes)},
           kBlockScales, g.device);
  } else {
    expect(data, "out_data", {L, cap, c.hidden / 2}, kNvfp4Data, g.device);
    expect(scales, "out_block_scales", {L, static_cast<int64_t>(g.buffers.expert_scale_bytes)},
           kBlockScales, g.device);
  }
  expect(expert_count, "out_expert_count", {L}, kInt32Only, g.device);
  expect(global_scale, "out_global_scale", {1}, kF32Only, g.device);
  expect(overflow, "out_overflow", {1}, kInt32Only, g.device);
  expect(error, "out_error", {1}, kInt32Only, g.device);
}

void moe_dispatch(const at::Tensor& x, const Optional<at::Tensor>& block_scales,
                  const Optional<at::Tensor>& global_scale, const at::Tensor& topk_idx,
                  const at::Tensor& topk_weights, const Optional<at::Tensor>& num_tokens,
                  const at::Tensor& out_data, const at::Tensor& out_block_scales,
                  const at::Tensor& out_expert_count, const at::Tensor& out_global_scale,
                  const at::Tensor& out_overflow, const at::Tensor& out_error, Str group) {
  auto const g = moe_lease(group);
  int64_t const rows =
      check_tokens(*g, x, block_scales, global_scale, topk_idx, topk_weights, num_tokens);
  check_outputs(*g, out_data, out_block_scales, out_expert_count, out_global_scale, out_overflow,
                out_error);
  int64_t const T = g->config.max_tokens_per_rank;
  at::Tensor const n = given(num_tokens) ? *num_tokens : at::full({1}, rows, topk_idx.options());
  at::Tensor const idx = padded(topk_idx, T, -1);
  at::Tensor const weights = padded(topk_weights, T, 0);
  // NVFP4 parts padded as bytes: float8 and float4 tensors fill only on newer PyTorch.
  bool const nvfp4_x = given(block_scales);
  at::Tensor const data = padded(nvfp4_x ? x.view(at::kByte) : x, T, 0);
  symmcomm_tensor_t tokens;
  at::Tensor scales;
  const float* scale = nullptr;
  if (nvfp4_x) {
    scales = padded(block_scales->view(at::kByte), T, 0);
    tokens = nvfp4(data, scales, *global_scale, "x", g->device, 1, {});
  } else {
    tokens = plain(data, "x", kBf16Only, g->device);
    if (given(global_scale)) scale = global_scale->data_ptr<float>();
  }
  check(symmcomm_moe_dispatch(g->group, &tokens, scale, idx.data_ptr<int32_t>(),
                              weights.data_ptr<float>(), n.data_ptr<int32_t>(),
                              stream_of(g->device)));
  const symmcomm_moe_buffers_t& b = g->buffers;
  deliver(out_data, b.data);
  if (b.block_scales != nullptr) deliver(out_block_scales, b.block_scales);
  deliver(out_expert_count, b.expert_count);
  deliver(out_global_scale, b.global_scale);
  deliver(out_overflow, b.overflow);
  deliver(out_error, b.error);
}

at::Tensor moe_combine(const at::Tensor& expert_out, const at::Tensor& expert_count,
                       int64_t num_rows, Str group) {
  auto const g = moe_lease(group);
  const symmcomm_moe_config_t& c = g->config;
  int64_t const L = g->buffers.local_experts, T = c.max_tokens_per_rank;
  expect(expert_out, "expert_out", {L, g->buffers.capacity, c.hidden}, kBf16OrF32, g->device);
  expect(expert_count, "expert_count", {L}, kInt32Only, g->device);
  TORCH_CHECK_VALUE(num_rows >= 0 && num_rows <= T, "num_rows must be in 0..",
                    "max_tokens_per_rank (", T, "), got ", num_rows);
  at::Tensor const y =
      expert_out.scalar_type() == at::kBFloat16 ? expert_out : expert_out.to(at::kBFloat16);
  at::Tensor out = at::empty({T, c.hidden}, y.options());
  auto const a = plain(y, "expert_out", kBf16Only, g->device);
  auto const o = plain(out, "out", kBf16Only, g->device);
  check(symmcomm_moe_combine(g->group, &a, &o, stream_of(g->device)));
  return num_rows == T ? out : out.narrow(0, 0, num_rows);
}

}  // namespace

void implement_moe(torch::Library& lib) {
#define SYMMCOMM_TORCH_IMPL(op) lib.impl(#op, TORCH_FN(op));
  SYMMCOMM_TORCH_MOE_OPERATORS(SYMMCOMM_TORCH_IMPL)
#undef SYMMCOMM_TORCH_IMPL
}

}  // namespace symmcomm::torch_ops
