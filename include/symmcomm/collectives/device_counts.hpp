#pragma once
/// @file device_counts.hpp
/// @brief All-gathers whose per-rank counts are on the device: DP attention's uneven token
/// counts without padding and without host synchronisation, so one captured CUDA graph serves
/// every step whatever each rank's count.
///
/// Each rank's send holds room for `capacity` rows (fixed when the graph is captured) and the
/// first `*count` of them are its rows, `*count` read from device memory when the call runs.
/// Every rank's rows land compactly in recv: rank r's at row offsets[r] = counts[0] + ... +
/// counts[r-1]; the call writes every rank's count and that prefix to device arrays the caller
/// reads in stream order (to size its next kernels). recv holds room for comm.size() x
/// capacity rows; rows past the total are left as they were.
///
/// A count outside 0..capacity is never a silent overflow: the rows taken are clamped to
/// 0..capacity and `overflow` is set to 1 on the device (never cleared by a call): check it
/// with overflowed() where a host synchronisation is acceptable.
///
/// Path (gathers): where an LSA team spans the communicator and every receive part, `counts`
/// and the scale floats lie in windows of it (at most 4 distinct windows: a pool's tensors
/// share its arena's), Auto takes symmcomm's one-launch LSA kernel: each rank stores its count
/// into every peer's `counts`, one barrier, then each pushes only its counted rows to their
/// compact place on every peer (PlanReason::DeviceCountsInOneLaunch). Otherwise the fallback:
/// NCCL gathers every rank's count, then every rank's rows at capacity into the communicator's
/// workspace, then one kernel compacts them; the plan's reason says how many bytes per rank that
/// moves. The reduce_scatterv overloads have the same two paths (their kernel needs `send` and
/// `counts` in windows; see there). Options::path = LsaKernel forces the
/// kernel (refused, naming the buffer, where it cannot run), Fallback forces NCCL's path.
/// Collective, stream-ordered and capturable like every symmcomm collective (all_gather.hpp); the
/// fallback is refused inside a symmcomm::Group (the compaction must follow NCCL's work). Its
/// workspace (ranks x capacity rows) is grown outside capture: make one call, or pass
/// Options::workspace, before capturing.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "symmcomm/collectives/options.hpp"
#include "symmcomm/formats/views.hpp"

namespace symmcomm {

/// @brief The device-side counts of a device-count gather (all device pointers).
struct DeviceCounts {
  /// This rank's rows, read when the call runs. reduce_scatterv only: null when `counts` already
  /// holds every rank's count (the dispatch's all_gatherv on this communicator wrote it), which
  /// the call then reads instead of exchanging counts first (see reduce_scatterv).
  const std::int32_t* count = nullptr;
  std::size_t capacity = 0;          ///< rows every rank's send has room for
  std::int32_t* counts = nullptr;    ///< [comm.size()]: written with every rank's count
  std::int32_t* offsets = nullptr;   ///< [comm.size()]: written with the exclusive prefix
  std::int32_t* overflow = nullptr;  ///< set to 1 when a count is outside 0..capacity
};

/// @brief Another tensor gathered with the same row counts in the same call (vLLM gathers
/// topk_ids and topk_weights with the activations): `row_bytes` bytes per row, capacity rows
/// at `send`, room for comm.size() x capacity rows at `recv`.
struct RowItem {
  const void* send = nullptr;  ///< capacity rows of this rank's (device pointer)
  void* recv = nullptr;        ///< room for comm.size() x capacity rows (device pointer)
  std::size_t row_bytes = 0;   ///< bytes per row
  const char* name = "item";   ///< used in error messages and plans
};

/// @brief Most RowItems one call takes beside its tensor.
inline constexpr std::size_t kMaxRowItems = 4;

/// @brief BF16 rows of `row_elements` elements: send.count == capacity x row_elements,
/// recv.count == comm.size() x capacity x row_elements.
Plan all_gatherv(const Communicator& comm, ConstBf16Span send, Bf16Span recv,
                 std::size_t row_elements, const DeviceCounts& counts, cudaStream_t stream,
                 const Options& options = {});
/// @brief FP8 rows (codes) and each rank's scale (recv.scale: comm.size() floats).
Plan all_gatherv(const Communicator& comm, ConstFp8View send, Fp8View recv,
                 std::size_t row_elements, const DeviceCounts& counts, cudaStream_t stream,
                 const Options& options = {});
/// @brief NVFP4 rows (row_elements a multiple of 16: data and linear block scales move by
/// rows) and each rank's global scale (recv.global_scale: comm.size() floats). recv's block
/// scales may be swizzled (`recv.with_swizzled_scales(row_elements)`: the 128 x 4 layout NVFP4
/// GEMMs read, for comm.size() x capacity rows): the compact rows' scales land at their
/// swizzled places and the rows past the total count, to the padded end, are written as 0.
Plan all_gatherv(const Communicator& comm, ConstNvfp4View send, Nvfp4View recv,
                 std::size_t row_elements, const DeviceCounts& counts, cudaStream_t stream,
                 const Options& options = {});
/// @brief As above, with up to kMaxRowItems more tensors moved row for row with the same counts
/// (in the same compaction launch).
Plan all_gatherv(const Communicator& comm, ConstBf16Span send, Bf16Span recv,
                 std::size_t row_elements, const std::vector<RowItem>& items,
                 const DeviceCounts& counts, cudaStream_t stream, const Options& options = {});
/// @brief The same for NVFP4 activations (data, block scales and global scale gathered as the
/// NVFP4 overload without items gathers them).
Plan all_gatherv(const Communicator& comm, ConstNvfp4View send, Nvfp4View recv,
                 std::size_t row_elements, const std::vector<RowItem>& items,
                 const DeviceCounts& counts, cudaStream_t stream, const Options& options = {});

/// @brief Reduce-scatter whose shard sizes are on the device (MoE combine after a device-count
/// dispatch): `send` holds every rank's shard compactly (rank r's counts[r] rows at row
/// offsets[r], counts from each rank's counts.count) in room for comm.size() x capacity rows;
/// this rank's sum of its *count rows lands in `recv` (capacity rows of room; the rows past the
/// count are written as 0). BF16 sums (NCCL's) and NVFP4 with per-rank global scales into BF16
/// (fp32 accumulation, one rounding). Counts, offsets and overflow as the gathers'.
/// Where an LSA team spans the communicator and `send` (NVFP4: data, block scales and global
/// scale) and `counts` lie in its windows: Auto takes symmcomm's one-launch kernel - counts
/// exchanged through the window, one barrier, then each rank reads only its rows from every
/// peer's `send`, sums them in fp32 in rank order and rounds once
/// (PlanReason::DeviceCountsInOneLaunch; Options::path = LsaKernel forces it). NVFP4 takes it when
/// `send.data` is 8-byte and `recv` 16-byte aligned. Otherwise the fallback: the compact rows are
/// laid out at capacity in the workspace, then reduce-scattered by NCCL (BF16: NCCL's sums) or
/// symmcomm's reduction. Both give NVFP4 the same bits (the same fp32 arithmetic in rank order).
///
/// Counts gathered before the call (`counts.count` null; `counts.counts` holds every rank's raw
/// count, as the dispatch's all_gatherv left it, and is read, not written): the MoE combine
/// reuses the dispatch's counts. Where the counts ride in the scratch lines
/// (Plan::counts_in_lines), each rank then sends its peers' rows at once, with no count exchange
/// before them (Plan::counts_gathered, the reason says so); every rank checks the count and offset
/// each peer took for it, and one that differs (ranks passed different counts) sets `overflow`,
/// never a hang. The other paths gather the counts again, in place.
Plan reduce_scatterv(const Communicator& comm, ConstBf16Span send, Bf16Span recv,
                     std::size_t row_elements, const DeviceCounts& counts, cudaStream_t stream,
                     const Options& options = {});
/// @brief The same from NVFP4 shards (per-rank global scales), summed in fp32 into BF16.
Plan reduce_scatterv(const Communicator& comm, ConstNvfp4View send, Bf16Span recv,
                     std::size_t row_elements, const DeviceCounts& counts, cudaStream_t stream,
                     const Options& options = {});

/// @brief Whether a call on `comm` saw a count outside 0..capacity since the flag was last
/// cleared: reads counts.overflow after the work queued on `stream` (a host wait for it,
/// bounded and watched as symmcomm::wait is) and clears it when `clear`.
bool overflowed(const Communicator& comm, const DeviceCounts& counts, cudaStream_t stream,
                bool clear = true);

}  // namespace symmcomm
