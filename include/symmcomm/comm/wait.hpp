#pragma once
/// @file wait.hpp
/// @brief Waiting for a stream without hanging on a communicator that can no longer make
/// progress: the wait watches NCCL's asynchronous error state and gives up after a timeout.

#include <cuda_runtime_api.h>

#include <chrono>

#include "symmcomm/comm/communicator.hpp"

namespace symmcomm {

/// @brief The timeout of symmcomm's own waits: environment variable SYMMCOMM_WAIT_TIMEOUT_S
/// (seconds; 0 means wait forever), 600 s when unset. Read once per process.
std::chrono::milliseconds default_wait_timeout();

/// @brief Waits until the work enqueued on `stream` so far has completed, polling (never
/// blocking in cudaStreamSynchronize) and checking `comm`'s asynchronous error state meanwhile.
/// symmcomm uses it wherever it waits itself (symmetry verification, workspace growth).
/// @throws NcclError as soon as NCCL reports an asynchronous error on `comm` (the caller
/// should then abort the communicator: Communicator::abort()); TimeoutError after `timeout`
/// (a zero timeout waits forever), naming the communicator, rank and time waited; CudaError
/// if the stream failed.
void wait(const Communicator& comm, cudaStream_t stream,
          std::chrono::milliseconds timeout = default_wait_timeout());

}  // namespace symmcomm
