#pragma once
// Runs symmcomm-bench's measurements on the GPUs of this process (one rank per GPU, or
// --ranks-per-gpu of them sharing each; one thread per rank).

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "config.hpp"
#include "symmcomm/comm/communicator.hpp"
#include "symmcomm/memory/symm_allocator.hpp"

namespace symmcomm::bench {

/// Communicators, pools and streams of the ranks this process drives: every rank (one thread
/// each), or under mpirun one rank per process.
struct Ranks {
  std::vector<Communicator> comms;
  std::vector<std::unique_ptr<SymmAllocator>> pools;
  std::vector<cudaStream_t> streams;
  bool mpi = false;     ///< ranks live in several processes (MPI_COMM_WORLD)
  bool shared = false;  ///< several ranks of this process share a GPU: set up and torn down
                        ///< by each rank's own thread (one thread cannot drive them in turn)
  /// Ranks in this process.
  int local() const { return static_cast<int>(comms.size()); }
  /// Ranks in the communicator.
  int world() const { return comms.empty() ? 0 : comms[0].size(); }
  /// True in the process that prints (world rank 0).
  bool prints() const { return !mpi || comms[0].rank() == 0; }
};

/// Creates `ranks_per_gpu` ranks on each of `gpus` GPUs in this process (rank r on GPU
/// r / ranks_per_gpu; more than one needs NCCL >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1), or
/// with `mpi` one rank per MPI process on its node-local GPU, with pools of `pool_bytes` each.
Ranks make_ranks(int gpus, int ranks_per_gpu, std::size_t pool_bytes, bool mpi);
/// Releases pools (collectively), streams and communicators.
void release_ranks(Ranks& ranks);

/// The size sweep of `config` (op x dtype x path), each size beside plain NCCL.
std::vector<Result> run_sweep(const Config& config, Ranks& ranks);
/// The moe-dp scenario: dispatch + combine per tokens-per-rank, for auto, fallback and nccl.
std::vector<MoeResult> run_moe(const Config& config, Ranks& ranks);
/// moe-dp's layer with every rank at `tokens` (what padding to that capacity moves) on `path`.
MoeResult run_moe_padded(const Config& config, Ranks& ranks, int tokens, BenchPath path);
/// The moe-a2a scenario: dispatch + combine by expert per tokens-per-rank (moe_a2a.cpp).
std::vector<MoeResult> run_moe_a2a(const Config& config, Ranks& ranks);

}  // namespace symmcomm::bench
