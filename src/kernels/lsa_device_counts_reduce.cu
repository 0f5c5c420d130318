// symmcomm's one-launch BF16 and NVFP4 -> BF16 reduce-scatters with this rank's shard size on
// the device (lsa.hpp, DeviceCountsReduceArgs; device_counts.hpp's reduce_scatterv on the LSA
// path), for production peers (lsa_device_counts_reduce.cuh).

#include "core/kernel_preload.hpp"
#include "lsa.hpp"
#include "lsa_device_counts_reduce.cuh"
#include "lsa_launch.cuh"
#include "lsa_policy.cuh"

namespace symmcomm::detail::lsa {
namespace {

#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
// Loaded with the rest of this module when a communicator is made (core/kernel_preload.hpp).
[[maybe_unused]] const bool kModuleRegistered =
    register_kernel_module(reinterpret_cast<const void*>(&device_counts_reduce_kernel<LsaPolicy>),
                           "kernels/lsa_device_counts_reduce.cu");
#endif

}  // namespace

void device_counts_reduce(const Peers& peers, const DeviceCountsReduceArgs& args,
                          cudaStream_t stream) {
  launch_device_counts_reduce(peers, args, stream);
}

}  // namespace symmcomm::detail::lsa
