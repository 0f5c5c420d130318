#pragma once
// Private: watched waits and asynchronous-error checks on a communicator's state.

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>

#include "comm/comm_state.hpp"
#include "symmcomm/comm/communicator.hpp"

namespace symmcomm::detail {

/// Throws LogicError if `state` was aborted, NcclError if NCCL reports an asynchronous error.
void check_async(const CommState& state, const char* what);

/// symmcomm::wait on a state; `what` names the caller in errors.
void wait_stream(const CommState& state, cudaStream_t stream, std::chrono::milliseconds timeout,
                 const char* what);

/// Waits until NCCL finished the non-blocking operations in flight on `state` (polls
/// ncclCommGetAsyncError while it says ncclInProgress, up to default_wait_timeout()) and returns
/// the final state: ncclSuccess, or the error. Returns at once on a blocking communicator.
ncclResult_t wait_nonblocking(const CommState& state, const char* what);

/// Copies `bytes` from device memory at `device` to host memory at `host` after the work queued
/// on `stream` (a collective's result): waits for the stream first, watched and bounded as
/// wait_stream is, then copies. Never a copy to pageable memory straight behind a collective:
/// such a copy blocks the host until the collective completes - unbounded when a peer never
/// joins - and, while it waits, keeps other threads of the process from launching on the same
/// GPU (seen on the H200: two ranks as threads sharing GPU 0 deadlocked, one rank in this copy,
/// the other inside ncclAllGather's kernel launch).
void copy_to_host_after(const CommState& state, void* host, const void* device, std::size_t bytes,
                        cudaStream_t stream, std::chrono::milliseconds timeout, const char* what);

/// Waits, watched as wait_stream is, until `event` has completed.
void wait_event(const CommState& state, cudaEvent_t event, std::chrono::milliseconds timeout,
                const char* what);

}  // namespace symmcomm::detail
