#pragma once
// Private: the MoE dispatch and combine kernels by expert (moe.cu; launch bodies in
// moe_launchers.cuh, templates over the peer description like the other LSA kernels).
//
// One group window per rank (MoeGroup, collectives/moe_group.cpp) holds, at the same offsets on
// every rank (MoeLayout): the count table every source writes its per-expert pair counts into,
// the masked expert-major receive tensors (rows, swizzled block scales, each row's origin) and
// the rows experts send back for the combine. Four launches, each ordered by the stream:
//
//   counts   (1 CTA)  this rank's per-expert pair counts, error bits and global scale into every
//                     peer's table (one of two, alternating by dispatch); barrier; then, from
//                     the whole table, each of
//                     this rank's pairs' row on its expert (source rank, token, top-k slot order:
//                     an exclusive prefix over the lower ranks' counts plus the pair's rank among
//                     this rank's own), and this rank's expert counts, overflow and error word;
//   rows     (grid)   each placed pair's row (NVFP4 or FP8 codes, quantized on the way from BF16
//                     tokens, or copied), its scales at their places (NVFP4's 128 x 4 tiles,
//                     FP8's column-major) and its origin written straight into its expert's
//                     rank; barrier;
//   send back (grid)  each row this rank's experts computed sent to its token's rank, into the
//                     slot (token, top-k slot) there; barrier;
//   sum      (grid)   each token's rows weighted by its top-k weights, summed in fp32, rounded
//                     once to bf16 (local);
//   or, in place (MoeShape::in_place), pull (grid): barrier; each token's rows read from the
//                     expert outputs in their ranks' windows, summed in fp32, rounded once.
//
// No host synchronisation, so a layer's dispatch and combine capture in a CUDA graph and replay
// with new routing. The window needs no second buffer of rows: the counts launch's barrier
// returns only once every peer finished its previous stream work (its expert GEMM read the
// rows, its combine read the origins and the rows sent back or its peers' expert outputs), and
// nothing but the count table is written before it - the table alternates by dispatch, so the
// one written was last read two dispatches ago (docs/moe.md, "Double buffering").

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "lsa.hpp"
#include "symmcomm/formats/fp8.hpp"
#include "symmcomm/formats/traits.hpp"

namespace symmcomm::detail::lsa {

/// Error bits a dispatch leaves in its error word (the same on every rank).
inline constexpr std::int32_t kMoeErrorExpertId = 1;     ///< a top-k id outside -1..experts-1
inline constexpr std::int32_t kMoeErrorNumTokens = 2;    ///< a num_tokens outside 0..max_tokens
inline constexpr std::int32_t kMoeErrorGlobalScale = 4;  ///< the ranks' global scales differ

/// Most experts a group has (the counts launch keeps a word per expert in shared memory).
inline constexpr int kMaxMoeExperts = 1024;

/// The shape of one MoE layer's expert parallelism (the same on every rank).
struct MoeShape {
  int ranks = 1;
  int experts = 1;  ///< a multiple of ranks
  int top_k = 1;
  int hidden = 64;     ///< elements per token, a multiple of 64
  int max_tokens = 1;  ///< tokens per rank, at most
  int capacity = 1;    ///< rows per expert on its rank
  /// The rows' format on the wire and in the dispatch layout: Nvfp4 (packed e2m1, e4m3 block
  /// scales per 16 elements swizzled 128 x 4), Fp8E4M3 (e4m3 codes, an fp32 scale per 128
  /// elements, per expert column-major [hidden / 128][scale_rows]) or Bf16 (no scales).
  DataType wire = DataType::Nvfp4;
  /// The experts' outputs live in the window (MoeLayout::expert_out) and the combine reads them
  /// in place (MoePullArgs), else they are sent back (MoeSendBackArgs, MoeSumArgs).
  bool in_place = false;

  SYMMCOMM_HD int local_experts() const { return experts / ranks; }
  SYMMCOMM_HD int pairs() const { return max_tokens * top_k; }
  SYMMCOMM_HD bool fp8_wire() const { return wire == DataType::Fp8E4M3; }
  SYMMCOMM_HD bool bf16_wire() const { return wire == DataType::Bf16; }
  /// Bytes of one row on the wire and in the dispatch layout.
  SYMMCOMM_HD std::size_t row_bytes() const {
    auto const h = static_cast<std::size_t>(hidden);
    return bf16_wire() ? 2 * h : (fp8_wire() ? h : h / 2);
  }
  /// Scales per row: one per 16 elements (NVFP4) or per 128 (FP8); none on a BF16 wire.
  SYMMCOMM_HD std::size_t scale_cols() const {
    auto const h = static_cast<std::size_t>(hidden);
    return bf16_wire() ? 0 : (fp8_wire() ? h / kFp8BlockSize : h / 16);
  }
  /// Bytes of one token's scales in a linear layout (1 per NVFP4 scale, 4 per FP8 scale).
  SYMMCOMM_HD std::size_t token_scale_bytes() const { return scale_cols() * (fp8_wire() ? 4 : 1); }
  /// FP8 wire: the rows of an expert's column-major scale matrix, capacity rounded up to 4 (the
  /// 16-byte alignment of each column that TMA loads need).
  SYMMCOMM_HD std::size_t scale_rows() const {
    return round_up_to(static_cast<std::size_t>(capacity), 4);
  }
  /// Bytes of one expert's block scales (capacity rows, padding included; none for a BF16 wire).
  SYMMCOMM_HD std::size_t expert_scale_bytes() const {
    if (bf16_wire()) return 0;
    if (fp8_wire()) return scale_cols() * scale_rows() * 4;
    return swizzled_scale_bytes(static_cast<std::size_t>(capacity), scale_cols());
  }
  /// Where row `row`'s scale `col` lies in its expert's scales, in bytes.
  SYMMCOMM_HD std::size_t scale_offset(std::size_t row, std::size_t col) const {
    return fp8_wire() ? (col * scale_rows() + row) * 4
                      : swizzled_scale_offset(row, col, scale_cols());
  }
  /// int32 words per source in the count table: a count per expert, the error bits and the
  /// global scale's bits.
  SYMMCOMM_HD int table_words() const { return experts + 2; }
  /// Warps each of `pairs` rows is quantized by when `warps` warps run the dispatch: an FP8 row
  /// is split (up to kMaxFp8RowParts parts) only into warps that would otherwise idle. A warp's
  /// blocks are a chain of dependent loads and shuffle reductions, so one warp per row sets the
  /// latency at decode sizes (a few pairs, most warps idle); once the pairs fill the grid, a
  /// split only adds each part's setup (measured: slower from 64 tokens of top-8 on 8 ranks
  /// sharing an H100). NVFP4 and BF16 rows take one warp (no shuffles in their blocks).
  static constexpr int kMaxFp8RowParts = 4;
  SYMMCOMM_HD int quantize_row_parts(int pairs, int warps) const {
    if (!fp8_wire() || pairs <= 0 || warps <= pairs) return 1;
    int const idle = warps / pairs;
    return idle < kMaxFp8RowParts ? idle : kMaxFp8RowParts;
  }
  /// The scale blocks [first, last) of a row that part `part` of `parts` quantizes (the dispatch
  /// splits an FP8 row among warps): contiguous, in order, every block in exactly one part;
  /// parts past the row's blocks are empty.
  SYMMCOMM_HD void row_part(int part, int parts, std::size_t& first, std::size_t& last) const {
    std::size_t const cols = scale_cols();
    std::size_t const per =
        (cols + static_cast<std::size_t>(parts) - 1) / static_cast<std::size_t>(parts);
    first = static_cast<std::size_t>(part) * per;
    last = first + per < cols ? first + per : cols;
    if (first > last) first = last;
  }
};

/// Byte offsets of the group window's parts (every one 16-byte aligned), the same on every rank.
struct MoeLayout {
  /// int32 [2][ranks][table_words]: written by every source, the two tables alternating by
  /// dispatch
  std::size_t table = 0;
  std::size_t rows = 0;  ///< [L][capacity] rows of row_bytes (NVFP4 or FP8 codes, or BF16)
  /// [L][expert_scale_bytes]: each expert's scales in their layout (MoeShape::scale_offset)
  std::size_t scales = 0;
  std::size_t origin = 0;  ///< int32 [L][capacity]: (source * max_tokens + token) * top_k + slot
  std::size_t back = 0;    ///< bf16 [max_tokens][top_k][hidden]: rows sent back for the combine
  /// bf16 [L][capacity][hidden] where MoeShape::in_place (else empty): the experts' outputs,
  /// which the tokens' ranks read in place
  std::size_t expert_out = 0;
  // This rank's own (in the window only to make one allocation): MoeCountsArgs' outputs.
  std::size_t pair_row = 0;      ///< int32 [max_tokens][top_k]
  std::size_t pair_expert = 0;   ///< int32 [max_tokens][top_k]
  std::size_t weights = 0;       ///< float [max_tokens][top_k]
  std::size_t expert_count = 0;  ///< int32 [L]
  std::size_t words = 0;         ///< overflow, error, group scale (float), tokens placed
  std::size_t epoch = 0;         ///< int32 [1]: this rank's dispatches so far
  std::size_t bytes = 0;         ///< the window's size

  static MoeLayout of(const MoeShape& s);
};

/// What the counts launch needs. `peers` slot 0 is the group window.
struct MoeCountsArgs {
  MoeShape shape{};
  const std::int32_t* topk_idx = nullptr;    ///< [max_tokens][top_k], local
  const float* topk_weights = nullptr;       ///< [max_tokens][top_k], local
  const std::int32_t* num_tokens = nullptr;  ///< [1], local
  const float* global_scale = nullptr;       ///< [1], local
  std::size_t table = 0;                     ///< MoeLayout::table
  // Local outputs.
  /// [max_tokens][top_k]: the pair's row on its expert, or -1; like `weights`, written for the
  /// `tokens` placed only (every reader stops there: a step of 1 token touches its own pairs)
  std::int32_t* pair_row = nullptr;
  std::int32_t* pair_expert = nullptr;   ///< [max_tokens][top_k]: the pair's expert, or -1
  float* weights = nullptr;              ///< [max_tokens][top_k]: the weights, kept for the combine
  std::int32_t* expert_count = nullptr;  ///< [L]
  std::int32_t* overflow = nullptr;      ///< [1]: this rank's experts' pairs past capacity
  std::int32_t* error = nullptr;         ///< [1]: error bits of every rank
  float* group_scale = nullptr;          ///< [1]: rank 0's global scale (every expert's alpha)
  std::int32_t* tokens = nullptr;        ///< [1]: this rank's tokens placed (num_tokens clamped)
  std::int32_t* epoch = nullptr;         ///< [1]: MoeLayout::epoch (picks the table)
  /// 0: the whole launch (production). Loopback launches every virtual rank with 1 (its counts
  /// into every table) before any with 2 (the placement from the table).
  int phase = 0;
};

/// What the rows launch needs: this rank's tokens - NVFP4 or FP8 rows with linear scales, or
/// BF16 that the launch quantizes (NVFP4 with `global_scale`, FP8 per 128-element block), or (a
/// BF16 wire) BF16 rows copied as they are - and the placement the counts launch wrote.
struct MoeRowsArgs {
  MoeShape shape{};
  const std::uint8_t* data = nullptr;          ///< [max_tokens] rows of row_bytes, local
  const std::uint8_t* block_scales = nullptr;  ///< [max_tokens][token_scale_bytes], linear
  /// Non-null: BF16 tokens [max_tokens][hidden] (16-byte aligned) quantized in the launch to the
  /// wire's format, each block as symmcomm's codecs do: NVFP4 with the global scale at
  /// `global_scale`, FP8 as fp8_quantize_block (data and block_scales unused).
  const bf16* bf16_tokens = nullptr;
  const float* global_scale = nullptr;
  const std::int32_t* topk_idx = nullptr;  ///< as MoeCountsArgs
  const std::int32_t* pair_row = nullptr;  ///< MoeCountsArgs::pair_row
  const std::int32_t* tokens = nullptr;    ///< MoeCountsArgs::tokens: the pairs to place
  MoeLayout layout{};
};

/// What the send-back launch needs: this rank's experts' outputs in the dispatch's layout.
struct MoeSendBackArgs {
  MoeShape shape{};
  const bf16* expert_out = nullptr;            ///< [L][capacity][hidden], local
  const std::int32_t* expert_count = nullptr;  ///< MoeCountsArgs::expert_count
  MoeLayout layout{};
};

/// What the sum launch needs (all local: the rows sent back are in this rank's window).
struct MoeSumArgs {
  MoeShape shape{};
  const bf16* back = nullptr;              ///< MoeLayout::back in this rank's window
  const std::int32_t* pair_row = nullptr;  ///< MoeCountsArgs::pair_row
  const float* weights = nullptr;          ///< MoeCountsArgs::weights
  const std::int32_t* tokens = nullptr;    ///< MoeCountsArgs::tokens: the rows of out written
  bf16* out = nullptr;                     ///< [max_tokens][hidden]
};

/// The combine of MoeShape::in_place: after a barrier (every rank's expert outputs in its
/// window), each of this rank's dispatched tokens reads its placed pairs' rows from their
/// experts' ranks, weights and sums them in fp32 in slot order and rounds once - one pass.
struct MoePullArgs {
  MoeShape shape{};
  MoeLayout layout{};
  const std::int32_t* pair_row = nullptr;     ///< MoeCountsArgs::pair_row
  const std::int32_t* pair_expert = nullptr;  ///< MoeCountsArgs::pair_expert
  const float* weights = nullptr;             ///< MoeCountsArgs::weights
  const std::int32_t* tokens = nullptr;       ///< MoeCountsArgs::tokens: the rows of out written
  bf16* out = nullptr;                        ///< [max_tokens][hidden]
};

/// The fallback's dispatch on rank `me` (collectives/moe_fallback.cpp): every rank's rows (NVFP4
/// or FP8 with linear scales, or BF16) and routing gathered (rank-major) into local memory by NCCL,
/// this rank places the pairs routed to its experts, in the same order and layout as the LSA path.
struct MoeLocalArgs {
  MoeShape shape{};
  int me = 0;
  const std::int32_t* topk_idx = nullptr;      ///< [ranks][max_tokens][top_k], gathered
  const std::int32_t* num_tokens = nullptr;    ///< [ranks], gathered
  const float* global_scales = nullptr;        ///< [ranks], gathered (null: a BF16 wire)
  const std::uint8_t* data = nullptr;          ///< [ranks * max_tokens] rows, gathered
  const std::uint8_t* block_scales = nullptr;  ///< [ranks * max_tokens][token_scale_bytes]
  std::int32_t* pair_row = nullptr;  ///< [ranks][pairs]: the row of a pair on this rank's expert
  std::int32_t* expert_count = nullptr;  ///< as MoeCountsArgs
  std::int32_t* overflow = nullptr;
  std::int32_t* error = nullptr;
  float* group_scale = nullptr;
  std::uint8_t* rows = nullptr;    ///< [L][capacity][hidden / 2], local
  std::uint8_t* scales = nullptr;  ///< [L][expert_scale_bytes], local
};

/// The fallback's combine on rank `me`, before NCCL's fp32 reduce-scatter: for every gathered
/// token, the weighted sum of its rows this rank's experts computed (zero where none).
struct MoePartialArgs {
  MoeShape shape{};
  int me = 0;
  const bf16* expert_out = nullptr;        ///< [L][capacity][hidden]
  const std::int32_t* topk_idx = nullptr;  ///< MoeLocalArgs::topk_idx
  const float* topk_weights = nullptr;     ///< [ranks][max_tokens][top_k], gathered
  const std::int32_t* pair_row = nullptr;  ///< MoeLocalArgs::pair_row
  float* partial = nullptr;                ///< [ranks * max_tokens][hidden]
};

/// The fallback's kernels (moe_local.cu): the placement (one CTA, then the rows), the partial
/// sums, and the rounding of the reduce-scattered fp32 sums to bf16.
void moe_place_local(const MoeLocalArgs& args, cudaStream_t stream);
void moe_partial_sums(const MoePartialArgs& args, cudaStream_t stream);
void moe_round_bf16(const float* in, bf16* out, std::size_t count, cudaStream_t stream);
/// The fallback's FP8 wire: `tokens` rows of BF16 `in` ([tokens][hidden], 16-byte aligned)
/// quantized per 128-element block as the rows launch does, codes into `data` [tokens][hidden]
/// and scales into `scales` [tokens][hidden / 128] (linear).
void moe_quantize_fp8(const bf16* in, int tokens, int hidden, std::uint8_t* data, float* scales,
                      cudaStream_t stream);
/// Each local expert's counted rows of `src` ([L][capacity][hidden] bf16) copied to `dst` (the
/// same layout): expert outputs computed elsewhere, into the window of an in-place combine.
void moe_copy_placed_rows(const MoeShape& shape, const std::int32_t* expert_count, const bf16* src,
                          bf16* dst, cudaStream_t stream);

/// Launch one step for the calling rank (arguments checked by MoeGroup; the launchers assert
/// only what a bug in symmcomm could break).
void moe_counts(const Peers& peers, const MoeCountsArgs& args, cudaStream_t stream);
void moe_rows(const Peers& peers, const MoeRowsArgs& args, cudaStream_t stream);
void moe_send_back(const Peers& peers, const MoeSendBackArgs& args, cudaStream_t stream);
void moe_sum(const MoeSumArgs& args, cudaStream_t stream);
void moe_pull(const Peers& peers, const MoePullArgs& args, cudaStream_t stream);

}  // namespace symmcomm::detail::lsa
