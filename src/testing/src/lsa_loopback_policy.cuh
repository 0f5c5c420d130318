#pragma once
// Testing library, private: the loopback peer policy (N virtual ranks on one GPU, lsa.hpp) and
// the functions the launch bodies (kernels/lsa_launchers.cuh) ask of a peer description, for
// LoopbackPeers: its argument checks, address bits and policy.

#include <cstdint>

#include "kernels/lsa_launch.cuh"
#include "kernels/lsa_policy.cuh"
#include "lsa_loopback.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm::detail::lsa {

// N virtual ranks on one GPU. Launched once per virtual rank in rank order on one stream, so
// the barriers have nothing to wait for: the previous rank's kernel has completed.
struct LoopbackPolicy {
  static constexpr bool kHeavyBarrier = false;  // (register budget, see ReduceShape)
  bool programmatic = false;  // launched with programmatic dependent launch (lsa.hpp)
  int my_rank;
  int my_size;
  char* base[kSlots][kMaxLoopbackRanks];
  __device__ int rank() const { return my_rank; }
  __device__ int size() const { return my_size; }
  __device__ char* ptr(SymRef ref, int peer) const { return base[ref.slot][peer] + ref.offset; }
  __device__ bool barrier() const { return true; }
  __device__ bool aborted() const { return false; }
};

// Bits that may be set in the address of `ref` on any virtual rank: the table's pointers.
inline std::uintptr_t address_bits(const LoopbackPeers& peers, SymRef ref) {
  std::uintptr_t bits = ref.offset;
  for (int r = 0; r < peers.size; ++r) {
    bits |= reinterpret_cast<std::uintptr_t>(peers.base[ref.slot][r]) + ref.offset;
  }
  return bits;
}

inline void check_peers(const LoopbackPeers& peers) {
  SYMMCOMM_EXPECTS(
      peers.size >= 1 && peers.size <= kMaxLoopbackRanks,
      "lsa kernel: " << peers.size << " ranks, outside 1.." << kMaxLoopbackRanks << " (loopback)");
  SYMMCOMM_EXPECTS(peers.rank >= 0 && peers.rank < peers.size,
                   "lsa kernel: rank " << peers.rank << " outside 0.." << peers.size - 1);
}

inline void check_ref(const LoopbackPeers& peers, SymRef ref, const char* name) {
  check_slot(ref, name);
  for (int r = 0; r < peers.size; ++r) {
    SYMMCOMM_EXPECTS(peers.base[ref.slot][r] != nullptr,
                     "lsa kernel: " << name << " of virtual rank " << r << " is null");
  }
}

// Runs `launch(policy)` with the loopback policy `peers` describes.
template <class Launch>
void with_policy(const LoopbackPeers& peers, Launch&& launch) {
  check_peers(peers);
  LoopbackPolicy p{};
  p.programmatic = programmatic_launch();
  p.my_rank = peers.rank;
  p.my_size = peers.size;
  for (int s = 0; s < kSlots; ++s) {
    for (int r = 0; r < kMaxLoopbackRanks; ++r) p.base[s][r] = static_cast<char*>(peers.base[s][r]);
  }
  launch(p);
}

}  // namespace symmcomm::detail::lsa
