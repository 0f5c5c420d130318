#pragma once
// Private: the order of the work symmcomm enqueues on one communicator, across streams.
//
// symmcomm's LSA kernels of one communicator share its LSA barriers (CTA i of every launch uses
// barrier i). Two launches running at once on different streams would mix their barrier
// epochs: wrong data, then a hang. NCCL serialises its own launches per communicator; symmcomm
// does the same for its kernels: each launch waits for the communicator's previous windowed
// work when that was enqueued on another stream (an event chain). The same event tells window
// teardown when the last work that may touch a window has completed.
//
// Under CUDA graph capture the chain links only work of the same capture (an edge in the
// graph); a graph's replays are ordered against other work by the stream the graph is
// launched on, which is the caller's.

#include <cuda_runtime_api.h>

#include "comm/comm_state.hpp"
#include "symmcomm/comm/communicator.hpp"

namespace symmcomm::detail {

/// Before enqueueing an LSA kernel of `state` on `stream`: makes `stream` wait for the
/// communicator's last windowed work if that went to another stream.
void order_after_last_use(CommState& state, cudaStream_t stream);

/// The capture a stream takes part in: id 0 (and no graph) when none.
struct CaptureInfo {
  unsigned long long id = 0;
  cudaGraph_t graph = nullptr;
};
/// One query of `stream`'s capture state, for the two calls below.
CaptureInfo capture_info(cudaStream_t stream);

/// After enqueueing work on `stream` (capture state `capture`) that touches symmetric windows
/// of `state`.
void mark_use(CommState& state, cudaStream_t stream, const CaptureInfo& capture);

/// After enqueueing any collective of `state` on a stream in capture `capture`: ties a count of
/// `state.live_graphs` to the graph being captured (released when CUDA destroys it); nothing
/// outside capture.
void note_graph_use(CommState& state, const CaptureInfo& capture);

/// Waits (watched, default_wait_timeout) until the last work marked on `state` outside graph
/// capture has completed. Returns false, having logged why, when it did not (timeout, error,
/// aborted communicator); never throws.
bool wait_last_use(const CommState& state, const char* what) noexcept;

}  // namespace symmcomm::detail
