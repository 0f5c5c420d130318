// symmcomm's device-count gather with counts in the scratch lines, the process switch of both
// counts-in-lines kernels and their shared launcher checks (lsa_ll_device_counts.hpp; the
// reduce-scatter: lsa_ll_device_counts_reduce.cu; the line protocol: lsa_ll_lines.cuh).

#include <atomic>

#include "core/kernel_preload.hpp"
#include "lsa_launch.cuh"
#include "lsa_ll_device_counts.cuh"

namespace symmcomm::detail::lsa {
namespace {

#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
// Which part line `li` of a row belongs to (`part_line`: each part's first line in a row, then
// the row's line count).
__device__ __forceinline__ int part_of_line(
    const std::size_t (&part_line)[LlDeviceCountsGatherArgs::kMaxParts + 1], int parts,
    std::size_t li) {
  int k = 0;
  while (k + 1 < parts && li >= part_line[k + 1]) ++k;
  return k;
}

// ---- the gather --------------------------------------------------------------------------------

// How a gathered row is laid out in lines: each part's first line in a row, then the row's
// line count.
struct RowLines {
  std::size_t part_line[LlDeviceCountsGatherArgs::kMaxParts + 1];
  __device__ explicit RowLines(const LlDeviceCountsGatherArgs& a) {
    std::size_t lines = 0;
#pragma unroll
    for (int k = 0; k < LlDeviceCountsGatherArgs::kMaxParts; ++k) {
      part_line[k] = lines;
      if (k < a.parts) lines += (a.part[k].row_bytes + kLlLineData - 1) / kLlLineData;
    }
    part_line[LlDeviceCountsGatherArgs::kMaxParts] = lines;
  }
  __device__ std::size_t row_lines() const {
    return part_line[LlDeviceCountsGatherArgs::kMaxParts];
  }
};

// The part line `li` of a row falls in, and the offset of its bytes in that part's row.
__device__ __forceinline__ int part_at(const LlDeviceCountsGatherArgs& a, const RowLines& rl,
                                       std::size_t li, std::size_t& offset) {
  int const part = part_of_line(rl.part_line, a.parts, li);
  offset = (li - rl.part_line[part]) * kLlLineData;
  return part;
}

// Eight bytes at `offset` of row `row` of this rank's part `part`.
__device__ __forceinline__ uint2 own_row_bytes(const LlDeviceCountsGatherArgs& a, int part,
                                               std::size_t row, std::size_t offset) {
  std::size_t const bytes = a.part[part].row_bytes;
  return read_raw(static_cast<const unsigned char*>(a.part[part].src) + row * bytes, bytes, offset);
}

static_assert(static_cast<std::size_t>(kMaxRanks) * (kLlMaxBytesPerRank / kLlLineData) <=
                  UINT32_MAX,
              "the gather's copy indexes every rank's lines in 32 bits");

// Items (lines of rows) one thread of the gather's copy loads at once before completing them:
// one round trip for the batch instead of one per line.
constexpr int kDeviceCountsCopyBatch = 4;

// Lines of its own slot a thread of the gather loads before the count and the call's number are
// known (rows below capacity lie in `src` whatever the count), so that the send does not wait for
// the count first.
constexpr int kDeviceCountsSendUnroll = 2;

// One item of the gather's copy: line `li` of row `j` of rank `q`'s slot (q < 0: none), and the
// line as loaded (this rank's own: its 8 bytes in x and z, from its send).
struct CopyItem {
  int q;
  std::size_t j, li;
  uint4 v;
};

// Loads the batch of items from `i0` (stride `stride`) of the copy's space: every rank's
// capacity rows, rank after rank, row_lines lines a row; this rank's own rows from its send, so
// that landing them waits for no load. Only rank q's counted rows
// (first_row[q + 1] - first_row[q]) are loaded, except in the first batch, loaded before the
// counts are known (`first_row` null): every row below capacity, a line past the count loaded and
// never used.
__device__ __forceinline__ void load_copy_batch(const LlDeviceCountsGatherArgs& a,
                                                const RowLines& rl, const char* mine_half,
                                                const std::int32_t* first_row, std::size_t i0,
                                                std::size_t stride,
                                                CopyItem (&it)[kDeviceCountsCopyBatch]) {
  std::size_t const row_lines = rl.row_lines();
  std::size_t const items = static_cast<std::size_t>(a.size) * a.capacity * row_lines;
  // Every index fits 32 bits (a slot holds at most kLlMaxBytesPerRank / kLlLineData lines of each
  // of kMaxRanks ranks), and 32-bit division is a fraction of 64-bit's instructions.
  auto const lines32 = static_cast<std::uint32_t>(row_lines);
  auto const cap32 = static_cast<std::uint32_t>(a.capacity);
#pragma unroll
  for (int b = 0; b < kDeviceCountsCopyBatch; ++b) {
    std::size_t const i = i0 + b * stride;
    it[b].q = -1;
    if (i >= items) continue;
    auto const i32 = static_cast<std::uint32_t>(i);
    std::uint32_t const row = i32 / lines32;
    std::uint32_t const q32 = row / cap32;
    std::uint32_t const j = row - q32 * cap32;
    auto const q = static_cast<int>(q32);
    if (first_row != nullptr && j >= static_cast<std::uint32_t>(first_row[q + 1] - first_row[q])) {
      continue;
    }
    it[b] = CopyItem{q, j, i32 - row * lines32, make_uint4(0u, 0u, 0u, 0u)};
    if (q != a.rank) {
      it[b].v = load_line(line_at(mine_half, q, 2 + j * row_lines + it[b].li));
    } else {
      std::size_t offset = 0;
      int const k = part_at(a, rl, it[b].li, offset);
      uint2 const d = own_row_bytes(a, k, j, offset);
      it[b].v = make_uint4(d.x, 0u, d.y, 0u);
    }
  }
}

// Completes a loaded batch and writes its counted lines to their compact place: row j of rank q
// is row first_row[q] + j of the result (this rank's from its send, the others' from
// `mine_half`). False when aborted.
__device__ __forceinline__ bool land_copy_batch(const LlDeviceCountsGatherArgs& a,
                                                const RowLines& rl, const char* mine_half,
                                                const std::int32_t* first_row, std::uint32_t flag,
                                                CopyItem (&it)[kDeviceCountsCopyBatch]) {
  std::size_t const row_lines = rl.row_lines();
#pragma unroll
  for (int b = 0; b < kDeviceCountsCopyBatch; ++b) {
    int const q = it[b].q;
    if (q < 0 || it[b].j >= static_cast<std::size_t>(first_row[q + 1] - first_row[q])) continue;
    std::size_t offset = 0;
    int const k = part_at(a, rl, it[b].li, offset);
    uint2 d;
    if (q == a.rank) {
      d = make_uint2(it[b].v.x, it[b].v.z);
    } else if (complete_line(line_at(mine_half, q, 2 + it[b].j * row_lines + it[b].li), it[b].v,
                             flag, a.abort_word)) {
      d = make_uint2(it[b].v.x, it[b].v.z);
    } else {
      return false;
    }
    write_bytes(LlSegment{nullptr, a.part[k].recv, a.part[k].row_bytes, 0},
                first_row[q] + static_cast<int>(it[b].j), offset, d);
  }
  return true;
}

// Every rank's scale float (line 1 of its slot; this rank's own from scale_src) into
// scale_recv, one thread per rank (none for BF16).
__device__ __forceinline__ void land_scales(const LlDeviceCountsGatherArgs& a,
                                            const char* mine_half, std::uint32_t flag) {
  if (a.scale_recv == nullptr) return;
  for (int q = static_cast<int>(threadIdx.x); q < a.size; q += static_cast<int>(blockDim.x)) {
    uint2 d;
    if (q == a.rank) {
      a.scale_recv[q] = *a.scale_src;
    } else if (wait_line(mine_half, q, 1, flag, a.abort_word, d)) {
      a.scale_recv[q] = __uint_as_float(d.x);
    }
  }
}

// The warp-level count exchange of the send-all gather needs a lane per rank. Sending every row
// below capacity costs little here (a call fits one slot: at most 96 KiB a rank) and lets a
// receiver wait for its rows and the counts at once: every line it waits for comes.
constexpr int kWarpRanks = 32;

// Whether `v` holds this call's line.
__device__ __forceinline__ bool fresh_line(const uint4& v, std::uint32_t flag) {
  return v.y == flag && v.w == flag;
}

// Polls a loaded batch of copy items (every one below capacity: sent whatever the count) and
// the count line `count_at` (null: none) together until each holds this call's line. False when
// aborted.
__device__ __forceinline__ bool poll_batch(const LlDeviceCountsGatherArgs& a, std::size_t row_lines,
                                           const char* mine_half,
                                           CopyItem (&it)[kDeviceCountsCopyBatch],
                                           const char* count_at, uint4& count_line,
                                           std::uint32_t flag) {
  for (unsigned polls = 1;; ++polls) {
    bool all = true;
    if (count_at != nullptr && !fresh_line(count_line, flag)) {
      count_line = load_line(count_at);
      all = false;
    }
#pragma unroll
    for (int b = 0; b < kDeviceCountsCopyBatch; ++b) {
      if (it[b].q < 0 || it[b].q == a.rank || fresh_line(it[b].v, flag)) continue;
      it[b].v = load_line(line_at(mine_half, it[b].q, 2 + it[b].j * row_lines + it[b].li));
      all = false;
    }
    if (all) return true;
    if (polls % kAbortPolls == 0 && abort_raised(a.abort_word)) return false;
  }
}

// The counts, offsets and overflow flag, from warp 0 of CTA 0 once its lanes hold every rank's
// count (`raw`: lane r's rank's count as sent, `count` clamped, `first` the prefix of the clamped
// counts), then every rank's scale float (land_scales). The other warps copy rows meanwhile, so
// none of it waits behind the copy.
__device__ __forceinline__ void land_counts(const LlDeviceCountsGatherArgs& a,
                                            const char* mine_half, std::int32_t raw,
                                            std::int32_t count, std::int32_t first,
                                            std::uint32_t flag) {
  int const lane = static_cast<int>(threadIdx.x % 32);
  bool const rank_lane = lane < a.size;
  if (rank_lane) {
    a.counts[lane] = raw;
    a.offsets[lane] = first;
  }
  if (__any_sync(0xffffffffu, rank_lane && count != raw) && lane == 0) *a.overflow = 1;
  land_scales(a, mine_half, flag);
}

// The send-all gather's receive (every rank sent every row below capacity): each thread loads
// its first batch of lines and lane r of its warp rank r's count line, polls them together, the
// warp takes the prefix of the clamped counts (first_row: this warp's kWarpRanks + 1 entries in
// shared memory), warp 0 of CTA 0 writes the counts, offsets, overflow flag and scales, then
// every batch lands at its compact place. No CTA barrier: a warp waits for its own lines only.
// False when aborted.
__device__ __forceinline__ bool land_every_row(const LlDeviceCountsGatherArgs& a,
                                               const RowLines& rl, const char* mine_half,
                                               std::int32_t mine_raw, std::uint32_t flag,
                                               std::int32_t* first_row) {
  int const n = a.size;
  int const lane = static_cast<int>(threadIdx.x % 32);
  std::size_t const row_lines = rl.row_lines();
  std::size_t const stride = grid_threads();
  std::size_t const items = static_cast<std::size_t>(n) * a.capacity * row_lines;
  CopyItem it[kDeviceCountsCopyBatch];
  load_copy_batch(a, rl, mine_half, nullptr, global_thread(), stride, it);
  const char* const count_at = lane < n && lane != a.rank ? line_at(mine_half, lane, 0) : nullptr;
  uint4 count_line = make_uint4(0u, 0u, 0u, 0u);
  if (count_at != nullptr) count_line = load_line(count_at);
  bool const polled = poll_batch(a, row_lines, mine_half, it, count_at, count_line, flag);
  if (!__all_sync(0xffffffffu, polled)) return false;
  auto const cap = static_cast<std::int32_t>(a.capacity);
  std::int32_t const mine = lane == a.rank ? mine_raw : static_cast<std::int32_t>(count_line.x);
  std::int32_t const count = lane < n ? clamp_count(mine, cap) : 0;
  std::int32_t sum = count;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    std::int32_t const below = __shfl_up_sync(0xffffffffu, sum, o);
    if (lane >= o) sum += below;
  }
  if (lane < n) first_row[lane] = sum - count;
  if (lane == n - 1) first_row[n] = sum;
  __syncwarp();
  if (blockIdx.x == 0 && threadIdx.x < 32)
    land_counts(a, mine_half, mine, count, sum - count, flag);
  for (std::size_t i0 = global_thread();;) {
    if (!land_copy_batch(a, rl, mine_half, first_row, flag, it)) return false;
    i0 += kDeviceCountsCopyBatch * stride;
    if (i0 >= items) return true;
    load_copy_batch(a, rl, mine_half, first_row, i0, stride, it);
  }
}

// The gather's receive past decode sizes (only counted rows sent): the first batch is loaded
// before the counts are known, so that waiting for the counts and loading the rows overlap; then
// every rank's count line and their prefix (CTA-wide), then every rank's rows into their compact
// place, batch after batch. Every thread of the CTA calls it.
__device__ __forceinline__ void land_device_counts_rows(const LlDeviceCountsGatherArgs& a,
                                                        const RowLines& rl, const char* mine_half,
                                                        std::int32_t mine_raw, std::uint32_t flag,
                                                        DeviceCountsShared& sh) {
  std::size_t const row_lines = rl.row_lines();
  std::size_t const stride = grid_threads();
  CopyItem it[kDeviceCountsCopyBatch];
  load_copy_batch(a, rl, mine_half, nullptr, global_thread(), stride, it);
  if (!read_counts(a, mine_half, mine_raw, flag, sh)) return;
  if (blockIdx.x == 0) land_scales(a, mine_half, flag);
  std::size_t const items = static_cast<std::size_t>(a.size) * a.capacity * row_lines;
  for (std::size_t i0 = global_thread();
       land_copy_batch(a, rl, mine_half, sh.first_row, flag, it);) {
    i0 += kDeviceCountsCopyBatch * stride;
    if (i0 >= items) return;
    load_copy_batch(a, rl, mine_half, sh.first_row, i0, stride, it);
  }
}

// The counts-in-lines gather (LlDeviceCountsGatherArgs): send this rank's count, scale and counted
// rows to every peer's scratch, read every peer's count, then copy every rank's rows to their
// compact place.
__global__ void __launch_bounds__(kThreads)
    ll_device_counts_gather_kernel(const LlLaunch launch_flags,
                                   const __grid_constant__ LlDeviceCountsGatherArgs a) {
  programmatic_wait(launch_flags);
  __shared__ DeviceCountsShared sh;
  int const n = a.size;
  int const me = a.rank;
  RowLines const rl(a);
  std::size_t const row_lines = rl.row_lines();
  open_call(a.calls, a.scratch, n, sh.call, sh.slots);
  std::int32_t const mine_raw = *a.count;
  // Send: line 0 the raw count, line 1 the scale, then the counted rows, part after part. The
  // first lines' bytes are loaded with the count (rows below capacity, whatever the count).
  std::size_t const stride = grid_threads();
  std::size_t const first = global_thread();
  std::size_t const cap_lines = 2 + a.capacity * row_lines;
  auto const row_line = [&](std::size_t line) {
    std::size_t offset = 0;
    int const k = part_at(a, rl, (line - 2) % row_lines, offset);
    return own_row_bytes(a, k, (line - 2) / row_lines, offset);
  };
  uint2 early[kDeviceCountsSendUnroll] = {};
#pragma unroll
  for (int u = 0; u < kDeviceCountsSendUnroll; ++u) {
    std::size_t const line = first + u * stride;
    if (line >= 2 && line < cap_lines) early[u] = row_line(line);
  }
  std::int32_t const mine = clamp_count(mine_raw, static_cast<std::int32_t>(a.capacity));
  __syncthreads();
  std::uint32_t const c = sh.call;
  std::uint32_t const flag = call_flag(c);
  std::size_t const half = call_half(c, n);
  // Every row below capacity (kWarpRanks ranks at most), else the counted ones.
  bool const send_all = n <= kWarpRanks;
  std::size_t const lines = send_all ? cap_lines : 2 + static_cast<std::size_t>(mine) * row_lines;
  std::size_t const at = half + static_cast<std::size_t>(me) * kLlSlotBytes;
  auto const line_bytes = [&](std::size_t line) {
    if (line == 0) return make_uint2(static_cast<unsigned>(mine_raw), 0u);
    if (line == 1) {
      return make_uint2(a.scale_src != nullptr ? __float_as_uint(*a.scale_src) : 0u, 0u);
    }
    return row_line(line);
  };
#pragma unroll
  for (int u = 0; u < kDeviceCountsSendUnroll; ++u) {
    std::size_t const line = first + u * stride;
    if (line < lines) {
      store_to_peers(sh.slots, me, n, at, line, line < 2 ? line_bytes(line) : early[u], flag);
    }
  }
  for (std::size_t line = first + kDeviceCountsSendUnroll * stride; line < lines; line += stride) {
    store_to_peers(sh.slots, me, n, at, line, line_bytes(line), flag);
  }
  const char* const mine_half = sh.slots[me] + half;
  if (send_all) {
    // Each warp waits for its rows and the counts at once (every peer's count line read in
    // every call by every warp, as the halves' reuse needs); warp 0 of CTA 0 writes the counts,
    // the offsets, the overflow flag and the scale floats.
    __shared__ std::int32_t warp_first_row[kThreads / 32][kWarpRanks + 1];
    land_every_row(a, rl, mine_half, mine_raw, flag, warp_first_row[threadIdx.x / 32]);
    advance_call(a.calls, c);
    programmatic_release(launch_flags);
    return;
  }
  land_device_counts_rows(a, rl, mine_half, mine_raw, flag, sh);
  advance_call(a.calls, c);
  programmatic_release(launch_flags);
}
#endif

// The process switch (set_ll_counts): the ranks' agreement decides unless a test or benchmark
// forces it.
std::atomic<LlCounts>& ll_counts_switch() {
  static std::atomic<LlCounts> setting{LlCounts::Agreed};
  return setting;
}

// Loaded with the rest of this module when a communicator is made (core/kernel_preload.hpp).
[[maybe_unused]] const bool kModuleRegistered =
    register_kernel_module(reinterpret_cast<const void*>(&ll_device_counts_gather_kernel),
                           "kernels/lsa_ll_device_counts.cu");

}  // namespace

void check_ll_counts(const LlCountsArgs& a, bool own_count, const char* what) {
  SYMMCOMM_EXPECTS(a.size >= 1 && a.size <= kMaxRanks && a.rank >= 0 && a.rank < a.size,
                   what << ": rank " << a.rank << " of " << a.size << " ranks");
  SYMMCOMM_EXPECTS(a.scratch != nullptr && a.calls != nullptr,
                   what << ": the communicator has no scratch window");
  SYMMCOMM_EXPECTS((a.count != nullptr || !own_count) && a.counts != nullptr &&
                       a.offsets != nullptr && a.overflow != nullptr,
                   what << ": count, counts, offsets and overflow must be device pointers");
}

void set_ll_counts(LlCounts setting) noexcept {
  ll_counts_switch().store(setting, std::memory_order_relaxed);
}
LlCounts ll_counts_setting() noexcept {
  return ll_counts_switch().load(std::memory_order_relaxed);
}

void ll_device_counts_gather(const LlDeviceCountsGatherArgs& a, LaunchShare share,
                             cudaStream_t stream) {
  check_ll_counts(a, true, "lsa ll device-count gather");
  SYMMCOMM_EXPECTS(a.parts >= 1 && a.parts <= LlDeviceCountsGatherArgs::kMaxParts,
                   "lsa ll device-count gather: " << a.parts << " parts, outside 1.."
                                                  << LlDeviceCountsGatherArgs::kMaxParts);
  for (int k = 0; k < a.parts; ++k) {
    const LlDeviceCountsGatherArgs::Part& p = a.part[k];
    SYMMCOMM_EXPECTS(p.row_bytes > 0 && p.src != nullptr && p.recv != nullptr,
                     "lsa ll device-count gather: part " << k << " has no rows or no buffers");
  }
  SYMMCOMM_EXPECTS((a.scale_src == nullptr) == (a.scale_recv == nullptr),
                   "lsa ll device-count gather: a scale to send needs a place to land, and back");
  std::size_t const row_lines = ll_row_lines(a);
  SYMMCOMM_EXPECTS(
      a.capacity <= static_cast<std::size_t>(INT32_MAX) &&
          ll_device_counts_lines(a.capacity, row_lines) <= kLlMaxBytesPerRank / kLlLineData,
      "lsa ll device-count gather: capacity " << a.capacity << " rows of " << row_lines
                                              << " lines do not fit a slot of "
                                              << kLlMaxBytesPerRank / kLlLineData << " lines");
#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
  // Rank-independent: the most lines a rank sends or receives.
  std::size_t const units = static_cast<std::size_t>(a.size) * a.capacity * row_lines + 2;
  unsigned const grid = grid_for_units(units, kLlGridCap);
  LlLaunch flags;
  flags.programmatic = programmatic_launch();
  launch_resident(ll_device_counts_gather_kernel, share, grid, stream, flags, a);
#else
  (void)share;
  (void)stream;
  SYMMCOMM_FAIL(
      "lsa ll device-count gather: this build has no NCCL device API (NCCL < 2.28 headers)");
#endif
}

}  // namespace symmcomm::detail::lsa
