// symmcomm's small-message all-gather and reduce-scatter: flags in the data instead of
// barriers (lsa_ll.hpp; the line protocol: lsa_ll_lines.cuh).

#include "core/kernel_preload.hpp"
#include "lsa_launch.cuh"
#include "lsa_ll.hpp"
#include "lsa_ll_lines.cuh"
#include "lsa_reduce.cuh"

#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
#include <nccl_device.h>
#endif

namespace symmcomm::detail::lsa {
namespace {

#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
// The segment holding line `line` of a rank's slot, and the line's byte offset in it.
__device__ __forceinline__ const LlSegment& segment_of(const LlGatherArgs& a, std::size_t line,
                                                       std::size_t& offset) {
  int s = 0;
  while (s + 1 < a.segments && line >= a.segment[s + 1].first_line) ++s;
  offset = (line - a.segment[s].first_line) * kLlLineData;
  return a.segment[s];
}

// Ranks whose lines a reducing thread loads at once before completing them in rank order: one
// round trip for the batch instead of one per line.
constexpr int kLlRankBatch = 4;

// Lines a thread sends, loaded before the call's number is known (their loads, the counter's
// and the peers' window lookups are then one wait instead of three).
constexpr int kLlSendUnroll = 2;

// Elements one thread of the quantized push reduce-scatter sums: half an NVFP4 block (one word of
// codes), a whole line of FP8. Eight bf16 or fp32 outputs are whole 16-byte stores.
constexpr int kLlPartElems = 8;

__global__ void __launch_bounds__(kThreads)
    ll_gather_kernel(const LlLaunch launch_flags, const __grid_constant__ LlGatherArgs a) {
  programmatic_wait(launch_flags);
  __shared__ std::uint32_t call;
  __shared__ char* slots[kMaxRanks];  // each rank's scratch (first half)
  int const n = a.size;
  int const me = a.rank;
  std::size_t const stride = grid_threads();
  std::size_t const first = global_thread();
  open_call(a.calls, a.scratch, n, call, slots);
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
  open_call(a.calls, a.scratch, n, call, slots);
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
  for (std::size_t line = receive_start(launch_flags); line < lines && !aborted; line += stride) {
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
// (8 per line), then the sender's scale. One thread per 8 elements of this rank's shard sums them
// over every rank in rank order with the pull kernel's arithmetic (accumulate(),
// accumulate_e2m1x8()), so both kernels agree bit for bit.
template <bool kNvfp4>
struct QuantizedSlot {
  static constexpr int kElems = kNvfp4 ? 16 : 8;        // elements per item (line of codes)
  static constexpr int kParts = kElems / kLlPartElems;  // parts (threads) per item
  std::size_t items, code_bytes, lines;
  __device__ explicit QuantizedSlot(std::size_t shard)
      : items(shard / kElems),
        code_bytes(items * kLlLineData),
        lines(items + (kNvfp4 ? (items + kLlLineData - 1) / kLlLineData : 0) + 1) {}
  __device__ std::size_t scale_line(std::size_t item) const { return items + item / kLlLineData; }
  __device__ std::size_t global_line() const { return lines - 1; }
};

// Line `line` of this rank's contribution to peer p: codes, block scale codes, or the scale.
template <bool kNvfp4>
__device__ __forceinline__ uint2 quantized_line(const LlReduceArgs& a,
                                                const QuantizedSlot<kNvfp4>& slot, int p,
                                                std::size_t line, float my_scale) {
  if (line < slot.items) {
    const auto* codes = static_cast<const unsigned char*>(a.send);
    return read_raw(codes + static_cast<std::size_t>(p) * slot.code_bytes, slot.code_bytes,
                    line * kLlLineData);
  }
  if (line != slot.global_line()) {
    return read_raw(a.block_scales + static_cast<std::size_t>(p) * slot.items, slot.items,
                    (line - slot.items) * kLlLineData);
  }
  return make_uint2(__float_as_uint(my_scale), 0u);
}

// acc += part `h` of one rank's item: its 8 bytes of codes `d`, its block scale code (NVFP4) and
// its scale `s`, with the pull kernel's arithmetic.
template <bool kNvfp4>
__device__ __forceinline__ void add_quantized_part(uint2 d, unsigned scale_code, float s, int h,
                                                   Fp8Format format, float (&acc)[kLlPartElems]) {
  if constexpr (kNvfp4) {
    // One word of the block: its block scale times 2^14 / global scale (the decoder's values are
    // 2^-14 scaled).
    float scale[1];
    block_scales<1>(static_cast<std::uint16_t>(scale_code), scale);
    accumulate_e2m1x8(h == 0 ? d.x : d.y, scale[0] * (16384.0f / s), acc);
  } else {
    RawItem<false, 8> raw;
    raw.w[0] = d.x;
    raw.w[1] = d.y;
    accumulate<false, 8>(raw, s, format, acc);
  }
}

// Part `h` of item `i` of this rank's shard summed over every rank in rank order into `acc`
// (peers' lines from `mine`, this rank's own from its send); false when the communicator was
// aborted while it waited.
template <bool kNvfp4>
__device__ __forceinline__ bool sum_quantized_part(const LlReduceArgs& a,
                                                   const QuantizedSlot<kNvfp4>& slot,
                                                   const char* mine, std::uint32_t flag,
                                                   float my_scale, std::size_t i, int h,
                                                   float (&acc)[kLlPartElems]) {
  int const n = a.size;
  int const me = a.rank;
  Fp8Format const format = fp8_format_of(a.type);
  std::size_t const scale_line = slot.scale_line(i);
  for (int r0 = 0; r0 < n; r0 += kLlRankBatch) {
    // Codes, block scales (NVFP4) and scale of the batch's ranks, loaded at once.
    uint4 dv[kLlRankBatch], sv[kLlRankBatch], gv[kLlRankBatch];
#pragma unroll
    for (int k = 0; k < kLlRankBatch; ++k) {
      int const r = r0 + k;
      if (r >= n || r == me) continue;
      dv[k] = load_line(line_at(mine, r, i));
      if constexpr (kNvfp4) sv[k] = load_line(line_at(mine, r, scale_line));
      gv[k] = load_line(line_at(mine, r, slot.global_line()));
    }
#pragma unroll
    for (int k = 0; k < kLlRankBatch; ++k) {
      int const r = r0 + k;
      if (r >= n) break;
      if (r == me) {
        unsigned const code =
            kNvfp4 ? a.block_scales[static_cast<std::size_t>(me) * slot.items + i] : 0u;
        add_quantized_part<kNvfp4>(quantized_line(a, slot, me, i, my_scale), code, my_scale, h,
                                   format, acc);
        continue;
      }
      if (!complete_line(line_at(mine, r, i), dv[k], flag, a.abort_word) ||
          (kNvfp4 && !complete_line(line_at(mine, r, scale_line), sv[k], flag, a.abort_word)) ||
          !complete_line(line_at(mine, r, slot.global_line()), gv[k], flag, a.abort_word)) {
        return false;
      }
      unsigned code = 0;
      if constexpr (kNvfp4) {
        // Byte i % 8 of the scale line's 8 data bytes (x holds bytes 0-3, z bytes 4-7).
        unsigned const word = (i % kLlLineData) < 4 ? sv[k].x : sv[k].z;
        code = (word >> (8 * (i % 4))) & 0xFFu;
      }
      add_quantized_part<kNvfp4>(make_uint2(dv[k].x, dv[k].z), code, __uint_as_float(gv[k].x), h,
                                 format, acc);
    }
  }
  return true;
}

template <bool kNvfp4, class Out>
__global__ void __launch_bounds__(kThreads)
    ll_quantized_reduce_scatter_kernel(const LlLaunch launch_flags,
                                       const __grid_constant__ LlReduceArgs a) {
  using Slot = QuantizedSlot<kNvfp4>;
  programmatic_wait(launch_flags);
  __shared__ std::uint32_t call;
  __shared__ char* slots[kMaxRanks];
  int const n = a.size;
  int const me = a.rank;
  std::size_t const stride = grid_threads();
  Slot const slot(a.shard);
  open_call(a.calls, a.scratch, n, call, slots);
  float const my_scale = *a.scale;
  __syncthreads();
  std::uint32_t const c = call;
  std::uint32_t const flag = call_flag(c);
  std::size_t const half = call_half(c, n);
  // Send: every line of this rank's contribution to every peer p, into its slot of p's scratch.
  std::size_t const sends = static_cast<std::size_t>(n - 1) * slot.lines;
  for (std::size_t i = global_thread(); i < sends; i += stride) {
    int const p = rotated(me, static_cast<int>(i / slot.lines) + 1, n);
    std::size_t const line = i % slot.lines;
    uint2 const d = quantized_line(a, slot, p, line, my_scale);
    store_line(slots[p] + half + static_cast<std::size_t>(me) * kLlSlotBytes + line * kLlLineBytes,
               make_uint4(d.x, flag, d.y, flag));
  }
  // Receive: this rank's shard in parts of 8 elements (half an NVFP4 block, one FP8 line), each
  // summed in fp32 and rounded once. By default parts go to CTAs in turn (receive_start), so
  // that a small shard's decoding spreads over every CTA's SM instead of filling the first CTA.
  const char* const mine = slots[me] + half;
  std::size_t const parts = slot.items * Slot::kParts;
  for (std::size_t u = receive_start(launch_flags); u < parts; u += stride) {
    std::size_t const i = u / Slot::kParts;  // the item holding the part
    int const h = static_cast<int>(u % Slot::kParts);
    float acc[kLlPartElems] = {};
    if (!sum_quantized_part(a, slot, mine, flag, my_scale, i, h, acc)) break;  // aborted
    store_floats<kLlPartElems>(static_cast<Out*>(a.out), i * Slot::kElems + h * kLlPartElems, acc);
  }
  advance_call(a.calls, c);
  programmatic_release(launch_flags);
}

#endif

// On unless the latency benchmark turns it off: SYMMCOMM_LSA_LL=0 acts earlier, at communicator
// creation (no rank makes the scratch, so nothing fits).
std::atomic<bool>& ll_setting() {
  static std::atomic<bool> on{true};
  return on;
}

// Each kernel's own receive mapping unless the latency benchmark sets one for both.
std::atomic<int>& receive_setting() {
  static std::atomic<int> mapping{static_cast<int>(LlReceive::KernelDefault)};
  return mapping;
}

// Loaded with the rest of this module when a communicator is made (core/kernel_preload.hpp).
[[maybe_unused]] const bool kModuleRegistered =
    register_kernel_module(reinterpret_cast<const void*>(&ll_gather_kernel), "kernels/lsa_ll.cu");

}  // namespace

void set_ll_gather(bool on) noexcept {
  ll_setting().store(on, std::memory_order_relaxed);
}
bool ll_gather_enabled() noexcept {
  return ll_setting().load(std::memory_order_relaxed);
}

void set_ll_receive(LlReceive mapping) noexcept {
  receive_setting().store(static_cast<int>(mapping), std::memory_order_relaxed);
}
LlReceive ll_receive() noexcept {
  return static_cast<LlReceive>(receive_setting().load(std::memory_order_relaxed));
}

void ll_gather(const LlGatherArgs& a, LaunchShare share, cudaStream_t stream) {
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
  launch_resident(ll_gather_kernel, share, grid, stream, flags, a);
#else
  (void)a;
  (void)share;
  (void)stream;
  SYMMCOMM_FAIL("lsa ll gather: this build has no NCCL device API (NCCL < 2.28 headers)");
#endif
}

void ll_reduce_scatter(const LlReduceArgs& a, LaunchShare share, cudaStream_t stream) {
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
  LlReceive const mapping = ll_receive();
  flags.spread = quantized ? mapping != LlReceive::InOrder : mapping == LlReceive::Spread;
  auto const go = [&](auto kernel) { launch_resident(kernel, share, grid, stream, flags, a); };
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
  (void)share;
  (void)stream;
  SYMMCOMM_FAIL("lsa ll reduce-scatter: this build has no NCCL device API (NCCL < 2.28 headers)");
#endif
}

}  // namespace symmcomm::detail::lsa
