// Private to libsymmcomm_torch.so (and its CPU registration check): the operators'
// implementations added to a torch::Library, whatever its namespace and dispatch key.
#pragma once

// The operators implemented here: one list for the names the package reads and the
// registrations.
#define SYMMCOMM_TORCH_OPERATORS(X) \
  SYMMCOMM_TORCH_COLLECTIVE_OPERATORS(X) SYMMCOMM_TORCH_MOE_OPERATORS(X)
// The collectives and codecs (ops.cpp).
#define SYMMCOMM_TORCH_COLLECTIVE_OPERATORS(X) \
  X(all_gather)                                \
  X(all_gather_out)                            \
  X(all_gather_nvfp4)                          \
  X(all_gather_nvfp4_out)                      \
  X(all_gather_fp8)                            \
  X(all_gatherv)                               \
  X(all_gatherv_nvfp4)                         \
  X(reduce_scatterv)                           \
  X(reduce_scatter)                            \
  X(reduce_scatter_out)                        \
  X(reduce_scatter_nvfp4)                      \
  X(reduce_scatter_fp8)                        \
  X(reduce_scatter_nvfp4_q)                    \
  X(reduce_scatter_fp8_q)                      \
  X(quantize_all_gather_nvfp4)                 \
  X(quantize_nvfp4)                            \
  X(dequantize_nvfp4)                          \
  X(all_gatherv_device)                        \
  X(all_gatherv_device_nvfp4)                  \
  X(reduce_scatterv_device)                    \
  X(reduce_scatterv_device_nvfp4)
// The MoE group's (moe_ops.cpp).
#define SYMMCOMM_TORCH_MOE_OPERATORS(X) \
  X(moe_dispatch)                       \
  X(moe_combine)

namespace torch {
class Library;
}

namespace symmcomm::torch_ops {

/// Adds every operator of SYMMCOMM_TORCH_OPERATORS to `lib` (the collectives and codecs of
/// ops.cpp, then implement_moe's); throws the dispatcher's error when an operator's C++
/// signature does not match its schema.
void implement(torch::Library& lib);

/// Adds the MoE group's operators (moe_ops.cpp: moe_dispatch, moe_combine) to `lib`.
void implement_moe(torch::Library& lib);

}  // namespace symmcomm::torch_ops
