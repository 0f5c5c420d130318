// symmcomm's small-message all-gather and reduce-scatter: flags in the data instead of
// barriers (lsa_ll.hpp).

#include "core/kernel_preload.hpp"
#include "lsa_launch.cuh"
#include "lsa_ll.hpp"
#include "lsa_reduce.cuh"

#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
#include <nccl_device.h>
#endif

namespace symmcomm::detail::lsa {
namespace {

#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
// The launch's only policy field (launch() and programmatic_wait() read `programmatic`).
struct LlLaunch {
  bool programmatic = false;
};

// One 16-byte line, stored and loaded whole; volatile so that a spinning reader sees a peer's
// store and the compiler neither caches nor splits it.
__device__ __forceinline__ void store_line(void* p, uint4 v) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}
__device__ __forceinline__ uint4 load_line(const void* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}

// The segment holding line `line` of a rank's slot, and the line's byte offset in it.
__device__ __forceinline__ const LlSegment& segment_of(const LlGatherArgs& a, std::size_t line,
                                                       std::size_t& offset) {
  int s = 0;
  while (s + 1 < a.segments && line >= a.segment[s + 1].first_line) ++s;
  offset = (line - a.segment[s].first_line) * kLlLineData;
  return a.segment[s];
}

// Eight bytes (fewer at a segment's end, the rest 0) of `seg` from `offset`.
__device__ __forceinline__ uint2 read_bytes(const LlSegment& seg, std::size_t offset) {
  const auto* src = static_cast<const unsigned char*>(seg.src) + offset;
  if (offset + kLlLineData <= seg.bytes && reinterpret_cast<std::uintptr_t>(src) % 8 == 0) {
    return *reinterpret_cast<const uint2*>(src);
  }
  unsigned long long v = 0;
  std::size_t const n = seg.bytes - offset < kLlLineData ? seg.bytes - offset : kLlLineData;
  for (std::size_t i = 0; i < n; ++i) v |= static_cast<unsigned long long>(src[i]) << (8 * i);
  return make_uint2(static_cast<unsigned>(v), static_cast<unsigned>(v >> 32));
}

// The same bytes into rank `from`'s part of the segment's receive buffer.
__device__ __forceinline__ void write_bytes(const LlSegment& seg, int from, std::size_t offset,
                                            uint2 d) {
  auto* dst =
      static_cast<unsigned char*>(seg.recv) + static_cast<std::size_t>(from) * seg.bytes + offset;
  if (offset + kLlLineData <= seg.bytes && reinterpret_cast<std::uintptr_t>(dst) % 8 == 0) {
    *reinterpret_cast<uint2*>(dst) = d;
    return;
  }
  unsigned long long const v = (static_cast<unsigned long long>(d.y) << 32) | d.x;
  std::size_t const n = seg.bytes - offset < kLlLineData ? seg.bytes - offset : kLlLineData;
  for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<unsigned char>(v >> (8 * i));
}

// Eight bytes (fewer at the end of `bytes`, the rest 0) of `base` from `offset`.
__device__ __forceinline__ uint2 read_raw(const void* base, std::size_t bytes, std::size_t offset) {
  return read_bytes(LlSegment{base, nullptr, bytes, 0}, offset);
}

// Where line `line` of rank `from`'s slot lies in `mine` (this rank's half).
__device__ __forceinline__ const char* line_at(const char* mine, int from, std::size_t line) {
  return mine + static_cast<std::size_t>(from) * kLlSlotBytes + line * kLlLineBytes;
}

// Re-loads `v` (line `q`, loaded once already) until its flags read `flag`; false when the
// communicator was aborted while it waited (the abort word is read every kAbortPolls polls).
__device__ __forceinline__ bool complete_line(const char* q, uint4& v, std::uint32_t flag,
                                              const std::uint32_t* abort_word) {
  for (unsigned polls = 1; v.y != flag || v.w != flag; ++polls) {
    if (polls % kAbortPolls == 0 && abort_raised(abort_word)) return false;
    v = load_line(q);
  }
  return true;
}

// Line `line` of rank `from`'s slot in `mine` (this rank's half), once its flags read `flag`;
// false when the communicator was aborted while it waited.
__device__ __forceinline__ bool wait_line(const char* mine, int from, std::size_t line,
                                          std::uint32_t flag, const std::uint32_t* abort_word,
                                          uint2& d) {
  const char* q = line_at(mine, from, line);
  uint4 v = load_line(q);
  if (!complete_line(q, v, flag, abort_word)) return false;
  d = make_uint2(v.x, v.z);
  return true;
}

// Ranks whose lines a reducing thread loads at once before completing them in rank order: one
// round trip for the batch instead of one per line.
constexpr int kLlRankBatch = 4;

// Four bf16 values (one line's 8 bytes, element 0 in the low half of x) added to `acc` in fp32.
__device__ __forceinline__ void add_bf16x4(float (&acc)[4], uint2 d) {
  acc[0] += __uint_as_float(d.x << 16);
  acc[1] += __uint_as_float(d.x & 0xFFFF0000u);
  acc[2] += __uint_as_float(d.y << 16);
  acc[3] += __uint_as_float(d.y & 0xFFFF0000u);
}

// The four sums rounded once to bf16, as one line's 8 bytes.
__device__ __forceinline__ uint2 round_bf16x4(const float (&acc)[4]) {
  auto const bits = [](float x) {
    return static_cast<unsigned>(__bfloat16_as_ushort(__float2bfloat16_rn(x)));
  };
  return make_uint2(bits(acc[0]) | (bits(acc[1]) << 16), bits(acc[2]) | (bits(acc[3]) << 16));
}

// The flag of call `c`: never 0, so zeroed scratch never matches.
__device__ __forceinline__ std::uint32_t call_flag(std::uint32_t c) {
  return c | 0x80000000u;
}

// The byte offset of call `c`'s half of a scratch of `n` slots (alternate calls, alternate halves).
__device__ __forceinline__ std::size_t call_half(std::uint32_t c, int n) {
  return static_cast<std::size_t>(c & 1u) * static_cast<std::size_t>(n) * kLlSlotBytes;
}

// Advances the call counter once every CTA has read it: by the one CTA, or by the last CTA to
// finish (every CTA read it before counting itself). One counter for both kernels.
__device__ __forceinline__ void advance_call(std::uint32_t* calls, std::uint32_t c) {
  if (threadIdx.x != 0) return;
  if (gridDim.x == 1 || atomicAdd(&calls[1], 1u) == gridDim.x - 1) {
    if (gridDim.x > 1) calls[1] = 0;
    calls[0] = c + 1;
  }
}

// Lines a thread sends, loaded before the call's number is known (their loads, the counter's
// and the peers' window lookups are then one wait instead of three).
constexpr int kLlSendUnroll = 2;

__global__ void __launch_bounds__(kThreads)
    ll_gather_kernel(const LlLaunch launch_flags, const __grid_constant__ LlGatherArgs a) {
  programmatic_wait(launch_flags);
  __shared__ std::uint32_t call;
  __shared__ char* slots[kMaxRanks];  // each rank's scratch (first half)
  int const n = a.size;
  int const me = a.rank;
  std::size_t const stride = grid_threads();
  std::size_t const first = global_thread();
  if (threadIdx.x == 0) call = a.calls[0];
  for (int p = static_cast<int>(threadIdx.x); p < n; p += static_cast<int>(blockDim.x)) {
    slots[p] = static_cast<char*>(ncclGetLsaPointer(a.scratch, 0, p));
  }
  uint2 data[kLlSendUnroll];
#pragma unroll
  for (int u = 0; u < kLlSendUnroll; ++u) {
    std::size_t const line = first + u * stride;
    std::size_t offset = 0;
    if (line < a.lines) data[u] = read_bytes(segment_of(a, line, offset), offset);
  }
  __syncthreads();
  std::uint32_t const c = call;
  std::uint32_t const flag = call_flag(c);
  std::size_t const half = call_half(c, n);
  // Send: each line of this rank's data to its slot in every peer's scratch, and to its own
  // place in this rank's receive buffer.
  auto const send = [&](std::size_t line, uint2 d) {
    std::size_t offset = 0;
    const LlSegment& seg = segment_of(a, line, offset);
    uint4 const packet = make_uint4(d.x, flag, d.y, flag);
    std::size_t const at = half + static_cast<std::size_t>(me) * kLlSlotBytes + line * kLlLineBytes;
    for (int j = 1; j < n; ++j) store_line(slots[rotated(me, j, n)] + at, packet);
    write_bytes(seg, me, offset, d);
  };
#pragma unroll
  for (int u = 0; u < kLlSendUnroll; ++u) {
    if (first + u * stride < a.lines) send(first + u * stride, data[u]);
  }
  for (std::size_t line = first + kLlSendUnroll * stride; line < a.lines; line += stride) {
    std::size_t offset = 0;
    send(line, read_bytes(segment_of(a, line, offset), offset));
  }
  // Receive: every peer's lines from this rank's scratch once their flags say this call; every
  // kAbortPolls polls the communicator's abort word is read, so that an abort ends us.
  std::size_t const items = static_cast<std::size_t>(n - 1) * a.lines;
  const char* const mine = slots[me] + half;
  for (std::size_t i = first; i < items; i += stride) {
    int const from = rotated(me, static_cast<int>(i / a.lines) + 1, n);
    std::size_t const line = i % a.lines;
    uint2 d;
    if (!wait_line(mine, from, line, flag, a.abort_word, d)) break;  // aborted
    std::size_t offset = 0;
    const LlSegment& seg = segment_of(a, line, offset);
    write_bytes(seg, from, offset, d);
  }
  advance_call(a.calls, c);
  programmatic_release(launch_flags);
}
// The push-model reduce-scatter (LlReduceArgs): every rank sends shard p of its send to peer p's
// scratch, then sums its own shard from every rank in rank order.
__global__ void __launch_bounds__(kThreads)
    ll_reduce_scatter_kernel(const LlLaunch launch_flags, const __grid_constant__ LlReduceArgs a) {
  programmatic_wait(launch_flags);
  __shared__ std::uint32_t call;
  __shared__ char* slots[kMaxRanks];  // each rank's scratch (first half)
  int const n = a.size;
  int const me = a.rank;
  std::size_t const stride = grid_threads();
  std::size_t const first = global_thread();
  std::size_t const shard_bytes = 2 * a.shard;
  std::size_t const lines = (shard_bytes + kLlLineData - 1) / kLlLineData;  // ll_lines
  const auto* send = static_cast<const unsigned char*>(a.send);
  if (threadIdx.x == 0) call = a.calls[0];
  for (int p = static_cast<int>(threadIdx.x); p < n; p += static_cast<int>(blockDim.x)) {
    slots[p] = static_cast<char*>(ncclGetLsaPointer(a.scratch, 0, p));
  }
  __syncthreads();
  std::uint32_t const c = call;
  std::uint32_t const flag = call_flag(c);
  std::size_t const half = call_half(c, n);
  // Send: line l of shard p (every peer p) into this rank's slot of p's scratch.
  std::size_t const items = static_cast<std::size_t>(n - 1) * lines;
  for (std::size_t i = first; i < items; i += stride) {
    int const p = rotated(me, static_cast<int>(i / lines) + 1, n);
    std::size_t const line = i % lines;
    uint2 const d =
        read_raw(send + static_cast<std::size_t>(p) * shard_bytes, shard_bytes, line * kLlLineData);
    store_line(slots[p] + half + static_cast<std::size_t>(me) * kLlSlotBytes + line * kLlLineBytes,
               make_uint4(d.x, flag, d.y, flag));
  }
  // Receive: line l of this rank's shard summed over every rank in rank order, rounded once.
  const char* const mine = slots[me] + half;
  const unsigned char* const own = send + static_cast<std::size_t>(me) * shard_bytes;
  bool aborted = false;
  for (std::size_t line = first; line < lines && !aborted; line += stride) {
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int r0 = 0; r0 < n && !aborted; r0 += kLlRankBatch) {
      uint4 v[kLlRankBatch];
#pragma unroll
      for (int k = 0; k < kLlRankBatch; ++k) {
        if (r0 + k < n && r0 + k != me) v[k] = load_line(line_at(mine, r0 + k, line));
      }
#pragma unroll
      for (int k = 0; k < kLlRankBatch; ++k) {
        int const r = r0 + k;
        if (r >= n) break;
        uint2 d;
        if (r == me) {
          d = read_raw(own, shard_bytes, line * kLlLineData);
        } else if (complete_line(line_at(mine, r, line), v[k], flag, a.abort_word)) {
          d = make_uint2(v[k].x, v[k].z);
        } else {
          aborted = true;
          break;
        }
        add_bf16x4(acc, d);
      }
    }
    if (aborted) break;
    write_bytes(LlSegment{nullptr, a.out, shard_bytes, 0}, 0, line * kLlLineData,
                round_bf16x4(acc));
  }
  advance_call(a.calls, c);
  programmatic_release(launch_flags);
}

// The push-model reduce-scatter from NVFP4 or FP8 codes (LlReduceArgs): a slot holds `items`
// lines of codes (one item each: an NVFP4 block or 8 FP8 values), then NVFP4's block scale codes
// (8 per line), then the sender's scale. One thread per item of this rank's shard sums it over
// every rank in rank order with the pull kernel's accumulate(), so both kernels agree bit for
// bit.
template <bool kNvfp4, class Out>
__global__ void __launch_bounds__(kThreads)
    ll_quantized_reduce_scatter_kernel(const LlLaunch launch_flags,
                                       const __grid_constant__ LlReduceArgs a) {
  constexpr int kElems = kNvfp4 ? 16 : 8;
  programmatic_wait(launch_flags);
  __shared__ std::uint32_t call;
  __shared__ char* slots[kMaxRanks];
  int const n = a.size;
  int const me = a.rank;
  std::size_t const stride = grid_threads();
  std::size_t const first = global_thread();
  std::size_t const items = a.shard / kElems;
  std::size_t const code_bytes = items * kLlLineData;  // one shard's codes
  std::size_t const scale_lines = kNvfp4 ? (items + kLlLineData - 1) / kLlLineData : 0;
  std::size_t const lines = items + scale_lines + 1;  // ll_reduce_lines
  const auto* codes = static_cast<const unsigned char*>(a.send);
  if (threadIdx.x == 0) call = a.calls[0];
  for (int p = static_cast<int>(threadIdx.x); p < n; p += static_cast<int>(blockDim.x)) {
    slots[p] = static_cast<char*>(ncclGetLsaPointer(a.scratch, 0, p));
  }
  float const my_scale = *a.scale;
  __syncthreads();
  std::uint32_t const c = call;
  std::uint32_t const flag = call_flag(c);
  std::size_t const half = call_half(c, n);
  // Send: line l of this rank's contribution to peer p: codes, block scale codes, scale.
  std::size_t const sends = static_cast<std::size_t>(n - 1) * lines;
  for (std::size_t i = first; i < sends; i += stride) {
    int const p = rotated(me, static_cast<int>(i / lines) + 1, n);
    std::size_t const line = i % lines;
    uint2 d;
    if (line < items) {
      d = read_raw(codes + static_cast<std::size_t>(p) * code_bytes, code_bytes,
                   line * kLlLineData);
    } else if (line + 1 < lines) {
      d = read_raw(a.block_scales + static_cast<std::size_t>(p) * items, items,
                   (line - items) * kLlLineData);
    } else {
      d = make_uint2(__float_as_uint(my_scale), 0u);
    }
    store_line(slots[p] + half + static_cast<std::size_t>(me) * kLlSlotBytes + line * kLlLineBytes,
               make_uint4(d.x, flag, d.y, flag));
  }
  // Receive: item i of this rank's shard from every rank in rank order, dequantized with that
  // rank's scales, summed in fp32, rounded once.
  const char* const mine = slots[me] + half;
  Fp8Format const format = fp8_format_of(a.type);
  bool aborted = false;
  for (std::size_t i = first; i < items && !aborted; i += stride) {
    float acc[kElems] = {};
    std::size_t const scale_line = items + i / kLlLineData;
    for (int r0 = 0; r0 < n && !aborted; r0 += kLlRankBatch) {
      // Codes, block scales (NVFP4) and scale of the batch's ranks, loaded at once.
      uint4 dv[kLlRankBatch], sv[kLlRankBatch], gv[kLlRankBatch];
#pragma unroll
      for (int k = 0; k < kLlRankBatch; ++k) {
        int const r = r0 + k;
        if (r >= n || r == me) continue;
        dv[k] = load_line(line_at(mine, r, i));
        if constexpr (kNvfp4) sv[k] = load_line(line_at(mine, r, scale_line));
        gv[k] = load_line(line_at(mine, r, lines - 1));
      }
#pragma unroll
      for (int k = 0; k < kLlRankBatch; ++k) {
        int const r = r0 + k;
        if (r >= n) break;
        RawItem<kNvfp4, 8> raw;
        float s;
        if (r == me) {
          uint2 const d = read_raw(codes + static_cast<std::size_t>(me) * code_bytes, code_bytes,
                                   i * kLlLineData);
          raw.w[0] = d.x;
          raw.w[1] = d.y;
          if constexpr (kNvfp4) {
            raw.scales = a.block_scales[static_cast<std::size_t>(me) * items + i];
          }
          s = my_scale;
        } else {
          if (!complete_line(line_at(mine, r, i), dv[k], flag, a.abort_word) ||
              (kNvfp4 && !complete_line(line_at(mine, r, scale_line), sv[k], flag, a.abort_word)) ||
              !complete_line(line_at(mine, r, lines - 1), gv[k], flag, a.abort_word)) {
            aborted = true;
            break;
          }
          raw.w[0] = dv[k].x;
          raw.w[1] = dv[k].z;
          if constexpr (kNvfp4) {
            // Byte i % 8 of the line's 8 data bytes (x holds bytes 0-3, z bytes 4-7).
            unsigned const word = (i % kLlLineData) < 4 ? sv[k].x : sv[k].z;
            raw.scales = static_cast<std::uint8_t>(word >> (8 * (i % 4)));
          }
          s = __uint_as_float(gv[k].x);
        }
        // NVFP4: 2^14 / global scale, as the pull kernel (its decoder's values are 2^-14 scaled).
        accumulate<kNvfp4, 8>(raw, kNvfp4 ? 16384.0f / s : s, format, acc);
      }
    }
    if (aborted) break;
    store_floats<kElems>(static_cast<Out*>(a.out), i * kElems, acc);
  }
  advance_call(a.calls, c);
  programmatic_release(launch_flags);
}

// Which part line `li` of a row belongs to (`part_line`: each part's first line in a row, then
// the row's line count).
__device__ __forceinline__ int part_of_line(
    const std::size_t (&part_line)[LlCountedGatherArgs::kMaxParts + 1], int parts, std::size_t li) {
  int k = 0;
  while (k + 1 < parts && li >= part_line[k + 1]) ++k;
  return k;
}

// Where every rank's rows are, from every rank's count line (line 0 of its slot in `mine_half`;
// this rank's own count is `mine_raw`): one thread per rank in every CTA waits for its line, then
// thread 0 takes the prefix of the counts clamped to 0..cap into `first_row` (n + 1 entries) and,
// in CTA 0, writes the raw counts, the offsets and the overflow flag. Returns false when the
// communicator was aborted while a thread waited. Every thread of the CTA calls it.
__device__ __forceinline__ bool read_counts(const char* mine_half, int me, int n,
                                            std::int32_t mine_raw, std::int32_t cap,
                                            std::uint32_t flag, const std::uint32_t* abort_word,
                                            std::int32_t* counts, std::int32_t* offsets,
                                            std::int32_t* overflow, std::int32_t (&raw)[kMaxRanks],
                                            std::int32_t (&first_row)[kMaxRanks + 1],
                                            int& aborted) {
  if (threadIdx.x == 0) aborted = 0;
  __syncthreads();
  for (int q = static_cast<int>(threadIdx.x); q < n; q += static_cast<int>(blockDim.x)) {
    std::int32_t v = mine_raw;
    uint2 d;
    if (q != me) {
      if (wait_line(mine_half, q, 0, flag, abort_word, d)) {
        v = static_cast<std::int32_t>(d.x);
      } else {
        aborted = 1;
        v = 0;
      }
    }
    raw[q] = v;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    std::int32_t sum = 0;
    bool over = false;
    for (int q = 0; q < n; ++q) {
      std::int32_t const v = raw[q];
      std::int32_t const clamped = v < 0 ? 0 : (v > cap ? cap : v);
      over = over || clamped != v;
      first_row[q] = sum;
      if (blockIdx.x == 0) {
        counts[q] = v;
        offsets[q] = sum;
      }
      sum += clamped;
    }
    first_row[n] = sum;
    if (blockIdx.x == 0 && over) *overflow = 1;
  }
  __syncthreads();
  return aborted == 0;
}

// A rank's count clamped to 0..cap.
__device__ __forceinline__ std::int32_t clamp_count(std::int32_t v, std::int32_t cap) {
  return v < 0 ? 0 : (v > cap ? cap : v);
}

// The counts-in-lines gather (LlCountedGatherArgs): send this rank's count, scale and counted
// rows to every peer's scratch, read every peer's count, then copy every rank's rows to their
// compact place.
__global__ void __launch_bounds__(kThreads)
    ll_counted_gather_kernel(const LlLaunch launch_flags,
                             const __grid_constant__ LlCountedGatherArgs a) {
  programmatic_wait(launch_flags);
  __shared__ std::uint32_t call;
  __shared__ char* slots[kMaxRanks];
  __shared__ std::int32_t raw[kMaxRanks];
  __shared__ std::int32_t first_row[kMaxRanks + 1];
  __shared__ int aborted;
  int const n = a.size;
  int const me = a.rank;
  std::size_t const stride = grid_threads();
  std::size_t const first = global_thread();
  std::size_t part_line[LlCountedGatherArgs::kMaxParts + 1];
  std::size_t row_lines = 0;
#pragma unroll
  for (int k = 0; k < LlCountedGatherArgs::kMaxParts; ++k) {
    part_line[k] = row_lines;
    if (k < a.parts) row_lines += (a.part[k].row_bytes + kLlLineData - 1) / kLlLineData;
  }
  part_line[LlCountedGatherArgs::kMaxParts] = row_lines;
  if (threadIdx.x == 0) call = a.calls[0];
  for (int p = static_cast<int>(threadIdx.x); p < n; p += static_cast<int>(blockDim.x)) {
    slots[p] = static_cast<char*>(ncclGetLsaPointer(a.scratch, 0, p));
  }
  auto const cap = static_cast<std::int32_t>(a.capacity);
  std::int32_t const mine_raw = *a.count;
  std::int32_t const mine = clamp_count(mine_raw, cap);
  __syncthreads();
  std::uint32_t const c = call;
  std::uint32_t const flag = call_flag(c);
  std::size_t const half = call_half(c, n);
  // Send: line 0 the raw count, line 1 the scale, then the counted rows, part after part.
  std::size_t const lines = 2 + static_cast<std::size_t>(mine) * row_lines;
  std::size_t const at = half + static_cast<std::size_t>(me) * kLlSlotBytes;
  for (std::size_t line = first; line < lines; line += stride) {
    uint2 d;
    if (line == 0) {
      d = make_uint2(static_cast<unsigned>(mine_raw), 0u);
    } else if (line == 1) {
      d = make_uint2(a.scale_src != nullptr ? __float_as_uint(*a.scale_src) : 0u, 0u);
    } else {
      std::size_t const row = (line - 2) / row_lines, li = (line - 2) % row_lines;
      int const k = part_of_line(part_line, a.parts, li);
      std::size_t const bytes = a.part[k].row_bytes;
      d = read_raw(static_cast<const unsigned char*>(a.part[k].src) + row * bytes, bytes,
                   (li - part_line[k]) * kLlLineData);
    }
    uint4 const packet = make_uint4(d.x, flag, d.y, flag);
    for (int j = 1; j < n; ++j)
      store_line(slots[rotated(me, j, n)] + at + line * kLlLineBytes, packet);
  }
  // Counts: every rank's line 0, then their prefix.
  const char* const mine_half = slots[me] + half;
  bool const ok = read_counts(mine_half, me, n, mine_raw, cap, flag, a.abort_word, a.counts,
                              a.offsets, a.overflow, raw, first_row, aborted);
  if (ok) {
    // Scale floats: CTA 0, one thread per rank.
    if (blockIdx.x == 0 && a.scale_recv != nullptr) {
      for (int q = static_cast<int>(threadIdx.x); q < n; q += static_cast<int>(blockDim.x)) {
        uint2 d;
        if (q == me) {
          a.scale_recv[q] = *a.scale_src;
        } else if (wait_line(mine_half, q, 1, flag, a.abort_word, d)) {
          a.scale_recv[q] = __uint_as_float(d.x);
        }
      }
    }
    // Rows: row g of the compact result is row g - first_row[q] of rank q.
    std::size_t const items = static_cast<std::size_t>(first_row[n]) * row_lines;
    for (std::size_t i = first; i < items; i += stride) {
      std::size_t const g = i / row_lines, li = i % row_lines;
      int q = 0;
      while (q + 1 < n && g >= static_cast<std::size_t>(first_row[q + 1])) ++q;
      std::size_t const j = g - static_cast<std::size_t>(first_row[q]);
      int const k = part_of_line(part_line, a.parts, li);
      std::size_t const bytes = a.part[k].row_bytes;
      std::size_t const offset = (li - part_line[k]) * kLlLineData;
      uint2 d;
      if (q == me) {
        d = read_raw(static_cast<const unsigned char*>(a.part[k].src) + j * bytes, bytes, offset);
      } else if (!wait_line(mine_half, q, 2 + j * row_lines + li, flag, a.abort_word, d)) {
        break;  // aborted
      }
      write_bytes(LlSegment{nullptr, a.part[k].recv, bytes, 0}, static_cast<int>(g), offset, d);
    }
  }
  advance_call(a.calls, c);
  programmatic_release(launch_flags);
}

// The counts-in-lines reduce-scatter (LlCountedReduceArgs). A slot holds the sender's count
// (line 0), its global scale (line 1, NVFP4), then the receiver's rows of the sender's send as one
// byte range from line 2 (BF16 values; NVFP4 codes, their block scales from line
// 2 + capacity x row_elements / 16).
template <bool kNvfp4>
__global__ void __launch_bounds__(kThreads)
    ll_counted_reduce_kernel(const LlLaunch launch_flags,
                             const __grid_constant__ LlCountedReduceArgs a) {
  programmatic_wait(launch_flags);
  __shared__ std::uint32_t call;
  __shared__ char* slots[kMaxRanks];
  __shared__ std::int32_t raw[kMaxRanks];
  __shared__ std::int32_t first_row[kMaxRanks + 1];
  __shared__ int aborted;
  int const n = a.size;
  int const me = a.rank;
  std::size_t const stride = grid_threads();
  std::size_t const first = global_thread();
  std::size_t const row = a.row_elements;
  // Bytes of one row: BF16 values, or NVFP4 codes; NVFP4 block scale codes of one row.
  std::size_t const row_bytes = kNvfp4 ? row / 2 : row * 2;
  std::size_t const row_scales = kNvfp4 ? row / 16 : 0;
  std::size_t const scale_line = 2 + a.capacity * row_scales;  // NVFP4: first block-scale line
  if (threadIdx.x == 0) call = a.calls[0];
  for (int p = static_cast<int>(threadIdx.x); p < n; p += static_cast<int>(blockDim.x)) {
    slots[p] = static_cast<char*>(ncclGetLsaPointer(a.scratch, 0, p));
  }
  auto const cap = static_cast<std::int32_t>(a.capacity);
  std::int32_t const mine_raw = *a.count;
  __syncthreads();
  std::uint32_t const c = call;
  std::uint32_t const flag = call_flag(c);
  std::size_t const half = call_half(c, n);
  std::size_t const at = half + static_cast<std::size_t>(me) * kLlSlotBytes;
  // Count and scale to every peer.
  if (first < 2) {
    uint2 const d = first == 0 ? make_uint2(static_cast<unsigned>(mine_raw), 0u)
                               : make_uint2(kNvfp4 ? __float_as_uint(*a.scale) : 0u, 0u);
    uint4 const packet = make_uint4(d.x, flag, d.y, flag);
    for (int j = 1; j < n; ++j) {
      store_line(slots[rotated(me, j, n)] + at + first * kLlLineBytes, packet);
    }
  }
  const char* const mine_half = slots[me] + half;
  bool const ok = read_counts(mine_half, me, n, mine_raw, cap, flag, a.abort_word, a.counts,
                              a.offsets, a.overflow, raw, first_row, aborted);
  const auto* send = static_cast<const unsigned char*>(a.send);
  if (ok) {
    // Each peer's rows of this rank's send, as lines into this rank's slot of its scratch.
    for (int j = 1; j < n; ++j) {
      int const p = rotated(me, j, n);
      auto const rows = static_cast<std::size_t>(first_row[p + 1] - first_row[p]);
      auto const from = static_cast<std::size_t>(first_row[p]);
      std::size_t const bytes = rows * row_bytes, scale_bytes = rows * row_scales;
      std::size_t const lines = ll_lines(bytes) + (kNvfp4 ? ll_lines(scale_bytes) : 0);
      char* const dst = slots[p] + at;
      for (std::size_t l = first; l < lines; l += stride) {
        uint2 d;
        std::size_t line;
        if (l < ll_lines(bytes)) {
          d = read_raw(send + from * row_bytes, bytes, l * kLlLineData);
          line = 2 + l;
        } else {
          std::size_t const k = l - ll_lines(bytes);
          d = read_raw(a.block_scales + from * row_scales, scale_bytes, k * kLlLineData);
          line = scale_line + k;
        }
        store_line(dst + line * kLlLineBytes, make_uint4(d.x, flag, d.y, flag));
      }
    }
  }
  // This rank's rows summed over every rank in rank order; out's rows past them 0.
  auto const mine_rows = static_cast<std::size_t>(ok ? first_row[me + 1] - first_row[me] : 0);
  auto const my_first = static_cast<std::size_t>(ok ? first_row[me] : 0);
  if constexpr (kNvfp4) {
    std::size_t const items = mine_rows * row / 16, all = a.capacity * row / 16;
    const unsigned char* const own = send + my_first * row_bytes;
    const std::uint8_t* const own_scales = a.block_scales + my_first * row_scales;
    bool stop = false;
    for (std::size_t i = first; i < all && !stop; i += stride) {
      float acc[16] = {};
      for (int r = 0; i < items && r < n; ++r) {
        RawItem<true, 8> item;
        float s;
        uint2 d, sc, g;
        if (r == me) {
          d = read_raw(own, items * kLlLineData, i * kLlLineData);
          item.scales = own_scales[i];
          s = *a.scale;
        } else if (wait_line(mine_half, r, 2 + i, flag, a.abort_word, d) &&
                   wait_line(mine_half, r, scale_line + i / kLlLineData, flag, a.abort_word, sc) &&
                   wait_line(mine_half, r, 1, flag, a.abort_word, g)) {
          unsigned const word = (i % kLlLineData) < 4 ? sc.x : sc.y;
          item.scales = static_cast<std::uint8_t>(word >> (8 * (i % 4)));
          s = __uint_as_float(g.x);
        } else {
          stop = true;
          break;
        }
        item.w[0] = d.x;
        item.w[1] = d.y;
        accumulate<true, 8>(item, 16384.0f / s, Fp8Format::E4M3, acc);
      }
      if (stop) break;
      store_floats<16>(a.out, i * 16, acc);
    }
  } else {
    std::size_t const mine_bytes = mine_rows * row_bytes, all_bytes = a.capacity * row_bytes;
    std::size_t const mine_lines = ll_lines(mine_bytes), all_lines = ll_lines(all_bytes);
    const unsigned char* const own = send + my_first * row_bytes;
    bool stop = false;
    for (std::size_t l = first; l < all_lines && !stop; l += stride) {
      float acc[4] = {0.f, 0.f, 0.f, 0.f};
      for (int r = 0; l < mine_lines && r < n; ++r) {
        uint2 d;
        if (r == me) {
          d = read_raw(own, mine_bytes, l * kLlLineData);
        } else if (!wait_line(mine_half, r, 2 + l, flag, a.abort_word, d)) {
          stop = true;
          break;
        }
        add_bf16x4(acc, d);
      }
      if (stop) break;
      write_bytes(LlSegment{nullptr, a.out, all_bytes, 0}, 0, l * kLlLineData, round_bf16x4(acc));
    }
  }
  advance_call(a.calls, c);
  programmatic_release(launch_flags);
}
#endif

// Grid cap of the kernels: enough threads that every peer's lines are read at once, up to a
// few CTAs per rank.
constexpr unsigned kLlGridCap = 16;

// On unless the latency benchmark turns it off: SYMMCOMM_LSA_LL=0 acts earlier, at communicator
// creation (no rank makes the scratch, so nothing fits).
std::atomic<bool>& ll_setting() {
  static std::atomic<bool> on{true};
  return on;
}

// Loaded with the rest of this module when a communicator is made (core/kernel_preload.hpp).
[[maybe_unused]] const bool kModuleRegistered =
    register_kernel_module(reinterpret_cast<const void*>(&ll_gather_kernel), "kernels/lsa_ll.cu");

// Off until measured against the one-launch kernel: the benchmarks and the tests turn it on.
std::atomic<bool>& ll_counts_setting() {
  static std::atomic<bool> on{false};
  return on;
}

}  // namespace

void set_ll_counts(bool on) noexcept {
  ll_counts_setting().store(on, std::memory_order_relaxed);
}
bool ll_counts_enabled() noexcept {
  return ll_counts_setting().load(std::memory_order_relaxed);
}

void set_ll_gather(bool on) noexcept {
  ll_setting().store(on, std::memory_order_relaxed);
}
bool ll_gather_enabled() noexcept {
  return ll_setting().load(std::memory_order_relaxed);
}

void ll_gather(const LlGatherArgs& a, int sm_share, cudaStream_t stream) {
#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
  SYMMCOMM_EXPECTS(a.segments >= 1 && a.segments <= kSlots,
                   "lsa ll gather: " << a.segments << " segments, outside 1.." << kSlots);
  SYMMCOMM_EXPECTS(a.size >= 1 && a.size <= kMaxRanks && a.rank >= 0 && a.rank < a.size,
                   "lsa ll gather: rank " << a.rank << " of " << a.size << " ranks");
  SYMMCOMM_EXPECTS(a.scratch != nullptr && a.calls != nullptr,
                   "lsa ll gather: the communicator has no scratch window");
  std::size_t line = 0;
  for (int s = 0; s < a.segments; ++s) {
    const LlSegment& seg = a.segment[s];
    SYMMCOMM_EXPECTS(seg.first_line == line && (seg.bytes == 0 || (seg.src && seg.recv)),
                     "lsa ll gather: segment " << s << " is not laid out in order");
    line += ll_lines(seg.bytes);
  }
  SYMMCOMM_EXPECTS(line == a.lines && a.lines >= 1 && a.lines <= kLlMaxBytesPerRank / kLlLineData,
                   "lsa ll gather: " << a.lines << " lines per rank, outside 1.."
                                     << kLlMaxBytesPerRank / kLlLineData);
  unsigned const grid =
      grid_for_units(a.lines * static_cast<std::size_t>(a.size > 1 ? a.size - 1 : 1), kLlGridCap);
  LlLaunch flags;
  flags.programmatic = programmatic_launch();
  launch(ll_gather_kernel,
         resident_grid(reinterpret_cast<const void*>(ll_gather_kernel), sm_share, grid), stream,
         flags, a);
#else
  (void)a;
  (void)sm_share;
  (void)stream;
  SYMMCOMM_FAIL("lsa ll gather: this build has no NCCL device API (NCCL < 2.28 headers)");
#endif
}

void ll_reduce_scatter(const LlReduceArgs& a, int sm_share, cudaStream_t stream) {
  bool const quantized = a.type != DataType::Bf16;
  SYMMCOMM_EXPECTS(
      a.type == DataType::Bf16 || a.type == DataType::Nvfp4 || a.type == DataType::Fp8E4M3 ||
          a.type == DataType::Fp8E5M2,
      "lsa ll reduce-scatter: send type " << to_string(a.type) << " (bf16, nvfp4, fp8 only)");
  SYMMCOMM_EXPECTS(a.size >= 1 && a.size <= kMaxRanks && a.rank >= 0 && a.rank < a.size,
                   "lsa ll reduce-scatter: rank " << a.rank << " of " << a.size << " ranks");
  SYMMCOMM_EXPECTS(a.scratch != nullptr && a.calls != nullptr,
                   "lsa ll reduce-scatter: the communicator has no scratch window");
  SYMMCOMM_EXPECTS(a.shard > 0 && (!quantized || a.shard % ll_line_elements(a.type) == 0) &&
                       ll_reduce_lines(a.type, a.shard) <= kLlMaxBytesPerRank / kLlLineData,
                   "lsa ll reduce-scatter: a shard of "
                       << a.shard << " " << to_string(a.type)
                       << " elements is not whole lines within a slot of " << kLlMaxBytesPerRank
                       << " bytes");
  SYMMCOMM_EXPECTS(a.send != nullptr && a.out != nullptr,
                   "lsa ll reduce-scatter: send or out is null");
  SYMMCOMM_EXPECTS(!quantized || (a.scale != nullptr &&
                                  (a.type != DataType::Nvfp4 || a.block_scales != nullptr)),
                   "lsa ll reduce-scatter: " << to_string(a.type) << " without its scales");
  SYMMCOMM_EXPECTS(!quantized || reinterpret_cast<std::uintptr_t>(a.out) % 16 == 0,
                   "lsa ll reduce-scatter: out is not 16-byte aligned");
  SYMMCOMM_EXPECTS(quantized || !a.out_fp32,
                   "lsa ll reduce-scatter: a bf16 sum is written as bf16 only");
#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
  std::size_t const lines = ll_reduce_lines(a.type, a.shard);
  unsigned const grid =
      grid_for_units(lines * static_cast<std::size_t>(a.size > 1 ? a.size - 1 : 1), kLlGridCap);
  LlLaunch flags;
  flags.programmatic = programmatic_launch();
  auto const go = [&](auto kernel) {
    launch(kernel, resident_grid(reinterpret_cast<const void*>(kernel), sm_share, grid), stream,
           flags, a);
  };
  if (!quantized) {
    go(ll_reduce_scatter_kernel);
  } else if (a.type == DataType::Nvfp4) {
    a.out_fp32 ? go(ll_quantized_reduce_scatter_kernel<true, float>)
               : go(ll_quantized_reduce_scatter_kernel<true, bf16>);
  } else {
    a.out_fp32 ? go(ll_quantized_reduce_scatter_kernel<false, float>)
               : go(ll_quantized_reduce_scatter_kernel<false, bf16>);
  }
#else
  (void)sm_share;
  (void)stream;
  SYMMCOMM_FAIL("lsa ll reduce-scatter: this build has no NCCL device API (NCCL < 2.28 headers)");
#endif
}

void ll_counted_gather(const LlCountedGatherArgs& a, int sm_share, cudaStream_t stream) {
  SYMMCOMM_EXPECTS(a.size >= 1 && a.size <= kMaxRanks && a.rank >= 0 && a.rank < a.size,
                   "lsa ll counted gather: rank " << a.rank << " of " << a.size << " ranks");
  SYMMCOMM_EXPECTS(a.scratch != nullptr && a.calls != nullptr,
                   "lsa ll counted gather: the communicator has no scratch window");
  SYMMCOMM_EXPECTS(a.parts >= 1 && a.parts <= LlCountedGatherArgs::kMaxParts,
                   "lsa ll counted gather: " << a.parts << " parts, outside 1.."
                                             << LlCountedGatherArgs::kMaxParts);
  for (int k = 0; k < a.parts; ++k) {
    const LlCountedGatherArgs::Part& p = a.part[k];
    SYMMCOMM_EXPECTS(p.row_bytes > 0 && p.src != nullptr && p.recv != nullptr,
                     "lsa ll counted gather: part " << k << " has no rows or no buffers");
  }
  SYMMCOMM_EXPECTS(
      a.count != nullptr && a.counts != nullptr && a.offsets != nullptr && a.overflow != nullptr,
      "lsa ll counted gather: count, counts, offsets and overflow must be device "
      "pointers");
  SYMMCOMM_EXPECTS((a.scale_src == nullptr) == (a.scale_recv == nullptr),
                   "lsa ll counted gather: a scale to send needs a place to land, and back");
  std::size_t const row_lines = ll_row_lines(a);
  SYMMCOMM_EXPECTS(a.capacity <= static_cast<std::size_t>(INT32_MAX) &&
                       ll_counted_lines(a.capacity, row_lines) <= kLlMaxBytesPerRank / kLlLineData,
                   "lsa ll counted gather: capacity "
                       << a.capacity << " rows of " << row_lines << " lines do not fit a slot of "
                       << kLlMaxBytesPerRank / kLlLineData << " lines");
#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
  // Rank-independent: the most lines a rank sends or receives.
  std::size_t const units = static_cast<std::size_t>(a.size) * a.capacity * row_lines + 2;
  unsigned const grid = grid_for_units(units, kLlGridCap);
  LlLaunch flags;
  flags.programmatic = programmatic_launch();
  launch(ll_counted_gather_kernel,
         resident_grid(reinterpret_cast<const void*>(ll_counted_gather_kernel), sm_share, grid),
         stream, flags, a);
#else
  (void)sm_share;
  (void)stream;
  SYMMCOMM_FAIL("lsa ll counted gather: this build has no NCCL device API (NCCL < 2.28 headers)");
#endif
}

void ll_counted_reduce(const LlCountedReduceArgs& a, int sm_share, cudaStream_t stream) {
  bool const nvfp4 = a.type == DataType::Nvfp4;
  SYMMCOMM_EXPECTS(a.type == DataType::Bf16 || nvfp4,
                   "lsa ll counted reduce: rows of " << to_string(a.type) << " (bf16 or nvfp4)");
  SYMMCOMM_EXPECTS(a.size >= 1 && a.size <= kMaxRanks && a.rank >= 0 && a.rank < a.size,
                   "lsa ll counted reduce: rank " << a.rank << " of " << a.size << " ranks");
  SYMMCOMM_EXPECTS(a.scratch != nullptr && a.calls != nullptr,
                   "lsa ll counted reduce: the communicator has no scratch window");
  SYMMCOMM_EXPECTS(a.send != nullptr && a.out != nullptr,
                   "lsa ll counted reduce: send or out is null");
  SYMMCOMM_EXPECTS(
      a.count != nullptr && a.counts != nullptr && a.offsets != nullptr && a.overflow != nullptr,
      "lsa ll counted reduce: count, counts, offsets and overflow must be device "
      "pointers");
  SYMMCOMM_EXPECTS(
      a.row_elements > 0 && (!nvfp4 || a.row_elements % 16 == 0),
      "lsa ll counted reduce: row_elements " << a.row_elements << " of " << to_string(a.type));
  SYMMCOMM_EXPECTS(!nvfp4 || (a.block_scales != nullptr && a.scale != nullptr),
                   "lsa ll counted reduce: nvfp4 without its scales");
  SYMMCOMM_EXPECTS(!nvfp4 || reinterpret_cast<std::uintptr_t>(a.out) % 16 == 0,
                   "lsa ll counted reduce: out is not 16-byte aligned");
  std::size_t const lines = ll_counted_reduce_lines(a.type, a.capacity, a.row_elements);
  SYMMCOMM_EXPECTS(a.capacity <= static_cast<std::size_t>(INT32_MAX) &&
                       lines <= kLlMaxBytesPerRank / kLlLineData,
                   "lsa ll counted reduce: capacity " << a.capacity << " rows need " << lines
                                                      << " lines, past a slot of "
                                                      << kLlMaxBytesPerRank / kLlLineData);
#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
  unsigned const grid = grid_for_units(lines, kLlGridCap);
  LlLaunch flags;
  flags.programmatic = programmatic_launch();
  auto const go = [&](auto kernel) {
    launch(kernel, resident_grid(reinterpret_cast<const void*>(kernel), sm_share, grid), stream,
           flags, a);
  };
  nvfp4 ? go(ll_counted_reduce_kernel<true>) : go(ll_counted_reduce_kernel<false>);
#else
  (void)sm_share;
  (void)stream;
  SYMMCOMM_FAIL("lsa ll counted reduce: this build has no NCCL device API (NCCL < 2.28 headers)");
#endif
}

}  // namespace symmcomm::detail::lsa
