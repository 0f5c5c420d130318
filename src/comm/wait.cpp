// Watched waits (symmcomm/comm/wait.hpp).

#include "symmcomm/comm/wait.hpp"

#include <cstdlib>
#include <sstream>
#include <thread>

#include "comm/wait_internal.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm {
namespace detail {

void check_async(const CommState& state, const char* what) {
  if (state.aborted.load(std::memory_order_acquire)) {
    SYMMCOMM_FAIL(what << ": communicator " << state.id << " was aborted");
  }
  ncclResult_t async = ncclSuccess;
  SYMMCOMM_NCCL_TRY(ncclCommGetAsyncError(state.comm, &async));
  if (async != ncclSuccess && async != ncclInProgress) {
    const char* last = ncclGetLastError(state.comm);
    std::ostringstream os;
    os << what << ": NCCL reports an asynchronous error on communicator " << state.id << " (rank "
       << state.rank << "/" << state.size << "): " << ncclGetErrorString(async);
    if (last != nullptr && *last != '\0') os << " (" << last << ")";
    os << "; abort the communicator (Communicator::abort)";
    throw NcclError(async, os.str());
  }
}

namespace {
// Polls `query` (cudaSuccess when done, cudaErrorNotReady while busy) with growing pauses,
// checking the communicator's asynchronous errors meanwhile; TimeoutError after `timeout`.
template <class Query>
void watched_wait(const CommState& state, Query&& query, const void* object, const char* kind,
                  std::chrono::milliseconds timeout, const char* what) {
  using clock = std::chrono::steady_clock;
  auto const start = clock::now();
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    check_async(state, what);  // first: an aborted communicator is refused even when idle
    cudaError_t const e = query();
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) SYMMCOMM_CUDA_TRY(e);
    auto const waited = std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - start);
    if (timeout.count() > 0 && waited >= timeout) {
      std::ostringstream os;
      os << what << ": waited " << waited.count() << " ms for " << kind << " " << object
         << " of communicator " << state.id << " (rank " << state.rank << "/" << state.size
         << "), timeout " << timeout.count()
         << " ms (SYMMCOMM_WAIT_TIMEOUT_S); NCCL reports no asynchronous error: a peer may never "
            "have joined the collective";
      throw TimeoutError(os.str());
    }
    std::this_thread::sleep_for(pause);
    if (pause < std::chrono::milliseconds(1)) pause *= 2;
  }
}
}  // namespace

void wait_stream(const CommState& state, cudaStream_t stream, std::chrono::milliseconds timeout,
                 const char* what) {
  watched_wait(
      state, [stream] { return cudaStreamQuery(stream); }, static_cast<const void*>(stream),
      "stream", timeout, what);
}

void copy_to_host_after(const CommState& state, void* host, const void* device, std::size_t bytes,
                        cudaStream_t stream, std::chrono::milliseconds timeout, const char* what) {
  wait_stream(state, stream, timeout, what);
  SYMMCOMM_CUDA_TRY(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream));
  wait_stream(state, stream, timeout, what);
}

void wait_event(const CommState& state, cudaEvent_t event, std::chrono::milliseconds timeout,
                const char* what) {
  watched_wait(
      state, [event] { return cudaEventQuery(event); }, static_cast<const void*>(event), "event",
      timeout, what);
}

ncclResult_t wait_nonblocking(const CommState& state, const char* what) {
  using clock = std::chrono::steady_clock;
  auto const start = clock::now();
  auto const timeout = default_wait_timeout();
  for (;;) {
    ncclResult_t async = ncclSuccess;
    ncclResult_t const r = ncclCommGetAsyncError(state.comm, &async);
    if (r != ncclSuccess) return r;
    if (async != ncclInProgress) return async;
    if (timeout.count() > 0 && clock::now() - start >= timeout) {
      throw TimeoutError(std::string(what) + ": the non-blocking communicator " +
                         std::to_string(state.id) + " was still in progress after " +
                         std::to_string(timeout.count()) + " ms (SYMMCOMM_WAIT_TIMEOUT_S)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace detail

std::chrono::milliseconds default_wait_timeout() {
  static std::chrono::milliseconds const timeout = [] {
    const char* env = std::getenv("SYMMCOMM_WAIT_TIMEOUT_S");
    if (env == nullptr || *env == '\0') return std::chrono::milliseconds(600'000);
    char* end = nullptr;
    double const seconds = std::strtod(env, &end);
    if (end == env || *end != '\0' || !(seconds >= 0.0)) {
      SYMMCOMM_FAIL("SYMMCOMM_WAIT_TIMEOUT_S = '" << env
                                                  << "' is not a non-negative number of seconds");
    }
    return std::chrono::milliseconds(static_cast<long long>(seconds * 1000.0));
  }();
  return timeout;
}

void wait(const Communicator& comm, cudaStream_t stream, std::chrono::milliseconds timeout) {
  SYMMCOMM_EXPECTS(comm, "wait: comm is empty");
  SYMMCOMM_EXPECTS(timeout.count() >= 0, "wait: timeout " << timeout.count() << " ms is negative");
  detail::wait_stream(*detail::state_of(comm), stream, timeout, "wait");
}

}  // namespace symmcomm
