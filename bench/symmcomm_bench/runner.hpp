#pragma once
// Runs symmcomm-bench's measurements on the GPUs of this process (one rank per GPU, one thread
// per rank).

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "config.hpp"
#include "symmcomm/comm/communicator.hpp"
#include "symmcomm/memory/symm_allocator.hpp"

namespace symmcomm::bench {

/// Communicators, pools and streams of the ranks this process drives.
struct Ranks {
  std::vector<Communicator> comms;
  std::vector<std::unique_ptr<SymmAllocator>> pools;
  std::vector<cudaStream_t> streams;
  int size() const { return static_cast<int>(comms.size()); }
};

/// Creates `gpus` ranks (0: all visible) with pools of `pool_bytes` each.
Ranks make_ranks(int gpus, std::size_t pool_bytes);
/// Releases pools (collectively), streams and communicators.
void release_ranks(Ranks& ranks);

/// The size sweep of `config` (op x dtype x path), each size beside plain NCCL.
std::vector<Result> run_sweep(const Config& config, Ranks& ranks);
/// The moe-dp scenario: dispatch + combine per tokens-per-rank, for auto, fallback and nccl.
std::vector<MoeResult> run_moe(const Config& config, Ranks& ranks);

}  // namespace symmcomm::bench
