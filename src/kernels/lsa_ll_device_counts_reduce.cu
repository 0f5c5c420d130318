// symmcomm's device-count reduce-scatter with counts in the scratch lines
// (lsa_ll_device_counts.hpp; what it shares with the gather: lsa_ll_device_counts.cuh; the line
// protocol: lsa_ll_lines.cuh).

#include "core/kernel_preload.hpp"
#include "lsa_launch.cuh"
#include "lsa_ll_device_counts.cuh"
#include "lsa_reduce.cuh"

namespace symmcomm::detail::lsa {
namespace {

#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
// ---- the reduce-scatter ----------------------------------------------------------------------

// The counts-in-lines reduce-scatter (LlDeviceCountsReduceArgs). A slot holds the sender's count
// (line 0), its global scale (line 1, NVFP4), then the receiver's rows of the sender's send as one
// byte range from line 2 (BF16 values; NVFP4 codes, their block scales from line
// 2 + capacity x row_elements / 16).
template <bool kNvfp4>
struct DeviceCountsRows {
  std::size_t row;         // elements per row
  std::size_t row_bytes;   // bytes of one row: BF16 values, or NVFP4 codes
  std::size_t row_scales;  // NVFP4 block scale codes of one row
  std::size_t scale_line;  // NVFP4: a slot's first block-scale line
  __device__ explicit DeviceCountsRows(const LlDeviceCountsReduceArgs& a)
      : row(a.row_elements),
        row_bytes(kNvfp4 ? row / 2 : row * 2),
        row_scales(kNvfp4 ? row / 16 : 0),
        scale_line(2 + a.capacity * row_scales) {}
};

// Each peer's rows of this rank's send (peer p's rows begin at first_row[p]), as lines into this
// rank's slot (byte `at`) of p's scratch: its counted rows, or with `all_rows` capacity rows from
// there (within the send's room: first_row[p] <= p x capacity), so that every line p may wait
// for comes whatever the counts.
template <bool kNvfp4>
__device__ __forceinline__ void push_peer_rows(const LlDeviceCountsReduceArgs& a,
                                               const DeviceCountsRows<kNvfp4>& cr,
                                               char* const (&slots)[kMaxRanks], std::size_t at,
                                               const std::int32_t (&first_row)[kMaxRanks + 1],
                                               bool all_rows, std::uint32_t flag) {
  const auto* send = static_cast<const unsigned char*>(a.send);
  for (int j = 1; j < a.size; ++j) {
    int const p = rotated(a.rank, j, a.size);
    auto const rows =
        all_rows ? a.capacity : static_cast<std::size_t>(first_row[p + 1] - first_row[p]);
    auto const from = static_cast<std::size_t>(first_row[p]);
    std::size_t const bytes = rows * cr.row_bytes, scale_bytes = rows * cr.row_scales;
    std::size_t const data_lines = ll_lines(bytes);
    std::size_t const lines = data_lines + (kNvfp4 ? ll_lines(scale_bytes) : 0);
    for (std::size_t l = global_thread(); l < lines; l += grid_threads()) {
      uint2 d;
      std::size_t line;
      if (l < data_lines) {
        d = read_raw(send + from * cr.row_bytes, bytes, l * kLlLineData);
        line = 2 + l;
      } else {
        std::size_t const k = l - data_lines;
        d = read_raw(a.block_scales + from * cr.row_scales, scale_bytes, k * kLlLineData);
        line = cr.scale_line + k;
      }
      store_line(slots[p] + at + line * kLlLineBytes, make_uint4(d.x, flag, d.y, flag));
    }
  }
}

// Counts gathered before the call (LlDeviceCountsReduceArgs::count null): every rank's raw count
// from a.counts, their clamped prefix into sh.first_row; CTA 0 writes the offsets and the overflow
// flag. Every thread of the CTA calls it.
__device__ __forceinline__ void known_counts(const LlCountsArgs& a, DeviceCountsShared& sh) {
  if (threadIdx.x == 0) sh.aborted = 0;
  for (int q = static_cast<int>(threadIdx.x); q < a.size; q += static_cast<int>(blockDim.x)) {
    sh.raw[q] = a.counts[q];
  }
  __syncthreads();
  take_prefix(a, sh, false);
}

// Ranks whose lines a reducing thread loads at once before completing them in rank order: one
// round trip for the batch instead of one per rank.
constexpr int kDeviceCountsRankBatch = 4;

// NVFP4: this rank's `rows` rows (from row `first` of its send) summed over every rank in rank
// order, one block per thread (rank r's global scale in scales[r], or, `scales` null, from line 1
// of its slot, loaded with its rows); out's blocks past them 0. Each batch of ranks' code and
// scale lines is loaded at once, then completed. Ends early when aborted.
__device__ __forceinline__ void reduce_device_counts_nvfp4(const LlDeviceCountsReduceArgs& a,
                                                           const DeviceCountsRows<true>& cr,
                                                           const char* mine_half, std::size_t rows,
                                                           std::size_t first, const float* scales,
                                                           std::uint32_t flag) {
  std::size_t const items = rows * cr.row / 16, all = a.capacity * cr.row / 16;
  const unsigned char* const own = static_cast<const unsigned char*>(a.send) + first * cr.row_bytes;
  const std::uint8_t* const own_scales = a.block_scales + first * cr.row_scales;
  for (std::size_t i = global_thread(); i < all; i += grid_threads()) {
    float acc[16] = {};
    for (int r0 = 0; i < items && r0 < a.size; r0 += kDeviceCountsRankBatch) {
      uint4 v[kDeviceCountsRankBatch], w[kDeviceCountsRankBatch], g[kDeviceCountsRankBatch];
#pragma unroll
      for (int k = 0; k < kDeviceCountsRankBatch; ++k) {
        int const r = r0 + k;
        if (r < a.size && r != a.rank) {
          v[k] = load_line(line_at(mine_half, r, 2 + i));
          w[k] = load_line(line_at(mine_half, r, cr.scale_line + i / kLlLineData));
          if (scales == nullptr) g[k] = load_line(line_at(mine_half, r, 1));
        }
      }
#pragma unroll
      for (int k = 0; k < kDeviceCountsRankBatch; ++k) {
        int const r = r0 + k;
        if (r >= a.size) break;
        RawItem<true, 8> item;
        uint2 d;
        float global = 0.0f;
        if (r == a.rank) {
          d = read_raw(own, items * kLlLineData, i * kLlLineData);
          item.scales = own_scales[i];
          global = scales != nullptr ? scales[r] : *a.scale;
        } else if (complete_line(line_at(mine_half, r, 2 + i), v[k], flag, a.abort_word) &&
                   complete_line(line_at(mine_half, r, cr.scale_line + i / kLlLineData), w[k], flag,
                                 a.abort_word) &&
                   (scales != nullptr ||
                    complete_line(line_at(mine_half, r, 1), g[k], flag, a.abort_word))) {
          d = make_uint2(v[k].x, v[k].z);
          unsigned const word = (i % kLlLineData) < 4 ? w[k].x : w[k].z;
          item.scales = static_cast<std::uint8_t>(word >> (8 * (i % 4)));
          global = scales != nullptr ? scales[r] : __uint_as_float(g[k].x);
        } else {
          return;  // aborted
        }
        item.w[0] = d.x;
        item.w[1] = d.y;
        accumulate<true, 8>(item, 16384.0f / global, Fp8Format::E4M3, acc);
      }
    }
    store_floats<16>(a.out, i * 16, acc);
  }
}

// BF16: the same, one line (4 values) per thread.
__device__ __forceinline__ void reduce_device_counts_bf16(const LlDeviceCountsReduceArgs& a,
                                                          const DeviceCountsRows<false>& cr,
                                                          const char* mine_half, std::size_t rows,
                                                          std::size_t first, std::uint32_t flag) {
  std::size_t const mine_bytes = rows * cr.row_bytes, all_bytes = a.capacity * cr.row_bytes;
  std::size_t const mine_lines = ll_lines(mine_bytes), all_lines = ll_lines(all_bytes);
  const unsigned char* const own = static_cast<const unsigned char*>(a.send) + first * cr.row_bytes;
  for (std::size_t l = global_thread(); l < all_lines; l += grid_threads()) {
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int r0 = 0; l < mine_lines && r0 < a.size; r0 += kDeviceCountsRankBatch) {
      uint4 v[kDeviceCountsRankBatch];
#pragma unroll
      for (int k = 0; k < kDeviceCountsRankBatch; ++k) {
        int const r = r0 + k;
        if (r < a.size && r != a.rank) v[k] = load_line(line_at(mine_half, r, 2 + l));
      }
#pragma unroll
      for (int k = 0; k < kDeviceCountsRankBatch; ++k) {
        int const r = r0 + k;
        if (r >= a.size) break;
        uint2 d;
        if (r == a.rank) {
          d = read_raw(own, mine_bytes, l * kLlLineData);
        } else if (complete_line(line_at(mine_half, r, 2 + l), v[k], flag, a.abort_word)) {
          d = make_uint2(v[k].x, v[k].z);
        } else {
          return;  // aborted
        }
        add_bf16x4(acc, d);
      }
    }
    write_bytes(LlSegment{nullptr, a.out, all_bytes, 0}, 0, l * kLlLineData, round_bf16x4(acc));
  }
}

// Counts gathered before the call: waits for line 0 of peer q's slot (the count and offset q took
// for this rank, `sent` its count) and sets the overflow flag (from CTA 0) where they differ from
// this rank's own. False when aborted.
__device__ __forceinline__ bool check_peer_count(const LlDeviceCountsReduceArgs& a,
                                                 const char* mine_half, int q,
                                                 std::int32_t mine_raw, std::int32_t my_first,
                                                 std::uint32_t flag, std::int32_t& sent) {
  uint2 d;
  if (!wait_line(mine_half, q, 0, flag, a.abort_word, d)) return false;
  sent = static_cast<std::int32_t>(d.x);
  bool const same = sent == mine_raw && static_cast<std::int32_t>(d.y) == my_first;
  if (!same && blockIdx.x == 0) *a.overflow = 1;
  return true;
}

// Counts gathered before the call (count null): the rows go out at once, capacity rows to every
// peer (a call here fits one slot: at most 96 KiB a rank), so that every line a rank waits for
// comes whatever the counts; each rank sums its rows at once, the NVFP4 global scales loaded with
// them. Line 0 of this rank's slot in peer p's scratch carries the count and the offset this
// rank took for p, which p checks after its sum (CTA 0; every peer's line 0 read in every call,
// as the halves' reuse needs). Every thread of the CTA calls it.
template <bool kNvfp4>
__device__ __forceinline__ void reduce_gathered(const LlDeviceCountsReduceArgs& a,
                                                const DeviceCountsRows<kNvfp4>& cr,
                                                DeviceCountsShared& sh, std::size_t at,
                                                const char* mine_half, std::int32_t mine_raw,
                                                std::uint32_t scale_bits, std::uint32_t flag) {
  int const n = a.size;
  int const me = a.rank;
  std::size_t const first = global_thread();
  known_counts(a, sh);
  if (first >= 1 && first < static_cast<std::size_t>(n)) {
    int const p = rotated(me, static_cast<int>(first), n);
    store_line(sh.slots[p] + at, make_uint4(static_cast<unsigned>(sh.raw[p]), flag,
                                            static_cast<unsigned>(sh.first_row[p]), flag));
    store_line(sh.slots[p] + at + kLlLineBytes, make_uint4(scale_bits, flag, 0u, flag));
  }
  push_peer_rows(a, cr, sh.slots, at, sh.first_row, true, flag);
  auto const rows = static_cast<std::size_t>(sh.first_row[me + 1] - sh.first_row[me]);
  auto const my_first = static_cast<std::size_t>(sh.first_row[me]);
  if constexpr (kNvfp4) {
    reduce_device_counts_nvfp4(a, cr, mine_half, rows, my_first, nullptr, flag);
  } else {
    reduce_device_counts_bf16(a, cr, mine_half, rows, my_first, flag);
  }
  std::int32_t sent = 0;
  for (int q = static_cast<int>(threadIdx.x); blockIdx.x == 0 && q < n;
       q += static_cast<int>(blockDim.x)) {
    if (q != me) check_peer_count(a, mine_half, q, mine_raw, sh.first_row[me], flag, sent);
  }
}

// One resident CTA per SM is enough (the LL grid is capped below the SM count): ptxas then keeps
// the BF16 variant in 92 registers instead of spilling at the 64 that two CTAs of kThreads leave,
// which measured faster at decode sizes (docs/design-notes.md, device counts).
template <bool kNvfp4>
__global__ void __launch_bounds__(kThreads, 1)
    ll_device_counts_reduce_kernel(const LlLaunch launch_flags,
                                   const __grid_constant__ LlDeviceCountsReduceArgs a) {
  programmatic_wait(launch_flags);
  __shared__ DeviceCountsShared sh;
  __shared__ float scales[kMaxRanks];
  int const n = a.size;
  int const me = a.rank;
  bool const gathered = a.count == nullptr;
  DeviceCountsRows<kNvfp4> const cr(a);
  open_call(a.calls, a.scratch, n, sh.call, sh.slots);
  std::int32_t const mine_raw = gathered ? a.counts[me] : *a.count;
  __syncthreads();
  std::uint32_t const c = sh.call;
  std::uint32_t const flag = call_flag(c);
  std::size_t const half = call_half(c, n);
  std::size_t const at = half + static_cast<std::size_t>(me) * kLlSlotBytes;
  const char* const mine_half = sh.slots[me] + half;
  std::size_t const first = global_thread();
  std::uint32_t const scale_bits = kNvfp4 ? __float_as_uint(*a.scale) : 0u;
  if (gathered) {
    reduce_gathered(a, cr, sh, at, mine_half, mine_raw, scale_bits, flag);
    advance_call(a.calls, c);
    programmatic_release(launch_flags);
    return;
  }
  // Count and scale to every peer, then every peer's count, then the rows.
  if (first < 2) {
    uint2 const d =
        first == 0 ? make_uint2(static_cast<unsigned>(mine_raw), 0u) : make_uint2(scale_bits, 0u);
    store_to_peers(sh.slots, me, n, at, first, d, flag);
  }
  bool ok = read_counts(a, mine_half, mine_raw, flag, sh);
  if (ok) push_peer_rows(a, cr, sh.slots, at, sh.first_row, false, flag);
  // NVFP4: every rank's global scale (line 1, sent with the count) once per CTA.
  if constexpr (kNvfp4) {
    for (int q = static_cast<int>(threadIdx.x); ok && q < n; q += static_cast<int>(blockDim.x)) {
      uint2 d;
      if (q == me) {
        scales[q] = *a.scale;
      } else if (wait_line(mine_half, q, 1, flag, a.abort_word, d)) {
        scales[q] = __uint_as_float(d.x);
      } else {
        sh.aborted = 1;
      }
    }
  }
  __syncthreads();
  ok = ok && sh.aborted == 0;
  // This rank's rows summed over every rank in rank order; out's rows past them 0.
  auto const rows = static_cast<std::size_t>(ok ? sh.first_row[me + 1] - sh.first_row[me] : 0);
  auto const my_first = static_cast<std::size_t>(ok ? sh.first_row[me] : 0);
  if constexpr (kNvfp4) {
    reduce_device_counts_nvfp4(a, cr, mine_half, rows, my_first, scales, flag);
  } else {
    reduce_device_counts_bf16(a, cr, mine_half, rows, my_first, flag);
  }
  advance_call(a.calls, c);
  programmatic_release(launch_flags);
}

// Loaded with the rest of this module when a communicator is made (core/kernel_preload.hpp).
[[maybe_unused]] const bool kModuleRegistered =
    register_kernel_module(reinterpret_cast<const void*>(&ll_device_counts_reduce_kernel<false>),
                           "kernels/lsa_ll_device_counts_reduce.cu");
#endif

}  // namespace

void ll_device_counts_reduce(const LlDeviceCountsReduceArgs& a, LaunchShare share,
                             cudaStream_t stream) {
  bool const nvfp4 = a.type == DataType::Nvfp4;
  SYMMCOMM_EXPECTS(a.type == DataType::Bf16 || nvfp4, "lsa ll device-count reduce: rows of "
                                                          << to_string(a.type)
                                                          << " (bf16 or nvfp4)");
  check_ll_counts(a, false, "lsa ll device-count reduce");
  SYMMCOMM_EXPECTS(a.send != nullptr && a.out != nullptr,
                   "lsa ll device-count reduce: send or out is null");
  SYMMCOMM_EXPECTS(
      a.row_elements > 0 && (!nvfp4 || a.row_elements % 16 == 0),
      "lsa ll device-count reduce: row_elements " << a.row_elements << " of " << to_string(a.type));
  SYMMCOMM_EXPECTS(!nvfp4 || (a.block_scales != nullptr && a.scale != nullptr),
                   "lsa ll device-count reduce: nvfp4 without its scales");
  SYMMCOMM_EXPECTS(!nvfp4 || reinterpret_cast<std::uintptr_t>(a.out) % 16 == 0,
                   "lsa ll device-count reduce: out is not 16-byte aligned");
  std::size_t const lines = ll_device_counts_reduce_lines(a.type, a.capacity, a.row_elements);
  SYMMCOMM_EXPECTS(a.capacity <= static_cast<std::size_t>(INT32_MAX) &&
                       lines <= kLlMaxBytesPerRank / kLlLineData,
                   "lsa ll device-count reduce: capacity " << a.capacity << " rows need " << lines
                                                           << " lines, past a slot of "
                                                           << kLlMaxBytesPerRank / kLlLineData);
#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
  unsigned const grid = grid_for_units(lines, kLlGridCap);
  LlLaunch flags;
  flags.programmatic = programmatic_launch();
  auto const go = [&](auto kernel) { launch_resident(kernel, share, grid, stream, flags, a); };
  nvfp4 ? go(ll_device_counts_reduce_kernel<true>) : go(ll_device_counts_reduce_kernel<false>);
#else
  (void)share;
  (void)stream;
  SYMMCOMM_FAIL(
      "lsa ll device-count reduce: this build has no NCCL device API (NCCL < 2.28 headers)");
#endif
}

}  // namespace symmcomm::detail::lsa
