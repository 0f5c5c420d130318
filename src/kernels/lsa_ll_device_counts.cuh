#pragma once
// Private: what symmcomm's counts-in-lines kernels share (the gather, lsa_ll_device_counts.cu; the
// reduce-scatter, lsa_ll_device_counts_reduce.cu): a CTA's shared view of the call and the counts,
// the counts' prefix, and the reading and writing of count lines.

#include "lsa_ll_device_counts.hpp"
#include "lsa_ll_lines.cuh"

namespace symmcomm::detail::lsa {

/// The checks both launchers share: the ranks, the scratch, the count pointers (`count` may be
/// null where `own_count` is false: a reduce-scatter whose counts were gathered before the call).
void check_ll_counts(const LlCountsArgs& a, bool own_count, const char* what);

#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
// A rank's count clamped to 0..cap.
__device__ __forceinline__ std::int32_t clamp_count(std::int32_t v, std::int32_t cap) {
  return v < 0 ? 0 : (v > cap ? cap : v);
}

// What a CTA of a device-count kernel shares: the call's number, every rank's scratch (first half),
// every rank's raw count and the prefix of the clamped counts (n + 1 entries), and whether a
// wait was cut by an abort.
struct DeviceCountsShared {
  std::uint32_t call;
  char* slots[kMaxRanks];
  std::int32_t raw[kMaxRanks];
  std::int32_t first_row[kMaxRanks + 1];
  int aborted;
};

// Thread 0 takes the prefix of every rank's raw count (sh.raw) clamped to 0..a.capacity into
// sh.first_row (n + 1 entries) and, in CTA 0, writes the offsets, the raw counts too when
// `write_counts`, and the overflow flag; then the CTA waits for it. Every thread calls it.
__device__ __forceinline__ void take_prefix(const LlCountsArgs& a, DeviceCountsShared& sh,
                                            bool write_counts) {
  if (threadIdx.x == 0) {
    auto const cap = static_cast<std::int32_t>(a.capacity);
    std::int32_t sum = 0;
    bool over = false;
    for (int q = 0; q < a.size; ++q) {
      std::int32_t const v = sh.raw[q];
      std::int32_t const clamped = clamp_count(v, cap);
      over = over || clamped != v;
      sh.first_row[q] = sum;
      if (blockIdx.x == 0) {
        if (write_counts) a.counts[q] = v;
        a.offsets[q] = sum;
      }
      sum += clamped;
    }
    sh.first_row[a.size] = sum;
    if (blockIdx.x == 0 && over) *a.overflow = 1;
  }
  __syncthreads();
}

// Where every rank's rows are, from every rank's count line (line 0 of its slot in `mine_half`;
// this rank's own count is `mine_raw`): one thread per rank in every CTA waits for its line, then
// thread 0 takes the prefix of the counts clamped to 0..a.capacity into sh.first_row and, in
// CTA 0, writes the raw counts, the offsets and the overflow flag of `a`. Returns false when the
// communicator was aborted while a thread waited. Every thread of the CTA calls it.
__device__ __forceinline__ bool read_counts(const LlCountsArgs& a, const char* mine_half,
                                            std::int32_t mine_raw, std::uint32_t flag,
                                            DeviceCountsShared& sh) {
  int const me = a.rank, n = a.size;
  if (threadIdx.x == 0) sh.aborted = 0;
  __syncthreads();
  for (int q = static_cast<int>(threadIdx.x); q < n; q += static_cast<int>(blockDim.x)) {
    std::int32_t v = mine_raw;
    uint2 d;
    if (q != me) {
      if (wait_line(mine_half, q, 0, flag, a.abort_word, d)) {
        v = static_cast<std::int32_t>(d.x);
      } else {
        sh.aborted = 1;
        v = 0;
      }
    }
    sh.raw[q] = v;
  }
  __syncthreads();
  take_prefix(a, sh, true);
  return sh.aborted == 0;
}

// Stores `d` as line `line` of this rank's slot (byte `at` of each scratch) in every peer's
// scratch.
__device__ __forceinline__ void store_to_peers(char* const (&slots)[kMaxRanks], int me, int n,
                                               std::size_t at, std::size_t line, uint2 d,
                                               std::uint32_t flag) {
  uint4 const packet = make_uint4(d.x, flag, d.y, flag);
  for (int j = 1; j < n; ++j)
    store_line(slots[rotated(me, j, n)] + at + line * kLlLineBytes, packet);
}
#endif

}  // namespace symmcomm::detail::lsa
