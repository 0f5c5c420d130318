#pragma once
// Private: the host side every LSA entry point shares (lsa.cu): grid sizes, the resident-grid cap,
// argument checks, the launch with or without programmatic stream serialisation, and the policy
// a production launch runs with (NCCL's LSA windows). The testing library gives the same
// functions for its LoopbackPeers (src/testing/src/lsa_loopback_policy.cuh), which the launch
// bodies (lsa_launchers.cuh) find by argument-dependent lookup.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/launch.cuh"
#include "core/launch_share.hpp"
#include "lsa.hpp"
#include "lsa_policy.cuh"
#include "symmcomm/error.hpp"
#include "symmcomm/logging.hpp"

namespace symmcomm::detail::lsa {

// The grid cap of `ctas_per_sm` CTAs per SM: of the fewest SMs of any rank's GPU (agreed, so the
// same on every rank).
template <class Desc>
unsigned grid_cap(const Desc& peers, int ctas_per_sm) {
  int const sms = peers.gpu_sms > 0 ? peers.gpu_sms : current_device_sm_count();
  return static_cast<unsigned>(ctas_per_sm) * static_cast<unsigned>(sms > 0 ? sms : 1);
}

// Same on every rank: a function of a rank-independent size and cap only.
inline unsigned grid_for_units(std::size_t units, unsigned cap) {
  std::size_t const ctas = (units + kThreads - 1) / kThreads;
  return static_cast<unsigned>(ctas < 1 ? 1 : (ctas > cap ? cap : ctas));
}

// The grid of a production launch: at most resident_cap() CTAs (core/launch_share.hpp), so that
// every CTA of every rank can be resident together (spinning barriers across ranks need that when
// other work shares the GPU), and where ranks in other processes share it, half its SMs stay free
// of them. `share` is the communicator's (CommState::lsa_launch_share()), agreed by all ranks, and
// the occupancy is the same for the same build on the same GPU model, which an LSA team has, so
// the grid stays rank-independent. With programmatic dependent launch (`programmatic`) on a GPU
// that ranks share, half of that: a rank's next kernel may already be resident, waiting in
// griddepcontrol.wait, while its current one runs (a CTA triggers its dependents as soon as one
// of its threads is done), and on a shared GPU those CTAs take SMs that another rank's current
// kernel still needs, whose missing CTAs would then never send. No share (share.sms 0: the
// testing library's virtual ranks) keeps `grid`.
inline unsigned resident_grid(const void* kernel, LaunchShare share, unsigned grid,
                              bool programmatic) {
  if (share.sms == 0) return grid;
  int const per_sm = std::max(1, resident_blocks_per_sm(kernel, kThreads));
  unsigned const cap = resident_cap(per_sm, share, current_device_sm_count(), programmatic);
  unsigned const g = grid < cap ? grid : cap;
  SYMMCOMM_LOG_DEBUG("lsa launch: "
                     << g << " CTAs (asked " << grid << ", " << per_sm << " resident per SM x "
                     << share.sms << " SMs"
                     << (share.other_processes ? ", GPU shared across processes" : "")
                     << (programmatic ? ", programmatic" : "") << ")");
  return g;
}

// Bits that may be set in the address of `ref` on any peer: the offset, windows being
// page-aligned.
inline std::uintptr_t address_bits(const Peers& /*peers*/, SymRef ref) {
  return ref.offset;
}

inline void check_peers(const Peers& peers) {
  SYMMCOMM_EXPECTS(peers.size >= 1 && peers.size <= kMaxRanks,
                   "lsa kernel: " << peers.size << " ranks, outside 1.." << kMaxRanks);
  SYMMCOMM_EXPECTS(peers.rank >= 0 && peers.rank < peers.size,
                   "lsa kernel: rank " << peers.rank << " outside 0.." << peers.size - 1);
  SYMMCOMM_EXPECTS(peers.dev_comm != nullptr,
                   "lsa kernel: the communicator has no device communicator");
}

inline void check_slot(SymRef ref, const char* name) {
  SYMMCOMM_EXPECTS(ref.slot >= 0 && ref.slot < kSlots,
                   "lsa kernel: " << name << " slot " << ref.slot << " outside 0.." << kSlots - 1);
}

inline void check_ref(const Peers& peers, SymRef ref, const char* name) {
  check_slot(ref, name);
  SYMMCOMM_EXPECTS(peers.window[ref.slot] != nullptr, "lsa kernel: " << name << " has no window");
}

// The count exchange's arguments (DeviceCountsArgs) of the device-count kernel `what` names, for
// either peer description.
template <class Desc>
void check_device_counts(const Desc& peers, const DeviceCountsArgs& a, const char* what) {
  SYMMCOMM_EXPECTS(a.count != nullptr && a.offsets != nullptr && a.overflow != nullptr,
                   what << ": count, offsets and overflow must be device pointers");
  SYMMCOMM_EXPECTS(a.phase >= 0 && a.phase <= 2, what << ": phase " << a.phase << " outside 0..2");
  SYMMCOMM_EXPECTS(a.capacity <= static_cast<std::size_t>(INT32_MAX),
                   what << ": capacity " << a.capacity << " exceeds int32 rows");
  check_ref(peers, a.counts, "counts.counts");
  SYMMCOMM_EXPECTS(address_bits(peers, a.counts) % 4 == 0, what << ": counts.counts at offset "
                                                                << a.counts.offset
                                                                << " is not 4-byte aligned");
}

// Programmatic dependent launch of the LSA kernels (lsa.hpp): off unless SYMMCOMM_LSA_PDL=1 or
// set_programmatic_launch(true).
inline std::atomic<bool>& programmatic_setting() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("SYMMCOMM_LSA_PDL");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }()};
  return on;
}

// Launches `kernel` over `grid` CTAs with the policy `p` first among `args`, with programmatic
// stream serialisation when the policy was made for it.
template <class P, class... Params, class... Args>
void launch(void (*kernel)(Params...), unsigned grid, cudaStream_t stream, const P& p,
            Args&&... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = p.programmatic ? 1 : 0;
  SYMMCOMM_CUDA_TRY(cudaLaunchKernelEx(&config, kernel, p, std::forward<Args>(args)...));
}

// launch() over the resident grid (resident_grid) of `grid` CTAs within `share`, halved where the
// policy launches programmatically on a shared GPU: every grid-sized LSA launch goes here.
template <class P, class... Params, class... Args>
void launch_resident(void (*kernel)(Params...), LaunchShare share, unsigned grid,
                     cudaStream_t stream, const P& p, Args&&... args) {
  launch(kernel, resident_grid(reinterpret_cast<const void*>(kernel), share, grid, p.programmatic),
         stream, p, std::forward<Args>(args)...);
}

// Runs `launch(policy)` with the production policy `peers` describes.
template <class Launch>
void with_policy(const Peers& peers, Launch&& launch) {
  check_peers(peers);
#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
  LsaPolicy p{};
  p.programmatic = programmatic_launch();
  p.comm = *static_cast<const ncclDevComm*>(peers.dev_comm);
  for (int s = 0; s < kSlots; ++s) p.window[s] = peers.window[s];
  p.abort_word = peers.abort_word;
  launch(p);
#else
  (void)launch;
  SYMMCOMM_FAIL("lsa kernel: this build has no NCCL device API (NCCL < 2.28 headers)");
#endif
}

}  // namespace symmcomm::detail::lsa
