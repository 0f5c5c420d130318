// The LSA kernels over virtual ranks (lsa_loopback.hpp): the production launch bodies
// (kernels/lsa_launchers.cuh, kernels/lsa_device_counts_reduce.cuh, kernels/moe_launchers.cuh)
// instantiated for LoopbackPeers, whose checks and policy (lsa_loopback_policy.cuh) the bodies
// find by argument-dependent lookup.

#include "core/kernel_preload.hpp"
#include "kernels/lsa_device_counts_reduce.cuh"
#include "kernels/lsa_launchers.cuh"
#include "kernels/moe_launchers.cuh"
#include "lsa_loopback.hpp"
#include "lsa_loopback_policy.cuh"

namespace symmcomm::detail::lsa {
namespace {

// Loaded with the library's modules when a communicator is made (core/kernel_preload.hpp).
[[maybe_unused]] const bool kModuleRegistered = register_kernel_module(
    reinterpret_cast<const void*>(&gather_kernel<LoopbackPolicy>), "testing/src/lsa_loopback.cu");

}  // namespace

void gather(const LoopbackPeers& peers, const GatherArgs& args, cudaStream_t stream) {
  launch_gather(peers, args, stream);
}

void reduce(const LoopbackPeers& peers, const ReduceArgs& args, cudaStream_t stream) {
  launch_reduce(peers, args, stream);
}

void quantize_gather(const LoopbackPeers& peers, const QuantizeGatherArgs& args,
                     cudaStream_t stream) {
  launch_quantize_gather(peers, args, stream);
}

void device_counts_gather(const LoopbackPeers& peers, const DeviceCountsGatherArgs& args,
                          cudaStream_t stream) {
  launch_device_counts_gather(peers, args, stream);
}

void device_counts_reduce(const LoopbackPeers& peers, const DeviceCountsReduceArgs& args,
                          cudaStream_t stream) {
  launch_device_counts_reduce(peers, args, stream);
}

void moe_counts(const LoopbackPeers& peers, const MoeCountsArgs& args, cudaStream_t stream) {
  launch_moe_counts(peers, args, stream);
}

void moe_rows(const LoopbackPeers& peers, const MoeRowsArgs& args, cudaStream_t stream) {
  launch_moe_rows(peers, args, stream);
}

void moe_send_back(const LoopbackPeers& peers, const MoeSendBackArgs& args, cudaStream_t stream) {
  launch_moe_send_back(peers, args, stream);
}

void moe_pull(const LoopbackPeers& peers, const MoePullArgs& args, cudaStream_t stream) {
  launch_moe_pull(peers, args, stream);
}

}  // namespace symmcomm::detail::lsa
