// symmcomm's one-launch BF16 and NVFP4 -> BF16 reduce-scatters with this rank's shard size on
// the device (lsa.hpp, CountedReduceArgs; device_counts.hpp's reduce_scatterv on the LSA path),
// for production peers (lsa_counted_reduce.cuh).

#include "core/kernel_preload.hpp"
#include "lsa.hpp"
#include "lsa_counted_reduce.cuh"
#include "lsa_launch.cuh"
#include "lsa_policy.cuh"

namespace symmcomm::detail::lsa {
namespace {

#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
// Loaded with the rest of this module when a communicator is made (core/kernel_preload.hpp).
[[maybe_unused]] const bool kModuleRegistered =
    register_kernel_module(reinterpret_cast<const void*>(&counted_reduce_kernel<LsaPolicy>),
                           "kernels/lsa_counted_reduce.cu");
#endif

}  // namespace

void counted_reduce(const Peers& peers, const CountedReduceArgs& args, cudaStream_t stream) {
  launch_counted_reduce(peers, args, stream);
}

}  // namespace symmcomm::detail::lsa
