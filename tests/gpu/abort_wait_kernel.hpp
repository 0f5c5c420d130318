#pragma once
// A kernel that waits, as symmcomm's waiting kernels do (src/kernels/lsa_policy.cuh), for a
// flag that may never come, polling an abort word every kAbortPolls spins.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace symmcomm::test {

/// Launches one thread that spins until *flag != 0 (then writes 1 to *outcome) or until
/// `abort_word` is raised (then writes 2). `outcome` is device memory.
void launch_wait_for_flag(const std::uint32_t* flag, const std::uint32_t* abort_word, int* outcome,
                          cudaStream_t stream);

}  // namespace symmcomm::test
