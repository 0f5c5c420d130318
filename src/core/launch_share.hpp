#pragma once
// Private: how much of its GPU a rank's launches whose CTAs spin on other ranks (the LSA barriers)
// may take, and the grid cap that follows. Plain host arithmetic: CommState carries the share, the
// LSA launchers turn it into a grid (kernels/lsa_launch.cuh).

namespace symmcomm::detail {

/// The part of its GPU a rank's spinning launches may fill, agreed over the communicator at
/// creation (comm/gpu_share.hpp), so the same on every rank.
struct LaunchShare {
  /// SMs per rank (Capabilities::lsa_sm_share): the GPU's SMs over the most ranks any GPU holds.
  /// 0: grids are not capped (no symmetric memory, or the testing library's virtual ranks, which
  /// run one after another).
  int sms = 0;
  /// Ranks in other processes share this rank's GPU (or some rank's): CUDA MPS may run their
  /// kernels beside ours, so spinning CTAs must leave SMs free for them (resident_cap).
  bool other_processes = false;
};

/// The most CTAs one launch of a kernel whose CTAs spin on other ranks may take: `per_sm` of them
/// resident on each of the rank's `share.sms` SMs (> 0), out of the GPU's `gpu_sms`. That lets
/// every rank's CTAs be resident at once, which is all the barriers need while nothing else runs.
/// Where ranks in other processes share the GPU (CUDA MPS runs their kernels at once), another
/// rank may still be in a kernel that needs a whole SM (a GEMM's shared memory) before it reaches
/// its collective: CTAs spinning on every SM would keep it from ever finishing. There each rank
/// takes at most one CTA per two SMs of its share, so the ranks' CTAs together leave at least half
/// the SMs free however the GPU places them. `programmatic` (dependent launch) on a shared GPU
/// halves the cap again (kernels/lsa_launch.cuh).
inline unsigned resident_cap(int per_sm, LaunchShare share, int gpu_sms, bool programmatic) {
  bool const shared = share.sms < gpu_sms;
  unsigned cap = shared && share.other_processes ? static_cast<unsigned>(share.sms / 2)
                                                 : static_cast<unsigned>(per_sm < 1 ? 1 : per_sm) *
                                                       static_cast<unsigned>(share.sms);
  if (programmatic && shared) cap /= 2;
  return cap < 1 ? 1 : cap;
}

}  // namespace symmcomm::detail
