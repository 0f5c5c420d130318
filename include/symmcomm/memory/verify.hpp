#pragma once
/// @file verify.hpp
/// @brief The symmetry verifier: a collective check that every rank holds the same windows and
/// the same pool allocations (sizes and offsets), reporting the first difference instead of
/// letting a symmetric collective read garbage or hang.

#include <cuda_runtime_api.h>

#include <vector>

#include "symmcomm/comm/communicator.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm {

/// @brief Thrown by verify_symmetric() when ranks disagree; says rank, what, offset and size.
class SymmetryError : public LogicError {
 public:
  using LogicError::LogicError;
};

/// @brief **Collective** over `comm`: all-gathers a digest of this rank's live windows and pool
/// allocations, then (only if digests differ) the full lists, and throws SymmetryError naming
/// the first difference. **Stream:** enqueues on `stream` and synchronises it.
void verify_symmetric(const Communicator& comm, cudaStream_t stream = nullptr);

/// @brief The same for several communicators driven by this thread (one rank each, e.g. from
/// create_local_communicators), in one NCCL group. `streams` may be empty (default streams).
void verify_symmetric(const std::vector<const Communicator*>& comms,
                      const std::vector<cudaStream_t>& streams = {});

}  // namespace symmcomm
