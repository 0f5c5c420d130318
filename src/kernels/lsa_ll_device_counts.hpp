#pragma once
// Private: symmcomm's device-count gather and reduce-scatter with counts in the scratch lines
// (lsa_ll_device_counts.cu, lsa_ll_device_counts_reduce.cu): the small all-gather's scratch window,
// call counter and halves (lsa_ll.hpp) instead of the one-launch kernels' barriers and count
// exchange (lsa.hpp).

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>

#include "lsa_ll.hpp"

namespace symmcomm::detail::lsa {

/// What both kernels take beside their tensors: the caller's device counts (its count in,
/// every rank's raw count, the offsets of the clamped counts and the overflow flag out, all
/// local) and the communicator's scratch.
struct LlCountsArgs : LlScratchView {
  const std::int32_t* count = nullptr;
  std::int32_t* counts = nullptr;   ///< size raw counts, local
  std::int32_t* offsets = nullptr;  ///< size row offsets, local
  std::int32_t* overflow = nullptr;
  std::size_t capacity = 0;
};

/// An all-gather with this rank's row count on the device (device_counts.hpp) through the same
/// scratch, counts in the lines: each rank writes its raw count (line 0), its scale float (line
/// 1) and its rows of every part (each row at a fixed place of its slot, part after part, each
/// part's row starting a line; every row below capacity up to 32 ranks, so that a receiver can
/// wait for its rows and the counts at once, each warp taking the prefix itself; its first
/// count rows beyond) into its slot of every peer's scratch; each rank reads every peer's count
/// line, takes the prefix of the counts clamped to 0..capacity, and copies every rank's rows from
/// its scratch (its own from `src`) to their compact place in each part's local `recv`. No
/// barrier and no count exchange before the rows: the call counter and halves
/// of the all-gather above, whose reuse argument holds since every rank reads every peer's count
/// line in every call. Writes `counts` (raw), `offsets` (prefix of the clamped counts) and sets
/// `overflow` as the one-launch kernel does. Linear parts only; production only. Auto's choice
/// for device counts wherever the rows fit a slot (ll_device_counts_fits): faster than the
/// one-launch kernel at every decode capacity measured (docs/design-notes.md has the figures).
struct LlDeviceCountsGatherArgs : LlCountsArgs {
  struct Part {
    const void* src = nullptr;  ///< capacity rows of row_bytes, local
    void* recv = nullptr;       ///< size x capacity rows of room, local: compact rows land here
    std::size_t row_bytes = 0;
  };
  static constexpr int kMaxParts = 6;
  Part part[kMaxParts];
  int parts = 0;
  const float* scale_src = nullptr;  ///< this rank's scale float, or null (BF16)
  float* scale_recv = nullptr;       ///< size floats, local (null with scale_src)
};

/// Lines one row of every part takes in a slot (each part's row starts a line).
inline std::size_t ll_row_lines(const LlDeviceCountsGatherArgs& a) {
  std::size_t lines = 0;
  for (int k = 0; k < a.parts; ++k) lines += ll_lines(a.part[k].row_bytes);
  return lines;
}

/// Lines a slot needs for `capacity` rows of `row_lines` lines: the count, the scale, the rows.
inline constexpr std::size_t ll_device_counts_lines(std::size_t capacity, std::size_t row_lines) {
  return 2 + capacity * row_lines;
}

/// Counts in the lines (ll_device_counts_gather, ll_device_counts_reduce) for every communicator of
/// this process, whatever its ranks agreed at creation: `Agreed` (the default) leaves the choice to
/// the agreement (CollectiveScratch::counts_in_lines: on unless some rank set
/// SYMMCOMM_LL_COUNTS=0); `On` and `Off` override it (the benchmarks and tests compare the kernels
/// with them). Process-wide, so the same on every rank of a communicator whose ranks share the
/// process (ranks deciding differently would wait for each other for ever); across processes only
/// the agreement decides.
enum class LlCounts : std::uint8_t { Agreed, On, Off };
void set_ll_counts(LlCounts setting) noexcept;
LlCounts ll_counts_setting() noexcept;

/// The process switch (set_ll_counts) forced on or off for one scope and restored to what it
/// was after it, also when the scope is left by an exception or an early return (tests and
/// benchmarks).
class ScopedLlCounts {
 public:
  explicit ScopedLlCounts(bool on) noexcept : was_(ll_counts_setting()) {
    set_ll_counts(on ? LlCounts::On : LlCounts::Off);
  }
  ~ScopedLlCounts() { set_ll_counts(was_); }
  ScopedLlCounts(const ScopedLlCounts&) = delete;
  ScopedLlCounts& operator=(const ScopedLlCounts&) = delete;

 private:
  LlCounts was_;
};

/// Whether a communicator's device-count calls may carry counts in the lines: it has the
/// scratch window (`scratch`), and the process switch forces them on, or leaves the choice to
/// the ranks' agreement at creation (`agreed`).
inline bool ll_counts_on(bool scratch, bool agreed) {
  LlCounts const setting = ll_counts_setting();
  return scratch && (setting == LlCounts::On || (setting == LlCounts::Agreed && agreed));
}

/// Whether a device-count gather of `capacity` rows of `row_lines` lines fits the kernel: counts
/// in the lines are on (`on`, ll_counts_on) and the rows fit a slot.
inline bool ll_device_counts_fits(bool on, std::size_t capacity, std::size_t row_lines) {
  return on && row_lines > 0 &&
         ll_device_counts_lines(capacity, row_lines) <= kLlMaxBytesPerRank / kLlLineData;
}

/// Launches the counts-in-lines gather (checks its arguments first).
void ll_device_counts_gather(const LlDeviceCountsGatherArgs& args, LaunchShare share,
                             cudaStream_t stream);

/// A reduce-scatter with this rank's shard size on the device (device_counts.hpp) through the
/// same scratch, counts in the lines: each rank writes its raw count (line 0) and, NVFP4, its
/// global scale (line 1) into its slot of every peer's scratch, reads every peer's count, and
/// with their prefix (clamped to 0..capacity) pushes each peer's rows of its compact `send` into
/// its slot of that peer's scratch (BF16 values; NVFP4 codes, then from a fixed line their block
/// scales); each rank then sums its own rows over every rank in rank order in fp32 (NVFP4:
/// dequantized with each rank's scales, the pull kernel's arithmetic) and rounds once to bf16 in
/// `out`, whose rows past its count up to capacity are written as 0. The call counter and
/// halves of the all-gather above; writes `counts`, `offsets` and `overflow` as the one-launch
/// kernel does. Production only; Auto's choice wherever the rows fit a slot
/// (ll_device_counts_reduce_fits). With `count` null the counts were gathered before the call
/// (`counts` holds every rank's raw count, read, not written): each rank pushes capacity rows to
/// every peer at once (so every line a receiver waits for comes, whatever the counts) and writes
/// in line 0 of its slot the count and offset it took for that peer; a receiver sums at once and
/// then sets `overflow` where a peer took others.
struct LlDeviceCountsReduceArgs : LlCountsArgs {
  DataType type = DataType::Bf16;              ///< Bf16 or Nvfp4 rows
  const void* send = nullptr;                  ///< size x capacity rows of room, compact, local
  const std::uint8_t* block_scales = nullptr;  ///< NVFP4: row_elements / 16 a row, compact
  const float* scale = nullptr;                ///< NVFP4: this rank's global scale
  bf16* out = nullptr;                         ///< capacity rows, local (NVFP4: 16-byte aligned)
  std::size_t row_elements = 0;                ///< NVFP4: a multiple of 16
};

/// Lines a slot needs for a reduce-scatter of `capacity` rows of `row_elements` from `type`:
/// the count, the scale, the values (BF16) or the codes and block scales (NVFP4).
inline constexpr std::size_t ll_device_counts_reduce_lines(DataType type, std::size_t capacity,
                                                           std::size_t row_elements) {
  std::size_t const elements = capacity * row_elements;
  if (type == DataType::Nvfp4) return 2 + elements / 16 + ll_lines(elements / 16);
  return 2 + ll_lines(2 * elements);
}

/// Whether a device-count reduce-scatter fits the counts-in-lines kernel (see
/// ll_device_counts_fits).
inline bool ll_device_counts_reduce_fits(bool on, DataType type, std::size_t capacity,
                                         std::size_t row_elements) {
  bool const typed = type == DataType::Bf16 || (type == DataType::Nvfp4 && row_elements % 16 == 0);
  return on && typed && row_elements > 0 &&
         ll_device_counts_reduce_lines(type, capacity, row_elements) <=
             kLlMaxBytesPerRank / kLlLineData;
}

/// Launches the counts-in-lines reduce-scatter (checks its arguments first).
void ll_device_counts_reduce(const LlDeviceCountsReduceArgs& args, LaunchShare share,
                             cudaStream_t stream);

}  // namespace symmcomm::detail::lsa
