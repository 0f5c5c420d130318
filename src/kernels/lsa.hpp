#pragma once
// Private: symmcomm's own symmetric kernels (lsa.cu), written once against a peer policy.
//
// A kernel reaches peers' symmetric buffers through a peer policy (lsa_policy.cuh): in
// production a device communicator and NCCL windows (ncclGetLsaPointer, ncclLsaBarrierSession
// over the LSA team), described by `Peers`; in the testing library a table of N virtual ranks'
// buffers on one GPU, launched once per virtual rank in rank order on one stream (the barriers
// become no-ops: stream order already separates the ranks). The same kernel code runs in both:
// the launch bodies are templates over the description (lsa_launchers.cuh), which this
// library instantiates for Peers only.
//
// Every kernel here starts and ends with a barrier over the team (CTA i meets CTA i of every peer;
// the small-message all-gather of lsa_ll.hpp has none and synchronises through its data):
// at the start, peers' inputs are complete and their receive buffers free; at the end, every
// peer has finished reading and writing this rank's buffers, so they may be reused at once. The
// grid must therefore be the same on every rank: launchers size it from `grid_bytes` /
// `grid_count`, which callers set from rank-independent quantities.

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "comm/lsa_limits.hpp"
#include "core/launch_share.hpp"
#include "symmcomm/formats/shards.hpp"
#include "symmcomm/formats/views.hpp"
#include "symmcomm/limits.hpp"

namespace symmcomm::detail::lsa {

/// Symmetric buffers one kernel addresses on peers.
inline constexpr int kSlots = 4;
/// Ranks a production launch supports (shared-memory tables of peer pointers).
inline constexpr int kMaxRanks = kMaxKernelRanks;
/// Most CTAs per SM of the GPU the gather, quantize-gather, FP8 reduce and device-count kernels
/// launch; the NVFP4 reduce launches kNvfp4ReduceCtasPerSm. Each CTA needs its own LSA barrier:
/// the device communicator reserves kLsaBarriersPerSm per SM (comm/lsa_limits.hpp). The SM
/// count is the fewest of any rank's GPU, agreed at creation (Peers::gpu_sms), so grids are the
/// same on every rank whatever the GPU model.
inline constexpr int kCtasPerSm = 2;
inline constexpr int kNvfp4ReduceCtasPerSm = 3;
static_assert(kCtasPerSm <= kLsaBarriersPerSm && kNvfp4ReduceCtasPerSm <= kLsaBarriersPerSm,
              "every CTA of an LSA kernel needs a barrier of its own");
/// Threads per CTA of the LSA kernels.
inline constexpr int kThreads = 512;

/// A symmetric buffer as a kernel sees it: a slot (an NCCL window, or a row of loopback base
/// pointers) and a byte offset that is the same on every peer.
struct SymRef {
  int slot = 0;
  std::size_t offset = 0;
};

/// The calling rank and how it reaches its peers: a device communicator and the windows of the
/// call's slots (filled in by the device view of a planned call). The testing library runs the
/// same kernels over virtual ranks on one GPU with a description of its own (LoopbackPeers,
/// src/testing/src/lsa_loopback.hpp); the shipped libraries carry no loopback code.
struct Peers {
  static Peers production_of(int rank, int size, const void* dev_comm, LaunchShare share,
                             int gpu_sms, const std::uint32_t* abort_word) {
    Peers p;
    p.abort_word = abort_word;
    p.rank = rank;
    p.size = size;
    p.dev_comm = dev_comm;
    p.share = share;
    p.gpu_sms = gpu_sms;
    return p;
  }

  int rank = 0;
  int size = 1;
  /// The communicator's ncclDevComm (dev_comm_handle) and the slots' windows.
  const void* dev_comm = nullptr;
  ncclWindow_t window[kSlots] = {};
  /// The part of the GPU this rank's launches may fill (CommState::lsa_launch_share(), the same on
  /// every rank); grids are capped to what it holds at once (resident_grid, lsa_launch.cuh).
  LaunchShare share{};
  /// The fewest SMs of any rank's GPU (Capabilities::lsa_gpu_sms), which the grid caps scale
  /// with (0: the current device's).
  int gpu_sms = 0;
  /// The communicator's abort word (comm/abort_word.hpp), polled while a barrier waits.
  const std::uint32_t* abort_word = nullptr;

 private:
  Peers() = default;  // made by production_of()
};
static_assert(std::is_trivially_copyable_v<Peers>, "Peers is a kernel argument");

/// One byte range this rank sends to every peer: `bytes` from local `src` to `dst` on each.
/// With scale_cols > 0 the range is this rank's linear NVFP4 block scales (bytes / scale_cols
/// rows of scale_cols) and lands in the swizzled [rows, scale_cols] scale matrix at `dst`
/// (symmcomm/formats/scale_layout.hpp) from row `first_row` on, padding columns as 0; rows
/// [zero_from, zero_to) are padding rows this rank writes as 0 (the last rank's job).
struct GatherSegment {
  const void* src = nullptr;
  SymRef dst{};
  std::size_t bytes = 0;
  std::size_t scale_cols = 0;
  std::size_t first_row = 0;
  std::size_t zero_from = 0, zero_to = 0;
  /// Bytes per store (16, 8, 4, 2 or 1): the widest that every peer's destination, the source
  /// and the size allow. Set by the launcher (launch_gather) from the addresses; 0 before.
  int width = 0;
};

/// A push all-gather of up to kSlots byte ranges in one launch; the gather kernel's parameter
/// as it is, once the launcher has set each segment's width.
struct GatherArgs {
  GatherSegment segment[kSlots];
  int segments = 0;
  std::size_t grid_bytes = 0;  ///< rank-independent size that fixes the grid (e.g. recv total)
};

/// One-shot quantized reduce-scatter: this rank reads its shard from every peer's send buffer
/// (`data`, `block_scales` at the shard's offsets, `scale` = the peer's one float), dequantizes,
/// sums in fp32 in rank order and writes `count` bf16 or fp32 elements to local `out`.
struct ReduceArgs {
  DataType type = DataType::Nvfp4;  ///< Nvfp4, Fp8E4M3 or Fp8E5M2
  SYMMCOMM_HD bool nvfp4() const { return type == DataType::Nvfp4; }
  SymRef data{}, block_scales{}, scale{};
  std::size_t count = 0;       ///< elements of this rank's shard (a multiple of 16)
  std::size_t grid_count = 0;  ///< rank-independent element count that fixes the grid
  void* out = nullptr;
  bool out_fp32 = false;
};

/// Fused quantize + all-gather: `count` bf16 elements at local `src` quantized with the scale at
/// local `scale` (NVFP4 global scale or FP8 scale), written straight to every peer's `data`,
/// `block_scales` (NVFP4) and `scale_dst` (one float).
struct QuantizeGatherArgs {
  DataType type = DataType::Nvfp4;  ///< the receive format: Nvfp4, Fp8E4M3 or Fp8E5M2
  SYMMCOMM_HD bool nvfp4() const { return type == DataType::Nvfp4; }
  const bf16* src = nullptr;
  const float* scale = nullptr;
  std::size_t count = 0;  ///< a multiple of 16
  SymRef data{}, block_scales{}, scale_dst{};
  std::size_t grid_count = 0;
  /// NVFP4, > 0: block_scales is the swizzled [rows, scale_cols] matrix (as GatherSegment):
  /// this rank's blocks are rows from first_row on; it also zeroes its rows' padding columns
  /// and the padding rows [zero_from, zero_to).
  std::size_t scale_cols = 0;
  std::size_t first_row = 0;
  std::size_t zero_from = 0, zero_to = 0;
};

/// The count exchange the device-count kernels share (lsa_counts.cuh): after the opening barrier
/// every rank stores its count (int32, read from local `count`) into slot `counts` of every
/// peer at its rank's index, a second barrier makes them all visible, then each rank computes
/// the prefix of the counts clamped to 0..capacity (writing `offsets` and, when one was outside,
/// `overflow` = 1, both local). Counts equal the fallback's (NCCL's gather + compaction).
struct DeviceCountsArgs {
  const std::int32_t* count = nullptr;
  SymRef counts{};
  std::int32_t* offsets = nullptr;
  std::int32_t* overflow = nullptr;
  std::size_t capacity = 0;
  /// 0: the whole call (production). Loopback launches every virtual rank with 1 (its count
  /// into every rank's array) before any with 2 (the rows): ranks run one after another there.
  int phase = 0;
  std::size_t grid_bytes = 0;  ///< rank-independent (capacity x bytes of a row): fixes the grid
};

/// An all-gather with this rank's row count on the device (device_counts.hpp), in one launch: after
/// the count exchange (DeviceCountsArgs) each rank pushes its first count rows of every part to the
/// compact place of every peer - swizzled NVFP4 block scales at their 128 x 4 places, the last
/// rank zeroing rows from the total to the matrix's padded end - and its scale float to float
/// `rank` of `scale_dst`.
struct DeviceCountsGatherArgs : DeviceCountsArgs {
  /// One tensor moved by rows: capacity rows of `row_bytes` at local `src`, the first count
  /// of them landing at `dst` + offset x row_bytes (swizzled: into the matrix at `dst`, whose
  /// rows are row_bytes scales each).
  struct Part {
    const void* src = nullptr;
    SymRef dst{};
    std::size_t row_bytes = 0;
    bool swizzled = false;
  };
  /// Row parts one launch moves: a view's data and block scales and kMaxRowItems more tensors
  /// (device_counts.hpp). Their windows share the kSlots slots (parts in one pool arena use one).
  static constexpr int kMaxParts = 6;
  Part part[kMaxParts];
  int parts = 0;
  const float* scale_src = nullptr;  ///< null: no per-rank float (BF16)
  SymRef scale_dst{};
};

/// A reduce-scatter with this rank's shard size on the device (device_counts.hpp), in one
/// launch: after the count exchange (DeviceCountsArgs) this rank sums its count rows from every
/// peer's compact `send` (rows from offset[rank] on, `row_elements` each) in fp32, in rank order,
/// rounds once to bf16, writes them to local `out` and zeroes out's rows past its count up to
/// `capacity`; a closing barrier keeps peers' send buffers in use until every rank has read them.
/// BF16 rows are read with 16-byte loads where every peer's rows and `out` allow (`vector`),
/// else element by element. NVFP4 rows (`type`): packed codes in `send`, their e4m3 block scales
/// (row_elements / 16 a row, compact like the codes) in `block_scales` and each rank's global
/// scale at `scale`, dequantized with the pull kernel's arithmetic (lsa_reduce.cuh); `send` must
/// be 8-byte and `out` 16-byte aligned there.
struct DeviceCountsReduceArgs : DeviceCountsArgs {
  DataType type = DataType::Bf16;  ///< the rows: Bf16 or Nvfp4
  SymRef send{};                   ///< comm.size() x capacity rows of room, compact
  SymRef block_scales{}, scale{};  ///< NVFP4 only
  std::size_t row_elements = 0;    ///< elements per row (NVFP4: a multiple of 16)
  bf16* out = nullptr;             ///< capacity rows, local
  bool vector = false;             ///< 16-byte loads and stores (set by device_counts_reduce)
};

/// Launch one kernel for the calling rank described by `peers`.
void gather(const Peers& peers, const GatherArgs& args, cudaStream_t stream);
void reduce(const Peers& peers, const ReduceArgs& args, cudaStream_t stream);
/// `scale_into` null: args.scale is given. Else args.scale is `scale_into`, a device float the
/// launcher fills from the input's amax (scale_from_amax) once every check of the arguments has
/// passed, on `stream` before the kernel: nothing launches for a call that is refused.
void quantize_gather(const Peers& peers, const QuantizeGatherArgs& args, cudaStream_t stream,
                     float* scale_into = nullptr);
void device_counts_gather(const Peers& peers, const DeviceCountsGatherArgs& args,
                          cudaStream_t stream);
void device_counts_reduce(const Peers& peers, const DeviceCountsReduceArgs& args,
                          cudaStream_t stream);
/// Local shards of a quantized tensor, one per rank (device pointers): what the fallback's local
/// reduction sums. The public QuantizedShards itself (one type from the API to the kernels).
using ShardTable = symmcomm::QuantizedShards;
static_assert(ShardTable::kMaxRanks == kMaxRanks);

/// The fallback's local reduction: the one-shot reduce kernel reading the shards of a table
/// instead of peers' windows, so both paths share their arithmetic. Arguments already checked
/// by the caller (8-byte aligned NVFP4 data, 16-byte aligned out).
void reduce_shards(const ShardTable& shards, DataType type, std::size_t count, void* out,
                   bool out_fp32, cudaStream_t stream);

/// Programmatic dependent launch (PDL) of the LSA kernels: with it a kernel may start while the
/// previous kernel on its stream finishes (it waits for that kernel's completion before reading
/// input or meeting peers) and lets the next one launch after its closing barrier, hiding launch
/// latency between back-to-back kernels. Off by default (bench/micro/latency_ranks_bench.cu's
/// variant 3 measures it against plain launches; docs/design-notes.md quotes the figures);
/// SYMMCOMM_LSA_PDL=1 turns it on. Process-wide, and the same on every rank of a communicator:
/// where ranks share a GPU it halves each launch's resident grid (lsa_launch.cuh's
/// resident_grid), and the barrier kernels' CTAs meet their peers' CTAs of the same index.
void set_programmatic_launch(bool on) noexcept;
bool programmatic_launch() noexcept;

/// True when this build carries the production policy (NCCL's device API headers).
bool production_available() noexcept;

}  // namespace symmcomm::detail::lsa
