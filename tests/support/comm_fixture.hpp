#pragma once
// A process-wide one-rank communicator on GPU 0 for GPU tests (NCCL init is slow: make it once).

#include <gtest/gtest.h>

#include <memory>

#include "support/gpu_test.hpp"
#include "symmcomm/comm/communicator.hpp"

namespace symmcomm::test {

inline Communicator& one_rank_comm() {
  static std::unique_ptr<Communicator> comm = [] {
    auto comms = create_local_communicators({0});
    return std::make_unique<Communicator>(std::move(comms.at(0)));
  }();
  return *comm;
}

/// Free device memory in bytes, after synchronising.
inline std::size_t device_free_bytes() {
  SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
  std::size_t free_bytes = 0, total = 0;
  SYMMCOMM_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total));
  return free_bytes;
}

}  // namespace symmcomm::test
