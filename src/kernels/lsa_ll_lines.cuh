#pragma once
// Private: the line protocol symmcomm's scratch-window kernels share (lsa_ll.cu: the small
// all-gather and the push reduce-scatter; lsa_ll_device_counts.cu and
// lsa_ll_device_counts_reduce.cu: the device-count calls with counts in the lines). A 16-byte line
// carries 8 data bytes and the call's flag twice; lsa_ll.hpp says why no barrier is needed and how
// the two halves of the scratch are reused.

#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>

#include "lsa_launch.cuh"
#include "lsa_ll.hpp"

#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
#include <nccl_device.h>
#endif

namespace symmcomm::detail::lsa {

// Grid cap of the kernels: enough threads that every peer's lines are read at once, up to a
// few CTAs per rank.
inline constexpr unsigned kLlGridCap = 16;

#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
// The launch's policy: programmatic dependent launch (launch() and programmatic_wait() read
// `programmatic`), and how a push reduce-scatter deals its receive work to threads (`spread`:
// consecutive units to CTAs in turn, receive_start()).
struct LlLaunch {
  bool programmatic = false;
  bool spread = false;
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

// This thread's place when consecutive work units go to CTAs in turn (unit u to CTA u % grid):
// a loop from here with stride grid_threads() covers every unit once, and a few units' work
// spreads over every CTA's SM instead of filling the first CTA.
__device__ __forceinline__ std::size_t spread_thread() {
  return static_cast<std::size_t>(threadIdx.x) * gridDim.x + blockIdx.x;
}

// Where this thread's receive loop (stride grid_threads()) starts: spread over CTAs in turn, or
// consecutive units filling CTAs in order.
__device__ __forceinline__ std::size_t receive_start(const LlLaunch& flags) {
  return flags.spread ? spread_thread() : global_thread();
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

// A kernel's start: thread 0 reads the call counter into `call` and the CTA's threads fetch every
// rank's scratch (first half) into `slots`; the caller synchronises before reading them.
__device__ __forceinline__ void open_call(const std::uint32_t* calls, ncclWindow_t scratch, int n,
                                          std::uint32_t& call, char* (&slots)[kMaxRanks]) {
  if (threadIdx.x == 0) call = calls[0];
  for (int p = static_cast<int>(threadIdx.x); p < n; p += static_cast<int>(blockDim.x)) {
    slots[p] = static_cast<char*>(ncclGetLsaPointer(scratch, 0, p));
  }
}
#endif

}  // namespace symmcomm::detail::lsa
