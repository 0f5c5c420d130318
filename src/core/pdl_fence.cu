// enqueue_pdl_fence (symmcomm/runtime.hpp): an empty kernel that fully orders the stream.

#include "core/kernel_preload.hpp"
#include "core/launch.cuh"
#include "symmcomm/error.hpp"
#include "symmcomm/runtime.hpp"

namespace symmcomm {
namespace {
// Launched without cudaLaunchAttributeProgrammaticStreamSerialization and never calling
// cudaTriggerProgrammaticLaunchCompletion: its dependents see only its completion.
__global__ void pdl_fence_kernel() {}
[[maybe_unused]] const bool kModuleRegistered = detail::register_kernel_module(
    reinterpret_cast<const void*>(&pdl_fence_kernel), "core/pdl_fence.cu");
}  // namespace

void enqueue_pdl_fence(cudaStream_t stream) {
  pdl_fence_kernel<<<1, 1, 0, stream>>>();
  SYMMCOMM_CHECK_LAUNCH();
}

}  // namespace symmcomm
