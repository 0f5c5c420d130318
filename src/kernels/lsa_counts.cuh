#pragma once
// Private: the count exchange the device-count LSA kernels share (device_counts_gather in lsa.cu,
// device_counts_reduce in lsa_device_counts_reduce.cu; lsa.hpp describes both).

#include <cstddef>
#include <cstdint>

#include "lsa.hpp"
#include "lsa_policy.cuh"

namespace symmcomm::detail::lsa {

// After the opening barrier: every CTA stores this rank's count (raw, from local `a.count`) into
// slot `a.counts` of every peer at this rank's index (CTA i of a peer reads it after meeting CTA i
// of this rank), then meets the peers again, so that every array holds every count. Loopback
// phase 1 ends the kernel there (returns false, dependents released); phase 2 skips it (the
// counts are in). Returns whether the kernel goes on.
template <class P>
__device__ __forceinline__ bool exchange_counts(const P& peers, const DeviceCountsArgs& a) {
  if (a.phase == 2) return true;
  int const n = peers.size();
  int const me = peers.rank();
  std::int32_t const raw = *a.count;
  for (int p = static_cast<int>(threadIdx.x); p < n; p += static_cast<int>(blockDim.x)) {
    reinterpret_cast<std::int32_t*>(peers.ptr(a.counts, p))[me] = raw;
  }
  if (!peers.barrier()) return false;  // aborted
  if (a.phase == 1) {
    programmatic_release(peers);
    return false;
  }
  return true;
}

// Where this rank's rows are among everyone's: its first row, its row count, the total.
struct CountPrefix {
  std::int32_t first, mine, total;
};

// Thread 0 of every CTA (the others return at once): the prefix of the counts in this rank's
// array, each clamped to 0..capacity, into `out` (shared: read it after __syncthreads). CTA 0
// writes the prefix to local `a.offsets` and sets local `a.overflow` to 1 when a count was
// outside.
template <class P>
__device__ __forceinline__ void count_prefix(const P& peers, const DeviceCountsArgs& a,
                                             CountPrefix& out) {
  if (threadIdx.x != 0) return;
  int const n = peers.size();
  int const me = peers.rank();
  const volatile std::int32_t* all = reinterpret_cast<const std::int32_t*>(peers.ptr(a.counts, me));
  auto const cap = static_cast<std::int32_t>(a.capacity);
  std::int32_t sum = 0;
  bool over = false;
  for (int q = 0; q < n; ++q) {
    std::int32_t c = all[q];
    if (c < 0 || c > cap) {
      over = true;
      c = c < 0 ? 0 : cap;
    }
    if (blockIdx.x == 0) a.offsets[q] = sum;
    if (q == me) {
      out.first = sum;
      out.mine = c;
    }
    sum += c;
  }
  out.total = sum;
  if (blockIdx.x == 0 && over) *a.overflow = 1;
}

}  // namespace symmcomm::detail::lsa
