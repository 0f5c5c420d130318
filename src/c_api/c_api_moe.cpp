// The C ABI of MoE dispatch and combine by expert (symmcomm_moe_*, symmcomm/c_api.h) over
// symmcomm::MoeGroup: descriptors checked and converted, exceptions mapped to status codes.

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "c_api/c_api_internal.hpp"
#include "symmcomm/c_api.h"
#include "symmcomm/collectives/moe.hpp"

struct symmcomm_moe_s {
  symmcomm::MoeGroup group;
};

static_assert(SYMMCOMM_MOE_ERROR_EXPERT_ID == symmcomm::kMoeErrorExpertId &&
                  SYMMCOMM_MOE_ERROR_NUM_TOKENS == symmcomm::kMoeErrorNumTokens &&
                  SYMMCOMM_MOE_ERROR_GLOBAL_SCALE == symmcomm::kMoeErrorGlobalScale,
              "the C error bits are the C++ ones");

namespace {

using symmcomm::c_api::comm_of;
using symmcomm::c_api::deref;
using symmcomm::c_api::guarded;
using symmcomm::c_api::tensor_of;

symmcomm::MoeGroup& group_of(symmcomm_moe_t g) {
  SYMMCOMM_EXPECTS(g != nullptr, "group is NULL");
  return g->group;
}

// A BF16 tensor argument's pointer, its count checked against `count`.
const symmcomm::bf16* bf16_of(const symmcomm_tensor_t* t, std::size_t count, const char* name) {
  symmcomm::detail::TensorRef const r = tensor_of(t, name);
  SYMMCOMM_EXPECTS(r.dtype == symmcomm::DataType::Bf16,
                   name << " has dtype " << symmcomm::to_string(r.dtype) << "; expected bf16");
  SYMMCOMM_EXPECTS(r.count == count, name << ".count = " << r.count << "; expected " << count);
  return static_cast<const symmcomm::bf16*>(r.data);
}

}  // namespace

extern "C" {

symmcomm_status_t symmcomm_moe_supported(symmcomm_comm_t comm, int* supported) {
  return guarded([&] {
    int& out = deref(supported, "supported");
    std::string why;
    out = symmcomm::MoeGroup::supported(comm_of(comm), &why) ? 1 : 0;
    symmcomm::c_api::last_error = why;
  });
}

symmcomm_status_t symmcomm_moe_create(symmcomm_comm_t comm, const symmcomm_moe_config_t* config,
                                      symmcomm_stream_t stream, symmcomm_moe_t* group) {
  return guarded([&] {
    symmcomm_moe_t& out = deref(group, "group");
    const symmcomm_moe_config_t& c = deref(config, "config");
    symmcomm::MoeConfig cfg;
    cfg.num_experts = c.num_experts;
    cfg.top_k = c.top_k;
    cfg.hidden = c.hidden;
    cfg.max_tokens_per_rank = c.max_tokens_per_rank;
    cfg.capacity = c.capacity;
    cfg.wire = static_cast<symmcomm::DataType>(symmcomm::c_api::enum_value(
        c.wire, SYMMCOMM_DTYPE_FP32, "config.wire", "symmcomm_dtype_t"));
    int const path = symmcomm::c_api::enum_value(c.path, SYMMCOMM_PATH_FALLBACK, "config.path",
                                                 "symmcomm_path_t");
    SYMMCOMM_EXPECTS(c.combine_in_place == 0 || c.combine_in_place == 1,
                     "config.combine_in_place must be 0 or 1, got " << c.combine_in_place);
    cfg.combine_in_place = c.combine_in_place != 0;
    out = new symmcomm_moe_s{
        symmcomm::MoeGroup(comm_of(comm), cfg, stream, static_cast<symmcomm::PathChoice>(path))};
  });
}

symmcomm_status_t symmcomm_moe_destroy(symmcomm_moe_t group) {
  return guarded([&] { delete group; });
}

symmcomm_status_t symmcomm_moe_buffers(symmcomm_moe_t group, symmcomm_moe_buffers_t* out) {
  return guarded([&] {
    symmcomm_moe_buffers_t& b = deref(out, "out");
    const symmcomm::MoeGroup& g = group_of(group);
    const symmcomm::MoeDispatch& d = g.buffers();
    b.data = d.data;
    b.block_scales = d.block_scales;
    b.expert_count = d.expert_count;
    b.global_scale = d.global_scale;
    b.overflow = d.overflow;
    b.error = d.error;
    b.local_experts = g.local_experts();
    b.capacity = g.config().capacity;
    b.expert_scale_bytes = g.expert_scale_bytes();
    b.path =
        g.path() == symmcomm::Path::LsaKernel ? SYMMCOMM_TOOK_LSA_KERNEL : SYMMCOMM_TOOK_FALLBACK;
    b.expert_out = reinterpret_cast<std::uint16_t*>(d.expert_out);
  });
}

symmcomm_status_t symmcomm_moe_reason(symmcomm_moe_t group, char* text, size_t size,
                                      size_t* needed) {
  return guarded([&] {
    std::string const why = group_of(group).reason();
    if (needed != nullptr) *needed = why.size() + 1;
    SYMMCOMM_EXPECTS(text != nullptr || size == 0, "text is NULL with size " << size);
    if (size == 0) return;
    std::size_t const n = std::min(why.size(), size - 1);
    std::memcpy(text, why.data(), n);
    text[n] = '\0';
  });
}

symmcomm_status_t symmcomm_moe_dispatch(symmcomm_moe_t group, const symmcomm_tensor_t* x,
                                        const float* global_scale, const int32_t* topk_idx,
                                        const float* topk_weights, const int32_t* num_tokens,
                                        symmcomm_stream_t stream) {
  return guarded([&] {
    symmcomm::MoeGroup& g = group_of(group);
    symmcomm::detail::TensorRef const r = tensor_of(x, "x");
    if (r.dtype == symmcomm::DataType::Bf16) {
      g.dispatch(symmcomm::ConstBf16Span{static_cast<const symmcomm::bf16*>(r.data), r.count},
                 global_scale, topk_idx, topk_weights, num_tokens, stream);
      return;
    }
    SYMMCOMM_EXPECTS(r.dtype == symmcomm::DataType::Nvfp4,
                     "x has dtype " << symmcomm::to_string(r.dtype) << "; expected nvfp4 or bf16");
    SYMMCOMM_EXPECTS(global_scale == nullptr,
                     "global_scale must be NULL for NVFP4 x (x.scales is its global scale)");
    g.dispatch(r.nvfp4(), topk_idx, topk_weights, num_tokens, stream);
  });
}

symmcomm_status_t symmcomm_moe_combine(symmcomm_moe_t group, const symmcomm_tensor_t* expert_out,
                                       const symmcomm_tensor_t* out, symmcomm_stream_t stream) {
  return guarded([&] {
    symmcomm::MoeGroup& g = group_of(group);
    const symmcomm::MoeConfig& c = g.config();
    auto const h = static_cast<std::size_t>(c.hidden);
    const symmcomm::bf16* y = bf16_of(
        expert_out,
        static_cast<std::size_t>(g.local_experts()) * static_cast<std::size_t>(c.capacity) * h,
        "expert_out");
    const symmcomm::bf16* o =
        bf16_of(out, static_cast<std::size_t>(c.max_tokens_per_rank) * h, "out");
    g.combine(y, const_cast<symmcomm::bf16*>(o), stream);
  });
}

symmcomm_status_t symmcomm_moe_check(symmcomm_moe_t group, symmcomm_stream_t stream,
                                     int32_t* overflow) {
  return guarded([&] {
    std::int32_t const dropped = group_of(group).check(stream);
    if (overflow != nullptr) *overflow = dropped;
  });
}

}  // extern "C"
