#pragma once
// Private: watched waits and asynchronous-error checks on a communicator's state.

#include <cuda_runtime_api.h>

#include <chrono>

#include "symmcomm/comm/communicator.hpp"

namespace symmcomm::detail {

/// Throws LogicError if `state` was aborted, NcclError if NCCL reports an asynchronous error.
void check_async(const CommState& state, const char* what);

/// symmcomm::wait on a state; `what` names the caller in errors.
void wait_stream(const CommState& state, cudaStream_t stream, std::chrono::milliseconds timeout,
                 const char* what);

}  // namespace symmcomm::detail
