#pragma once
// Private: which ranks share a GPU, and what that leaves each rank's LSA launches. Every rank
// all-gathers its GpuEntry at creation (communicator.cpp) and reads the same GpuShare from the
// same entries, so grids sized from it are the same on every rank.

#include <cstdint>
#include <vector>

namespace symmcomm::detail {

/// One rank's GPU as the others see it (all-gathered as bytes: trivially copyable, no pointers).
struct GpuEntry {
  int sms = 0;                       ///< the GPU's multiprocessors
  std::uint32_t layer_switches = 0;  ///< the layers above's switches on here (layer_state.hpp)
  unsigned char uuid[16] = {};       ///< the GPU's UUID: equal on ranks that share it
  std::uint64_t process = 0;         ///< this process's own random number (process_nonce)
};

/// What the ranks' entries say, the same on every rank.
struct GpuShare {
  int ranks_per_gpu = 1;  ///< the most ranks on any one GPU
  int sm_share = 1;       ///< SMs per rank: the fewest SMs of any GPU over ranks_per_gpu (>= 1)
  int gpu_sms = 1;        ///< the fewest SMs of any rank's GPU (>= 1)
  /// Some GPU holds ranks of different processes (different `process` numbers).
  bool other_processes = false;
  std::uint32_t layer_switches = ~std::uint32_t{0};  ///< the switches set on every rank
};

/// The share `entries` (every rank's, in rank order; at least one) describe.
GpuShare share_of(const std::vector<GpuEntry>& entries);

/// A number no other process on the machine has (a pid can repeat across containers sharing a
/// GPU): which ranks sharing a GPU are other processes, whose kernels MPS may run beside ours.
/// The same for the whole life of this process, never 0.
std::uint64_t process_nonce();

}  // namespace symmcomm::detail
