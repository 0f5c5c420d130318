#pragma once
// Private: what a MoeGroup holds (symmcomm/collectives/moe.hpp), shared by its two paths:
// moe_group.cpp (the group, its checks and the LSA path's launches over its window) and
// moe_fallback.cpp (the fallback over NCCL: gathers, local placement, fp32 reduce-scatter).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "comm/comm_state.hpp"
#include "kernels/moe.hpp"
#include "symmcomm/collectives/moe.hpp"
#include "symmcomm/memory/symmetric_buffer.hpp"
#include "symmcomm/path.hpp"

namespace symmcomm {

namespace detail {

/// cudaMalloc'ed bytes, freed with the owner (the fallback's buffers need no window).
class DeviceBlock {
 public:
  DeviceBlock() = default;
  explicit DeviceBlock(std::size_t bytes);
  ~DeviceBlock();
  DeviceBlock(const DeviceBlock&) = delete;
  DeviceBlock& operator=(const DeviceBlock&) = delete;
  DeviceBlock(DeviceBlock&& other) noexcept : ptr_(other.ptr_) { other.ptr_ = nullptr; }
  DeviceBlock& operator=(DeviceBlock&& other) noexcept {
    std::swap(ptr_, other.ptr_);
    return *this;
  }
  char* get() const noexcept { return static_cast<char*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

/// Byte offsets of the fallback's buffers in its block (16-byte aligned): the dispatch's
/// tensors, every rank's gathered tokens and routing, this rank's tokens quantized (BF16 input)
/// and the combine's fp32 sums.
struct MoeFallbackLayout {
  std::size_t rows = 0, scales = 0, expert_count = 0, words = 0;  ///< as lsa::MoeLayout
  std::size_t data_all = 0, scales_all = 0, global_all = 0;       ///< gathered NVFP4 tokens
  std::size_t idx_all = 0, weights_all = 0, tokens_all = 0;       ///< gathered routing
  std::size_t pair_row_all = 0;  ///< int32 [ranks][pairs]: rows of this rank's experts
  std::size_t stage_data = 0, stage_scales = 0;  ///< this rank's BF16 tokens quantized
  std::size_t partial = 0;     ///< float [ranks * max_tokens][hidden]: sums of this rank's rows
  std::size_t sums = 0;        ///< float [max_tokens][hidden]: reduce-scattered
  std::size_t expert_out = 0;  ///< bf16 [L][capacity][hidden] where in_place (else empty)
  std::size_t bytes = 0;

  static MoeFallbackLayout of(const lsa::MoeShape& s);
};

}  // namespace detail

struct MoeGroup::Impl {
  std::shared_ptr<detail::CommState> state;
  MoeConfig config;
  detail::lsa::MoeShape shape;
  Path path = Path::LsaKernel;
  std::string why;  ///< why the path was taken
  MoeDispatch buffers;

  // The LSA path: the group's window.
  detail::lsa::MoeLayout layout;
  SymmetricBuffer window;
  std::int32_t* pair_row = nullptr;
  std::int32_t* pair_expert = nullptr;
  float* weights = nullptr;
  std::int32_t* tokens = nullptr;  ///< [1] after the dispatch's words: its tokens (clamped)

  // The fallback: local buffers, and the communicator for the collectives it calls.
  std::unique_ptr<detail::CommAlias> comm;
  detail::MoeFallbackLayout fallback;
  detail::DeviceBlock block;

  std::size_t tokens_elements() const {
    return static_cast<std::size_t>(shape.max_tokens) * static_cast<std::size_t>(shape.hidden);
  }

  /// The LSA path's peers (the group's window in slot 0), and the bookkeeping before and after
  /// its launches.
  detail::lsa::Peers peers() const;
  void before(cudaStream_t stream) const;
  void after(cudaStream_t stream) const;

  /// Points `buffers` at the dispatch's tensors, at these offsets from `base`.
  void set_buffers(char* base, std::size_t rows, std::size_t scales, std::size_t expert_count,
                   std::size_t words);
  /// Sets up the path's buffers (collective on the LSA path: the window is registered).
  void make_lsa(const Communicator& user, cudaStream_t stream);
  void make_fallback(cudaStream_t stream);

  /// A dispatch whose tokens `rows` names (NVFP4 data and scales, or BF16 tokens), arguments
  /// checked.
  void dispatch_lsa(detail::lsa::MoeRowsArgs rows, const float* global_scale,
                    const std::int32_t* topk_idx, const float* topk_weights,
                    const std::int32_t* num_tokens, cudaStream_t stream);
  void dispatch_fallback(detail::lsa::MoeRowsArgs rows, const float* global_scale,
                         const std::int32_t* topk_idx, const float* topk_weights,
                         const std::int32_t* num_tokens, cudaStream_t stream);
  void combine_lsa(const bf16* expert_out, bf16* out, cudaStream_t stream);
  void combine_fallback(const bf16* expert_out, bf16* out, cudaStream_t stream);
};

}  // namespace symmcomm
