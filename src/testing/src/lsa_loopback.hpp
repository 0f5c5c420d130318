#pragma once
// Testing library, private: symmcomm's LSA kernels (kernels/lsa.hpp) over N virtual ranks on one
// GPU. A LoopbackPeers names virtual rank `rank` of `size` and, per slot, every virtual rank's
// buffer; each launch runs the production kernel code with the loopback policy
// (lsa_loopback_policy.cuh) once for that rank, and callers launch every rank in rank order on
// one stream (the barriers are no-ops: stream order already separates the ranks). The overloads
// sit beside the production ones of kernels/lsa.hpp, which the shipped libraries alone define.

#include <cuda_runtime_api.h>

#include "kernels/lsa.hpp"
#include "kernels/moe.hpp"
#include "symmcomm/limits.hpp"

namespace symmcomm::detail::lsa {

/// Virtual ranks a loopback launch supports.
inline constexpr int kMaxLoopbackRanks = symmcomm::kMaxLoopbackRanks;

/// Virtual rank `rank` of `size` on one GPU; base[slot][r] is virtual rank r's buffer of that
/// slot (filled in by the caller).
struct LoopbackPeers {
  LoopbackPeers(int rank_, int size_) : rank(rank_), size(size_) {}

  int rank = 0;
  int size = 1;
  void* base[kSlots][kMaxLoopbackRanks] = {};
  /// No grid cap: the ranks run one after another, each with the whole GPU.
  static constexpr LaunchShare share{};
  /// Grid caps scale with the current device's SMs.
  static constexpr int gpu_sms = 0;
};

/// The kernels of kernels/lsa.hpp for one virtual rank (arguments as there).
void gather(const LoopbackPeers& peers, const GatherArgs& args, cudaStream_t stream);
void reduce(const LoopbackPeers& peers, const ReduceArgs& args, cudaStream_t stream);
void quantize_gather(const LoopbackPeers& peers, const QuantizeGatherArgs& args,
                     cudaStream_t stream);
void device_counts_gather(const LoopbackPeers& peers, const DeviceCountsGatherArgs& args,
                          cudaStream_t stream);
void device_counts_reduce(const LoopbackPeers& peers, const DeviceCountsReduceArgs& args,
                          cudaStream_t stream);
/// The MoE kernels of kernels/moe.hpp for one virtual rank (slot 0: every rank's group window;
/// the counts launch in its two phases, every rank's phase 1 before any rank's phase 2).
void moe_counts(const LoopbackPeers& peers, const MoeCountsArgs& args, cudaStream_t stream);
void moe_rows(const LoopbackPeers& peers, const MoeRowsArgs& args, cudaStream_t stream);
void moe_send_back(const LoopbackPeers& peers, const MoeSendBackArgs& args, cudaStream_t stream);
void moe_pull(const LoopbackPeers& peers, const MoePullArgs& args, cudaStream_t stream);

}  // namespace symmcomm::detail::lsa
