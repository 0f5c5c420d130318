// The waiting kernel of abort_wait_kernel.hpp, built on the library's own abort test
// (lsa::abort_raised, lsa::kAbortPolls) so that it polls exactly as the LSA kernels do.

#include "gpu/abort_wait_kernel.hpp"

#include "kernels/lsa_policy.cuh"
#include "symmcomm/error.hpp"

namespace symmcomm::test {
namespace {

__global__ void wait_for_flag_kernel(const std::uint32_t* flag, const std::uint32_t* abort_word,
                                     int* outcome) {
  for (unsigned polls = 1;; ++polls) {
    if (*static_cast<const volatile std::uint32_t*>(flag) != 0) {
      *outcome = 1;
      return;
    }
    if (polls % detail::lsa::kAbortPolls == 0 && detail::lsa::abort_raised(abort_word)) {
      *outcome = 2;
      return;
    }
  }
}

}  // namespace

void launch_wait_for_flag(const std::uint32_t* flag, const std::uint32_t* abort_word, int* outcome,
                          cudaStream_t stream) {
  wait_for_flag_kernel<<<1, 1, 0, stream>>>(flag, abort_word, outcome);
  SYMMCOMM_CUDA_TRY(cudaGetLastError());
}

}  // namespace symmcomm::test
