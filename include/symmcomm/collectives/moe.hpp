#pragma once
/// @file moe.hpp
/// @brief MoE dispatch and combine by expert over a communicator: each routed token's row
/// (NVFP4, FP8 with a scale per 128 elements, or BF16) sent only to the rank holding its expert,
/// written straight into the masked expert-major layout the grouped GEMMs read, and each expert's
/// output sent back and summed per token, with the routing on the device and no host
/// synchronisation (capturable in a CUDA graph, replayed with new routing).
///
/// Expert parallelism over the communicator's `comm.size()` ranks: rank r holds the
/// L = num_experts / comm.size() experts [r L, (r + 1) L). On every rank alike:
///
/// ```cpp
/// symmcomm::MoeConfig cfg;  // num_experts 256, top_k 8, hidden 7168, max_tokens_per_rank 256
/// cfg.num_experts = 256; cfg.top_k = 8; cfg.hidden = 7168; cfg.max_tokens_per_rank = 256;
/// symmcomm::MoeGroup group(comm, cfg, stream);                      // collective
/// symmcomm::MoeDispatch d = group.dispatch(x, topk_idx, topk_weights, num_tokens, stream);
/// // d.data [L][capacity][hidden/2], d.block_scales [L][expert_scale_bytes()] (128 x 4 per
/// // expert), d.expert_count [L], d.global_scale [1]: the masked grouped GEMM's inputs
/// group.combine(expert_out, out, stream);   // expert_out bf16 [L][capacity][hidden] -> out
/// group.check(stream);                      // where a host sync is acceptable
/// ```
///
/// - **Placement**: the rows of one expert come in a fixed order: source rank, then token, then
///   top-k slot (so a replay is bit-for-bit reproducible and the placement a pure function of
///   the routing). Rows past `capacity` are dropped and counted (`overflow`); the default
///   capacity, comm.size() x max_tokens_per_rank, drops nothing. Rows and block scales past an
///   expert's count are zero when the group is made, then left as an earlier dispatch wrote
///   them (a masked grouped GEMM reads only expert_count rows).
/// - **Global scale** (NVFP4 wire): a grouped GEMM applies one alpha per expert, so every rank
///   must quantize with the same NVFP4 global scale (a layer's static scale); a dispatch
///   compares the ranks' scales on the device and sets kMoeErrorGlobalScale where they differ.
///   An FP8 wire needs none: each row's blocks carry their own scales.
/// - **Bad input loses nothing**: an expert id outside -1..num_experts-1 is not placed
///   (kMoeErrorExpertId), a num_tokens outside 0..max_tokens_per_rank places its first
///   max_tokens_per_rank tokens (kMoeErrorNumTokens); both bits are seen by every rank. check()
///   reads the error word and throws naming the argument.
/// - **Buffers**: the group owns its buffers (on the LSA path one symmetric window per rank,
///   window_bytes()); a dispatch's tensors live there until the next dispatch. A dispatch writes
///   rows only after a barrier over the ranks, so it never overwrites rows a slower peer's expert
///   GEMM or combine still reads: no second buffer is needed, inside CUDA graphs too.
/// - **Path** (reason() says which and why): symmcomm's LSA kernels over the group's window
///   where an LSA team spans the communicator (NCCL's device API; MoeGroup::supported), else
///   the fallback over NCCL's collectives: every rank's NVFP4 tokens and routing all-gathered,
///   each rank placing the rows of its experts in the same order and layout, and the combine's
///   per-rank fp32 sums reduce-scattered in fp32, rounded once. PathChoice::LsaKernel is refused
///   where it cannot run; PathChoice::Fallback forces the fallback.
/// - **Combine in place** (MoeConfig::combine_in_place): the group also holds the experts'
///   outputs (MoeDispatch::expert_out); a GEMM writing there lets combine() read each row where
///   it was computed, in one pass, instead of sending it back first.
/// - **Stream**: use one stream per communicator for the group's calls and symmcomm's other
///   collectives, in the same order on every rank (each call meets its peers in barriers).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "symmcomm/comm/communicator.hpp"
#include "symmcomm/formats/bf16.hpp"
#include "symmcomm/formats/views.hpp"
#include "symmcomm/path.hpp"

namespace symmcomm {

/// @brief Error bits of a dispatch's error word (MoeDispatch::error), the same on every rank.
inline constexpr std::int32_t kMoeErrorExpertId = 1;     ///< a top-k id outside -1..experts-1
inline constexpr std::int32_t kMoeErrorNumTokens = 2;    ///< num_tokens outside 0..max tokens
inline constexpr std::int32_t kMoeErrorGlobalScale = 4;  ///< the ranks' global scales differ

/// @brief One MoE layer's expert-parallel shape, the same on every rank.
struct MoeConfig {
  int num_experts = 0;          ///< experts in the layer, a multiple of comm.size(), <= 1024
  int top_k = 0;                ///< experts per token, 1..num_experts
  int hidden = 0;               ///< elements per token, a multiple of 64 (128: an FP8 wire)
  int max_tokens_per_rank = 0;  ///< the most tokens a rank dispatches in one call
  int capacity = 0;             ///< rows per expert on its rank; 0: comm.size() x max tokens
  /// The rows' format on the wire and in the dispatch layout: DataType::Nvfp4 (packed e2m1 and
  /// swizzled block scales, for NVFP4 grouped GEMMs), DataType::Fp8E4M3 (e4m3 codes and an fp32
  /// scale per 128 elements, the layout of DeepEP's low-latency FP8 dispatch that DeepGEMM's
  /// m_grouped_fp8_gemm_nt_masked reads; BF16 tokens quantized in the dispatch, no global
  /// scale) or DataType::Bf16 (rows as they are, for BF16 grouped GEMMs; no scales).
  DataType wire = DataType::Nvfp4;
  /// The combine reads the experts' outputs in place: the group holds them
  /// (MoeDispatch::expert_out, [L][capacity][hidden] bf16, in its window on the LSA path) and
  /// each token's rank reads and sums its rows from there in one pass, where the default sends
  /// every row back to its token's rank first. A GEMM that writes its output into expert_out
  /// saves that traffic; outputs elsewhere are copied in first (their counted rows).
  bool combine_in_place = false;
};

/// @brief What a dispatch leaves on this rank: device pointers into the group's window, the
/// same for every dispatch of a group (a graph captures them once).
struct MoeDispatch {
  std::uint8_t* data = nullptr;  ///< [L][capacity] rows: hidden / 2 bytes of packed e2m1
                                 ///< (NVFP4 wire), hidden e4m3 codes (FP8) or hidden bf16 (BF16)
  /// [L][expert_scale_bytes]: NVFP4, each expert's e4m3 block scales swizzled 128 x 4; FP8, each
  /// expert's float scales column-major, [hidden / 128][capacity rounded up to 4] (row m's
  /// scale of block b at float b x rows + m: the MN-major layout TMA loads); null on BF16.
  std::uint8_t* block_scales = nullptr;
  std::int32_t* expert_count = nullptr;  ///< [L]: each local expert's rows (masked_m)
  float* global_scale = nullptr;     ///< [1]: rank 0's global scale, every expert's alpha (NVFP4)
  std::int32_t* overflow = nullptr;  ///< [1]: this rank's experts' pairs dropped past capacity
  std::int32_t* error = nullptr;     ///< [1]: kMoeError* bits of every rank's input
  bf16* expert_out = nullptr;  ///< [L][capacity][hidden] where MoeConfig::combine_in_place: where
                               ///< the experts' GEMM may write its outputs for combine()
};

/// @brief Expert-parallel dispatch and combine of one MoE layer shape (see the file comment).
class MoeGroup {
 public:
  /// @brief Whether the LSA path can run on `comm` (symmcomm's kernels over a window); where
  /// not, `why` (if given) says why, and a group takes the fallback.
  static bool supported(const Communicator& comm, std::string* why = nullptr);

  /// @brief Collective: makes the group's buffers on every rank (the same `config` and `path`
  /// on every rank): the LSA path registers one window, the fallback allocates device memory
  /// for every rank's gathered tokens. `path`: Auto, LsaKernel or Fallback. @throws LogicError
  /// naming a bad field of `config`, or saying why a forced path cannot run.
  MoeGroup(const Communicator& comm, const MoeConfig& config, cudaStream_t stream = nullptr,
           PathChoice path = PathChoice::Auto);
  /// @brief Releases the group's window (collective: every rank destroys its group, in the
  /// same order as other windows of the communicator).
  ~MoeGroup();
  /// @brief Moves the group (the moved-from group refuses every call).
  MoeGroup(MoeGroup&&) noexcept;
  /// @brief Moves the group, releasing this one's window first.
  MoeGroup& operator=(MoeGroup&&) noexcept;
  MoeGroup(const MoeGroup&) = delete;
  MoeGroup& operator=(const MoeGroup&) = delete;

  /// @brief The group's shape, capacity resolved.
  const MoeConfig& config() const noexcept;
  /// @brief L: the experts each rank holds.
  int local_experts() const noexcept;
  /// @brief Bytes of one expert's block scales (capacity rows, padding included; 0 on BF16).
  std::size_t expert_scale_bytes() const noexcept;
  /// @brief Bytes of the group's window on each rank (0 on the fallback, which has none).
  std::size_t window_bytes() const noexcept;
  /// @brief The path the group's calls take: Path::LsaKernel or Path::Fallback.
  Path path() const noexcept;
  /// @brief The dispatch's tensors (what dispatch() returns), valid while the group lives.
  const MoeDispatch& buffers() const noexcept;
  /// @brief The path dispatch and combine take, and why.
  std::string reason() const;

  /// @brief Sends each routed token to its experts' ranks (an NVFP4 wire). `x`:
  /// max_tokens_per_rank x hidden NVFP4 elements (linear block scales, data 16-byte and scales
  /// 4-byte aligned, its global_scale the layer's static scale); `topk_idx` int32 and
  /// `topk_weights` float32 [max_tokens_per_rank][top_k] (-1: no expert); `num_tokens` int32 [1]:
  /// the rows of x that are tokens. All device pointers, read when the dispatch runs on `stream`.
  /// Collective. Returns buffers().
  const MoeDispatch& dispatch(ConstNvfp4View x, const std::int32_t* topk_idx,
                              const float* topk_weights, const std::int32_t* num_tokens,
                              cudaStream_t stream);

  /// @brief As above with BF16 tokens `x` (max_tokens_per_rank x hidden elements, 16-byte
  /// aligned): on an NVFP4 wire quantized inside the dispatch with the device float
  /// `global_scale` (the layer's static scale), each block as quantize() does, no separate
  /// quantize launch; on an FP8 wire quantized there per 128-element block as
  /// fp8_quantize_block does (`global_scale` null); on a BF16 wire moved as they are
  /// (`global_scale` null).
  const MoeDispatch& dispatch(ConstBf16Span x, const float* global_scale,
                              const std::int32_t* topk_idx, const float* topk_weights,
                              const std::int32_t* num_tokens, cudaStream_t stream);

  /// @brief Each of this rank's tokens' output, `out` bf16 [max_tokens_per_rank][hidden]: the
  /// outputs of its top-k experts (`expert_out` bf16 [L][capacity][hidden] on every rank, in
  /// the last dispatch's layout, 16-byte aligned) weighted by the dispatch's topk_weights,
  /// summed in fp32 and rounded once; dropped pairs add nothing. Only the rows of the tokens
  /// dispatched (num_tokens, clamped to 0..max_tokens_per_rank) are written: the rest of `out` is
  /// unspecified (left as it was on the LSA path, zero on the fallback), so a decode step of few
  /// tokens writes few rows. Collective; follows the dispatch on `stream`.
  void combine(const bf16* expert_out, bf16* out, cudaStream_t stream);

  /// @brief Waits for `stream`, then throws LogicError naming the argument of every error bit
  /// the last dispatch set (topk_idx, num_tokens, x.global_scale). Returns the overflow.
  std::int32_t check(cudaStream_t stream) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace symmcomm
