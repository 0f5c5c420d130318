#pragma once
// Private: symmcomm's small-message all-gather and reduce-scatter (lsa_ll.cu), which meet their
// peers through the data instead of barriers.
//
// Every LSA kernel of lsa.hpp opens and closes with a barrier over the team; at a few KiB per
// rank those two barriers are most of a call's time (BM_LatencyLsaBarriers measures them). This
// kernel sends each 8 bytes of data as a 16-byte line {4 data bytes, flag, 4 data bytes, flag}
// (NCCL's "LL" protocol idea: an aligned 8-byte store lands whole, so a reader that sees the flag
// sees its data) into its slot of every peer's scratch window, and each rank copies its own scratch
// into its receive buffer once every line's flags carry this call's value. Nothing else
// synchronises:
//
// - The flag is the call's number on this communicator (kept on the device, so graph replays
//   advance it), with the top bit set: zeroed scratch never matches, nor does a line written by
//   any of the 2^31 - 1 calls before. (The flags repeat every 2^31 calls: a line left unwritten
//   for exactly a multiple of 2^31 calls, then read, would match early - days of calls at decode
//   rates, and only for a line no call in between used.)
// - The scratch has two halves, used by alternate calls. A rank overwrites a half in call c + 2
//   only after it received every peer's lines of call c + 1, which each peer sent from a kernel
//   that started after its kernel of call c - the one reading that half - had completed (one
//   stream per communicator for symmcomm's windowed work: launch_order.hpp). So no opening
//   barrier; and a kernel ends when its own receive buffer is complete, which is all the caller
//   may rely on for an all-gather (peers' buffers are theirs).
// - Every rank makes the same sequence of calls (collective), so call numbers agree.
//
// Production only (a device communicator and a scratch window): loopback runs virtual ranks one
// after another, and a rank waiting for a later rank's lines would never finish.

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>

#include "core/launch_share.hpp"
#include "lsa.hpp"

namespace symmcomm::detail {

/// The scratch window the collectives make with a communicator (collectives/scratch.hpp) for
/// the kernels that meet their peers through flags in the data: two halves used by alternate
/// calls, each holding one slot of kLlSlotBytes per source rank.
inline constexpr std::size_t kLlSlotBytes = std::size_t{192} << 10;
/// Bytes of the scratch window of a communicator of `ranks` ranks, on every rank.
inline constexpr std::size_t scratch_window_bytes(int ranks) {
  return 2 * static_cast<std::size_t>(ranks) * kLlSlotBytes;
}

/// The line format: bytes of one line (8 data bytes and two 4-byte flags) and the data bytes it
/// carries. A source rank's slot of the scratch window holds kLlMaxBytesPerRank of data as
/// lines: the most bytes one rank sends per call (all segments, each rounded up to whole lines)
/// - the sizes where the barriers dominate; larger calls take the barrier kernels, whose stores
/// carry no flags.
inline constexpr std::size_t kLlLineBytes = 16;
inline constexpr std::size_t kLlLineData = 8;
inline constexpr std::size_t kLlMaxBytesPerRank = kLlSlotBytes / kLlLineBytes * kLlLineData;
static_assert(kLlMaxBytesPerRank == std::size_t{96} << 10, "a slot carries 96 KiB of data");

}  // namespace symmcomm::detail

namespace symmcomm::detail::lsa {

/// What every scratch-line kernel takes of its communicator (the collectives' device view fills
/// it once: ll_scratch_view): this rank, the ranks, the scratch window and its call counter.
struct LlScratchView {
  int rank = 0, size = 1;
  ncclWindow_t scratch = nullptr;  ///< scratch_window_bytes(size) bytes on every rank
  std::uint32_t* calls = nullptr;  ///< this rank's call counter and CTA tally (2 words)
  /// symmcomm's abort word (comm/dev_comm.hpp, device_abort_word), polled while waiting for a
  /// peer's lines: after ncclCommAbort the kernel ends, its receive buffer incomplete. Null
  /// (NCCL 2.28's device API has none): it waits as NCCL 2.28's LSA barriers do.
  const std::uint32_t* abort_word = nullptr;
};

/// One byte range this rank sends: `bytes` from local `src`, landing at `recv` + rank x bytes
/// on every rank (this rank's `recv` local; the same bytes on every rank).
struct LlSegment {
  const void* src = nullptr;
  void* recv = nullptr;
  std::size_t bytes = 0;
  std::size_t first_line = 0;  ///< the segment's first line in a rank's slot
};

/// A small all-gather of up to kSlots segments through the scratch window.
struct LlGatherArgs : LlScratchView {
  LlSegment segment[kSlots];
  int segments = 0;
  std::size_t lines = 0;  ///< lines per rank: the segments' lines, in order
};

/// Lines `bytes` take in a slot.
SYMMCOMM_HD constexpr std::size_t ll_lines(std::size_t bytes) {
  return (bytes + kLlLineData - 1) / kLlLineData;
}

/// Whether this kernel is used where it fits: the latency benchmark's switch, to compare both
/// kernels in one run (SYMMCOMM_LSA_LL=0 acts at communicator creation instead: no scratch).
/// Process-wide; the same on every rank of a communicator (ranks deciding differently would
/// wait for each other for ever).
void set_ll_gather(bool on) noexcept;
bool ll_gather_enabled() noexcept;

/// How the push reduce-scatters deal their receive work to threads: each kernel's own mapping
/// (KernelDefault: the quantized kernel deals its 8-element parts to CTAs in turn, so a small
/// shard's decoding spreads over every CTA's SM; the BF16 kernel fills CTAs in order), or one
/// mapping for both, for the latency benchmark to compare them in one run.
enum class LlReceive : int { KernelDefault, InOrder, Spread };
void set_ll_receive(LlReceive mapping) noexcept;
LlReceive ll_receive() noexcept;

/// Whether an all-gather of `bytes` per rank taking `lines` lines goes through this kernel: the
/// communicator has the scratch (`scratch`), the kernel is enabled, and the lines fit a slot.
inline bool ll_fits(bool scratch, std::size_t bytes, std::size_t lines) {
  return scratch && ll_gather_enabled() && bytes > 0 && lines <= kLlMaxBytesPerRank / kLlLineData;
}

/// Launches the all-gather (checks its arguments; lines <= kLlMaxBytesPerRank / 8).
/// `share` caps the grid as for the other LSA kernels (Peers::share).
void ll_gather(const LlGatherArgs& args, LaunchShare share, cudaStream_t stream);

/// A small reduce-scatter pushed through the same scratch (the push model): each rank writes
/// shard p of its `send` (`shard` elements each, rank after rank) as lines with the call's flag
/// into its slot of peer p's scratch; each rank sums its own shard from every rank in rank order
/// in fp32 once every line's flags carry the call's number (its own shard read from its own
/// send), rounds once into `out`. Same call counter and halves as the all-gather (the reuse
/// argument above holds as it is: a rank writes into peers' scratch and reads only its own), no
/// barrier. Production only.
///
/// BF16 in, BF16 out: a shard's values are its lines. NVFP4 or FP8 in (codes, with NVFP4 block
/// scales and one fp32 scale per rank), BF16 or FP32 out: a slot holds the shard's codes, one
/// line per 8 bytes (an NVFP4 line is exactly one 16-element block), then (NVFP4) its block
/// scale codes, then one line with the sender's scale; the receiver dequantizes each rank's
/// values with that rank's scales, in the arithmetic of the pull kernel (lsa_reduce.cuh), so
/// both give the same bits.
struct LlReduceArgs : LlScratchView {
  DataType type = DataType::Bf16;              ///< send: Bf16, Nvfp4, Fp8E4M3 or Fp8E5M2
  const void* send = nullptr;                  ///< size x shard elements: bf16 values or codes
  const std::uint8_t* block_scales = nullptr;  ///< NVFP4: size x shard / 16 e4m3 codes
  const float* scale = nullptr;  ///< NVFP4 global scale / FP8 scale of this rank (one float)
  void* out = nullptr;           ///< shard elements: bf16, or fp32 when out_fp32 (quantized in)
  bool out_fp32 = false;
  std::size_t shard = 0;  ///< elements per rank
};

/// Elements one line of quantized codes holds: an NVFP4 block (16) or 8 FP8 values.
inline constexpr std::size_t ll_line_elements(DataType type) {
  return type == DataType::Nvfp4 ? 16 : 8;
}

/// Lines a rank's contribution to one peer takes: a BF16 shard's values, or a quantized shard's
/// codes, block scale codes (NVFP4) and the scale line.
inline constexpr std::size_t ll_reduce_lines(DataType type, std::size_t shard) {
  if (type == DataType::Bf16) return ll_lines(2 * shard);
  std::size_t const items = shard / ll_line_elements(type);
  return items + (type == DataType::Nvfp4 ? ll_lines(items) : 0) + 1;
}

/// The largest quantized shard (elements) the push kernel takes: decode sizes, up to 64 KiB of
/// bf16 output per rank. Larger shards take the pull kernel, whose grid spans the GPU (this
/// kernel's stops at a few CTAs per rank).
inline constexpr std::size_t kLlQuantizedMaxShard = 32768;

/// Whether a reduce-scatter of `shard` elements per rank from `type` fits the push-model kernel:
/// the communicator has the scratch, the kernels are enabled, the shard is whole lines of codes
/// (quantized: whole NVFP4 blocks, or 8 FP8 values, up to kLlQuantizedMaxShard), and its lines
/// fit a slot.
inline bool ll_reduce_fits(bool scratch, DataType type, std::size_t shard) {
  bool const typed = type == DataType::Bf16 ||
                     (shard % ll_line_elements(type) == 0 && shard <= kLlQuantizedMaxShard);
  return scratch && ll_gather_enabled() && shard > 0 && typed &&
         ll_reduce_lines(type, shard) <= kLlMaxBytesPerRank / kLlLineData;
}

/// Launches the push-model reduce-scatter (checks its arguments first; a quantized one needs
/// `out` 16-byte aligned).
void ll_reduce_scatter(const LlReduceArgs& args, LaunchShare share, cudaStream_t stream);

}  // namespace symmcomm::detail::lsa
