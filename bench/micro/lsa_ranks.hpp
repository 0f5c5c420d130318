#pragma once
// N real NCCL ranks on one GPU in this process (lsa_ranks_bench.cu).

namespace symmcomm::bench {

/// Tears down the ranks' communicators, pools and streams the benchmarks kept (on the ranks'
/// threads: teardown is collective). Called before the process exits.
void release_rank_worlds();

}  // namespace symmcomm::bench
