#include "symmcomm/memory/symmetric_buffer.hpp"

#include <cuda_runtime_api.h>

#include <atomic>

#include "comm/comm_state.hpp"
#include "comm/launch_order.hpp"
#include "comm/wait_internal.hpp"
#include "core/cuda_utils.hpp"
#include "memory/allocation_hook.hpp"
#include "memory/provenance_internal.hpp"
#include "symmcomm/comm/group.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/logging.hpp"
#include "symmcomm/memory/provenance.hpp"

namespace symmcomm {

/// Heap-held record of a window: its address is stable while NCCL fills `window` at the end of
/// a group, even if the owning SymmetricBuffer moves.
struct WindowRecord {
  std::shared_ptr<CommState> comm;
  void* ptr = nullptr;
  std::size_t bytes = 0;
  ncclWindow_t window = nullptr;
  std::uint64_t seq = 0;
  bool registered = false;        ///< published in the provenance registry
  bool owns_memory = true;        ///< ncclMemFree on release
  bool owns_registration = true;  ///< ncclCommWindowDeregister on release
};

SymmetricBuffer::SymmetricBuffer() noexcept = default;
SymmetricBuffer::SymmetricBuffer(SymmetricBuffer&& other) noexcept = default;
void* SymmetricBuffer::data() const noexcept {
  return record_ ? record_->ptr : nullptr;
}
std::size_t SymmetricBuffer::size() const noexcept {
  return record_ ? record_->bytes : 0;
}
ncclWindow_t SymmetricBuffer::window() const noexcept {
  return record_ ? record_->window : nullptr;
}

namespace detail {
std::atomic<AllocationFailureHook>& allocation_failure_hook() noexcept {
  static std::atomic<AllocationFailureHook> hook{nullptr};
  return hook;
}
}  // namespace detail

namespace {

// True when a hook asks this allocation to fail (memory/allocation_hook.hpp).
bool hooked_failure() noexcept {
  detail::AllocationFailureHook const hook =
      detail::allocation_failure_hook().load(std::memory_order_acquire);
  return hook != nullptr && hook();
}

void* allocate_window_memory(int device, std::size_t bytes) {
  if (hooked_failure()) {
    throw OutOfMemory("symmcomm: ncclMemAlloc of " + std::to_string(bytes) + " bytes on device " +
                      std::to_string(device) + " failed (injected failure: allocation hook)");
  }
  std::size_t free_bytes = 0, total_bytes = 0;
  SYMMCOMM_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (bytes > total_bytes) {
    throw OutOfMemory("symmcomm: symmetric buffer of " + std::to_string(bytes) +
                      " bytes exceeds the " + std::to_string(total_bytes) + " bytes of device " +
                      std::to_string(device));
  }
  void* ptr = nullptr;
  ncclResult_t const r = ncclMemAlloc(&ptr, bytes);
  if (r != ncclSuccess) {
    (void)cudaGetLastError();
    std::string const text = std::string("symmcomm: ncclMemAlloc of ") + std::to_string(bytes) +
                             " bytes on device " + std::to_string(device) + " failed (" +
                             ncclGetErrorString(r) + "; " + std::to_string(free_bytes) +
                             " bytes were free)";
    if (bytes > free_bytes / 2 || r == ncclUnhandledCudaError || r == ncclSystemError) {
      throw OutOfMemory(text);
    }
    throw NcclError(r, text);
  }
  return ptr;
}

void publish(WindowRecord& record) {
  ProvenanceRegistry::global().add(WindowEntry{reinterpret_cast<std::uintptr_t>(record.ptr),
                                               record.bytes, record.window, record.comm->id,
                                               record.seq});
  std::lock_guard lock(record.comm->mutex);
  record.comm->live_windows.emplace(record.seq, record.bytes);
  record.registered = true;
}

}  // namespace

SymmetricBuffer::SymmetricBuffer(const Communicator& comm, std::size_t bytes, cudaStream_t stream)
    : SymmetricBuffer(detail::state_of(comm), bytes, stream) {}

std::uint64_t SymmetricBuffer::comm_id() const noexcept {
  return record_ ? record_->comm->id : 0;
}

SymmetricBuffer::SymmetricBuffer(const std::shared_ptr<detail::CommState>& comm, std::size_t bytes,
                                 cudaStream_t stream) {
  SYMMCOMM_EXPECTS(comm != nullptr, "SymmetricBuffer: comm is empty");
  comm->check_usable("SymmetricBuffer");
  SYMMCOMM_EXPECTS(bytes > 0, "SymmetricBuffer: bytes is 0; a symmetric window cannot be empty");
  SYMMCOMM_EXPECTS(!detail::capture_in_progress(stream),
                   "SymmetricBuffer: cannot register a window of "
                       << bytes
                       << " bytes while a CUDA graph is being captured (NCCL registration "
                          "is illegal under capture); allocate before capturing");
  detail::DeviceGuard guard(comm->device);
  auto record = std::make_unique<WindowRecord>();
  record->comm = comm;
  record->bytes = bytes;
  record->ptr = allocate_window_memory(comm->device, bytes);
  register_window(std::move(record));
}

namespace {
// The checks both adoption forms make on the caller's range.
void check_adopted_range(const detail::CommState& comm, const void* ptr, std::size_t bytes,
                         const char* what) {
  SYMMCOMM_EXPECTS(ptr != nullptr, what << ": ptr is null");
  SYMMCOMM_EXPECTS(bytes > 0, what << ": bytes is 0; a symmetric window cannot be empty");
  int const device = detail::device_of_pointer(ptr);
  SYMMCOMM_EXPECTS(device == comm.device,
                   what << ": " << ptr << " (" << bytes << " bytes) is "
                        << (device < 0 ? std::string("not device memory")
                                       : "on device " + std::to_string(device))
                        << ", but the communicator's rank " << comm.rank << " is on device "
                        << comm.device);
  SYMMCOMM_EXPECTS(!ProvenanceRegistry::global().overlaps(comm.id, ptr, bytes),
                   what << ": " << ptr << " (" << bytes
                        << " bytes) overlaps a window already registered or adopted on "
                           "communicator "
                        << comm.id << " (a pool arena, a SymmetricBuffer, or this range twice)");
}
}  // namespace

SymmetricBuffer SymmetricBuffer::register_memory(const Communicator& comm, void* ptr,
                                                 std::size_t bytes, cudaStream_t stream) {
  auto const& state = detail::state_of(comm);
  SYMMCOMM_EXPECTS(state != nullptr, "SymmetricBuffer::register_memory: comm is empty");
  state->check_usable("SymmetricBuffer::register_memory");
  SYMMCOMM_EXPECTS(!detail::capture_in_progress(stream),
                   "SymmetricBuffer::register_memory: cannot register a window while a CUDA "
                   "graph is being captured; register before capturing");
  check_adopted_range(*state, ptr, bytes, "SymmetricBuffer::register_memory");
  detail::DeviceGuard guard(state->device);
  auto record = std::make_unique<WindowRecord>();
  record->comm = state;
  record->bytes = bytes;
  record->ptr = ptr;
  record->owns_memory = false;
  SymmetricBuffer buffer;
  buffer.register_window(std::move(record));
  return buffer;
}

SymmetricBuffer SymmetricBuffer::adopt_window(const Communicator& comm, ncclWindow_t window,
                                              void* base, std::size_t bytes) {
  auto const& state = detail::state_of(comm);
  SYMMCOMM_EXPECTS(state != nullptr, "SymmetricBuffer::adopt_window: comm is empty");
  state->check_usable("SymmetricBuffer::adopt_window");
  SYMMCOMM_EXPECTS(window != nullptr, "SymmetricBuffer::adopt_window: window is null");
  check_adopted_range(*state, base, bytes, "SymmetricBuffer::adopt_window");
  auto record = std::make_unique<WindowRecord>();
  record->comm = state;
  record->bytes = bytes;
  record->ptr = base;
  record->window = window;
  record->owns_memory = false;
  record->owns_registration = false;
  {
    std::lock_guard lock(state->mutex);
    record->seq = state->next_window_seq++;
  }
  publish(*record);
  SymmetricBuffer buffer;
  buffer.record_ = std::move(record);
  return buffer;
}

void SymmetricBuffer::register_window(std::unique_ptr<WindowRecord> record) {
  detail::CommState* const comm = record->comm.get();
  std::size_t const bytes = record->bytes;
  {
    std::lock_guard lock(record->comm->mutex);
    record->seq = record->comm->next_window_seq++;
  }
  ncclResult_t const r = ncclCommWindowRegister(comm->comm, record->ptr, bytes, &record->window,
                                                NCCL_WIN_COLL_SYMMETRIC);
  if (r != ncclSuccess && r != ncclInProgress) {
    if (comm->caps.probed && !comm->caps.symmetric_memory && r == ncclInvalidUsage) {
      // Some NCCL versions refuse symmetric windows on communicators without symmetric
      // support. Keep the memory, unregistered: provenance reports it as not symmetric and
      // collectives take the fallback path, saying why.
      SYMMCOMM_LOG_INFO("SymmetricBuffer: NCCL refused a symmetric window on communicator "
                        << comm->id << " (" << comm->caps.reason
                        << "); keeping the memory unregistered");
      record_ = std::move(record);
      return;
    }
    if (record->owns_memory) SYMMCOMM_NCCL_LOG_ON_ERROR(ncclMemFree(record->ptr));
    SYMMCOMM_NCCL_TRY(r);
  }
  WindowRecord* raw = record.get();
  record_ = std::move(record);
  // Inside a Group, NCCL fills the window handle at ncclGroupEnd: publish it then. On a
  // non-blocking communicator NCCL fills it later still: wait for NCCL first, so that no
  // collective can see a window that does not exist yet.
  Group::defer([raw] {
    if (ncclResult_t const done = detail::wait_nonblocking(*raw->comm, "SymmetricBuffer");
        done != ncclSuccess) {
      SYMMCOMM_NCCL_TRY(done);
    }
    publish(*raw);
  });
}

SymmetricBuffer& SymmetricBuffer::operator=(SymmetricBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    record_ = std::move(other.record_);
  }
  return *this;
}

SymmetricBuffer::~SymmetricBuffer() {
  reset();
}

void SymmetricBuffer::reset() noexcept {
  if (!record_) return;
  std::unique_ptr<WindowRecord> record = std::move(record_);
  try {
    detail::CommState& comm = *record->comm;
    if (record->registered) {
      ProvenanceRegistry::global().remove(comm.id, record->ptr);
      std::lock_guard lock(comm.mutex);
      comm.live_windows.erase(record->seq);
    }
    detail::DeviceGuard guard(comm.device);
    if (comm.aborted.load(std::memory_order_acquire)) {
      // ncclCommAbort released the windows with the communicator: only the memory is left.
    } else if (comm.detached.load(std::memory_order_acquire)) {
      SYMMCOMM_LOG_WARN("symmetric buffer " << record->ptr
                                            << ": its borrowed communicator was "
                                               "released first; freeing without deregistration");
    } else if (record->window != nullptr) {
      // Work symmcomm enqueued on this communicator may still read or write the window (or
      // peers' through it): unmap (or hand an adopted window back) only after the last of it.
      if (!detail::wait_last_use(comm, "SymmetricBuffer release")) {
        SYMMCOMM_LOG_WARN("symmetric buffer " << record->ptr
                                              << ": work on it did not complete; leaking the "
                                                 "window rather than unmapping memory in use");
        return;
      }
      if (record->owns_registration) {
        SYMMCOMM_NCCL_LOG_ON_ERROR(ncclCommWindowDeregister(comm.comm, record->window));
      }
    }
    if (!record->owns_memory) return;  // the caller's memory
    // Inside a Group the deregistration completes at ncclGroupEnd: free only after it.
    std::shared_ptr<WindowRecord> shared(std::move(record));
    Group::defer([shared] {
      try {
        detail::DeviceGuard free_guard(shared->comm->device);
        SYMMCOMM_NCCL_LOG_ON_ERROR(ncclMemFree(shared->ptr));
      } catch (const std::exception& e) {
        SYMMCOMM_LOG_WARN("freeing symmetric buffer: " << e.what());
      }
    });
  } catch (const std::exception& e) {
    SYMMCOMM_LOG_WARN("releasing symmetric buffer: " << e.what());
  }
}

SymmetricRegion SymmetricBuffer::region(std::size_t offset, std::size_t bytes) const {
  SYMMCOMM_EXPECTS(record_ != nullptr, "region() of an empty SymmetricBuffer");
  record_->comm->check_usable("SymmetricBuffer::region");
  SYMMCOMM_EXPECTS(offset <= record_->bytes && bytes <= record_->bytes - offset,
                   "region [" << offset << ", " << offset << " + " << bytes
                              << ") is outside the buffer of " << record_->bytes << " bytes");
  return SymmetricRegion{static_cast<char*>(record_->ptr) + offset, bytes, record_->window, offset};
}

}  // namespace symmcomm
