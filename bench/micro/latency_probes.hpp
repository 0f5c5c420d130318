#pragma once
// Probe kernels of the latency benchmark (latency_ranks_bench.cu), on the production peers of a
// communicator's LSA team: the fixed costs under every LSA kernel, measured apart from any data.
// Benchmark code only: the shipped libraries carry none of it.

#include <cuda_runtime_api.h>

#include "kernels/lsa.hpp"

namespace symmcomm::bench {

/// The synchronisation every LSA kernel pays, alone: the opening and the closing barrier with no
/// data between them, one CTA, launched as the collectives' kernels are (PDL included).
void barriers_only(const detail::lsa::Peers& peers, cudaStream_t stream);

/// One round of a one-flag ping-pong between ranks 0 and 1 through their `flags` slots (two
/// zeroed 32-bit words per rank, in a window): the fixed cost of one signal each way.
void flag_ping_pong(const detail::lsa::Peers& peers, detail::lsa::SymRef flags,
                    cudaStream_t stream);

}  // namespace symmcomm::bench
