#pragma once
// Private: the peer policies symmcomm's LSA kernels are written against (see lsa.hpp; the
// testing library adds its loopback policy, src/testing/src/lsa_loopback_policy.cuh), and the
// thread-index helpers they share. A policy answers rank(), size(), ptr(SymRef, peer) and
// barrier() (false, in every thread of the CTA, when the communicator was aborted while it
// waited: the kernel then leaves); the kernels know nothing else about where peers' buffers
// live. kHeavyBarrier:
// whether barrier() needs registers enough to change a kernel's launch shape.

#include <cstddef>
#include <cstdint>

#include "lsa.hpp"

#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
#include <nccl_device.h>
#endif

namespace symmcomm::detail::lsa {

// ---- abort ----------------------------------------------------------------------------------

// Spins between two reads of the abort word (comm/abort_word.hpp): a read crosses to host
// memory, rare against a spin's local loads yet within microseconds of an abort.
inline constexpr unsigned kAbortPolls = 1024;

// Whether Communicator::abort() raised `word` (null: no word, never).
__device__ __forceinline__ bool abort_raised(const std::uint32_t* word) {
  return word != nullptr && *static_cast<const volatile std::uint32_t*>(word) != 0;
}

// ---- peer policies --------------------------------------------------------------------------

// The fallback's local reduction: "peers" are the shards of a ShardTable (slot 0 =
// data, 1 = block scales, 2 = scale), already in local memory; nothing to wait for. Used by
// the reduce kernel only, which needs no rank().
struct ShardTablePolicy {
  static constexpr bool kHeavyBarrier = false;
  ShardTable table;
  bool programmatic = false;  // never: a plain launch
  __device__ int size() const { return table.ranks; }
  __device__ char* ptr(SymRef ref, int peer) const {
    const void* base = ref.slot == 0   ? static_cast<const void*>(table.data[peer])
                       : ref.slot == 1 ? static_cast<const void*>(table.block_scales[peer])
                                       : static_cast<const void*>(table.scale[peer]);
    return const_cast<char*>(static_cast<const char*>(base)) + ref.offset;
  }
  __device__ bool barrier() const { return true; }
};

#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
// Production: peers of the LSA team through NCCL windows; CTA i meets CTA i of every peer.
struct LsaPolicy {
  static constexpr bool kHeavyBarrier = true;  // an NCCL LSA barrier session, many registers
  bool programmatic = false;  // launched with programmatic dependent launch (lsa.hpp)
  ncclDevComm comm;
  ncclWindow_t window[kSlots];
  const std::uint32_t* abort_word;  // the communicator's (comm/abort_word.hpp)
  __device__ int rank() const { return comm.lsaRank; }
  __device__ int size() const { return comm.lsaSize; }
  __device__ char* ptr(SymRef ref, int peer) const {
    return static_cast<char*>(ncclGetLsaPointer(window[ref.slot], ref.offset, peer));
  }
  // NCCL's LSA barrier (barrier blockIdx.x of the team) with its wait replaced: NCCL's arrive,
  // then the wait NCCL's unicast barrier does on the same inboxes and epoch (public members of
  // its session, the same in 2.28 and 2.30), which also leaves when symmcomm's abort word is
  // raised - NCCL's own wait polls only its device communicator's abort flag, which 2.28 lacks
  // and 2.30 leaves null. An aborted barrier leaves the epoch advanced: the communicator is
  // not used again.
  __device__ bool aborted() const { return abort_raised(abort_word); }
  __device__ bool barrier() const {
    ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), comm, ncclTeamTagLsa(), blockIdx.x);
    bar.arrive(ncclCoopCta(), cuda::memory_order_acq_rel);
    bool aborted = false;
    int const n = bar.team.nRanks;
    int const me = bar.team.rank;
    for (int i = static_cast<int>(threadIdx.x); i < n - 1 && !aborted;
         i += static_cast<int>(blockDim.x)) {
      int const peer = i + (me <= i ? 1 : 0);
      cuda::atomic_ref<std::uint32_t> inbox(*bar.ucInbox(me, peer));
      for (unsigned polls = 1;; ++polls) {
        std::uint32_t const got = inbox.load(cuda::memory_order_acquire);
        if (got - (bar.epoch + 1) <= (~std::uint32_t{0} >> 1)) break;
        if (polls % kAbortPolls == 0 && abort_raised(abort_word)) {
          aborted = true;
          break;
        }
      }
    }
    bar.epoch += 1;
    return __syncthreads_or(aborted ? 1 : 0) == 0;
  }
};
#endif

// ---- programmatic dependent launch (lsa.hpp, set_programmatic_launch) ------------------------

// First statement of every LSA kernel: with PDL the kernel may start while the previous kernel
// on its stream still runs; it waits here for that kernel's completion (and memory) before it
// reads any input or meets its peers, so the opening barrier keeps its meaning (every rank's
// earlier work is done). A no-op for a plain launch.
template <class P>
__device__ __forceinline__ void programmatic_wait(const P& peers) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (peers.programmatic) asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Last statement, after the closing barrier: lets the next kernel on the stream launch while
// this grid's CTAs leave (it still waits for this grid's completion before reading anything).
template <class P>
__device__ __forceinline__ void programmatic_release(const P& peers) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (peers.programmatic) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ std::size_t global_thread() {
  return blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
}
__device__ __forceinline__ std::size_t grid_threads() {
  return static_cast<std::size_t>(gridDim.x) * blockDim.x;
}
// Peers visited starting after this rank, so ranks spread their traffic over the links.
__device__ __forceinline__ int rotated(int me, int j, int n) {
  int const p = me + j;
  return p >= n ? p - n : p;
}

}  // namespace symmcomm::detail::lsa
