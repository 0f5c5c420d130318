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
//   advance it), with the top bit set: zeroed scratch and lines of earlier calls never match.
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

#include "lsa.hpp"

namespace symmcomm::detail::lsa {

// Line sizes, the per-rank limit and the scratch size: comm/lsa_limits.hpp (the communicator
// makes the scratch).

/// One byte range this rank sends: `bytes` from local `src`, landing at `recv` + rank x bytes
/// on every rank (this rank's `recv` local; the same bytes on every rank).
struct LlSegment {
  const void* src = nullptr;
  void* recv = nullptr;
  std::size_t bytes = 0;
  std::size_t first_line = 0;  ///< the segment's first line in a rank's slot
};

/// A small all-gather of up to kSlots segments through the scratch window.
struct LlGatherArgs {
  LlSegment segment[kSlots];
  int segments = 0;
  std::size_t lines = 0;  ///< lines per rank: the segments' lines, in order
  int rank = 0, size = 1;
  ncclWindow_t scratch = nullptr;  ///< ll_scratch_bytes(size) bytes on every rank
  std::uint32_t* calls = nullptr;  ///< this rank's call counter and CTA tally (2 words)
  /// symmcomm's abort word (comm/dev_comm.hpp, device_abort_word), polled while waiting for a
  /// peer's lines: after ncclCommAbort the kernel ends, its receive buffer incomplete. Null
  /// (NCCL 2.28's device API has none): it waits as NCCL 2.28's LSA barriers do.
  const std::uint32_t* abort_word = nullptr;
};

/// Lines `bytes` take in a slot.
inline constexpr std::size_t ll_lines(std::size_t bytes) {
  return (bytes + kLlLineData - 1) / kLlLineData;
}

/// Whether this kernel is used where it fits: the latency benchmark's switch, to compare both
/// kernels in one run (SYMMCOMM_LSA_LL=0 acts at communicator creation instead: no scratch).
/// Process-wide; the same on every rank of a communicator (ranks deciding differently would
/// wait for each other for ever).
void set_ll_gather(bool on) noexcept;
bool ll_gather_enabled() noexcept;

/// Whether an all-gather of `bytes` per rank taking `lines` lines goes through this kernel: the
/// communicator has the scratch (`scratch`), the kernel is enabled, and the lines fit a slot.
inline bool ll_fits(bool scratch, std::size_t bytes, std::size_t lines) {
  return scratch && ll_gather_enabled() && bytes > 0 && lines <= kLlMaxBytesPerRank / kLlLineData;
}

/// Launches the all-gather (checks its arguments; lines <= kLlMaxBytesPerRank / 8).
/// `sm_share` caps the grid as for the other LSA kernels (Peers::sm_share).
void ll_gather(const LlGatherArgs& args, int sm_share, cudaStream_t stream);

/// A small BF16 reduce-scatter pushed through the same scratch (the push model): each rank
/// writes shard p of its `send` (shard_bytes each, rank after rank) as lines with the call's
/// flag into its slot of peer p's scratch; each rank sums its own shard from every rank in rank
/// order in fp32 once every line's flags carry the call's number (its own shard read from its
/// own send), rounds once to bf16 into `out`. Same call counter and halves as the all-gather
/// (the reuse argument above holds as it is: a rank writes into peers' scratch and reads only
/// its own), no barrier. Production only.
struct LlReduceArgs {
  const void* send = nullptr;  ///< size x shard_bytes of bf16
  void* out = nullptr;         ///< shard_bytes of bf16
  std::size_t shard_bytes = 0;
  int rank = 0, size = 1;
  ncclWindow_t scratch = nullptr;
  std::uint32_t* calls = nullptr;
  const std::uint32_t* abort_word = nullptr;  ///< as LlGatherArgs::abort_word
};

/// Whether a BF16 reduce-scatter of `shard_bytes` per rank fits the push-model kernel: the
/// communicator has the scratch, the kernels are enabled, and a shard's lines fit a slot.
inline bool ll_reduce_fits(bool scratch, std::size_t shard_bytes) {
  return scratch && ll_gather_enabled() && shard_bytes > 0 && shard_bytes % 2 == 0 &&
         ll_lines(shard_bytes) <= kLlMaxBytesPerRank / kLlLineData;
}

/// Launches the push-model reduce-scatter (checks its arguments first).
void ll_reduce_scatter(const LlReduceArgs& args, int sm_share, cudaStream_t stream);

}  // namespace symmcomm::detail::lsa
