#include "symmcomm/memory/symm_allocator.hpp"
#include "comm/comm_state.hpp"

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "comm/wait_internal.hpp"
#include "memory/arena_allocator.hpp"
#include "symmcomm/comm/wait.hpp"

#include "core/cuda_utils.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/logging.hpp"

namespace symmcomm {
namespace {
bool is_power_of_two(std::size_t x) {
  return x != 0 && (x & (x - 1)) == 0;
}
std::size_t round_up(std::size_t x, std::size_t a) {
  return (x + a - 1) / a * a;
}
// Far beyond any device: requests above this are bugs (negative sizes cast to size_t, ...).
constexpr std::size_t kAbsurdBytes = std::size_t{1} << 50;
}  // namespace

// Everything of a pool behind SymmAllocator's pointer; registered with its communicator as a
// participant of the symmetry verifier.
struct SymmAllocator::Impl final : detail::SymmetryParticipant {
  Impl(const Communicator& comm, PoolOptions options);
  ~Impl() override;
  void reserve(std::size_t bytes);
  void* allocate(std::size_t bytes, std::size_t alignment, cudaStream_t stream);
  void deallocate(void* ptr);
  void deallocate(void* ptr, cudaStream_t stream);
  void deallocate_sync(void* ptr, std::size_t bytes, std::size_t alignment);
  void deallocate_async(void* ptr, std::size_t bytes, std::size_t alignment, cudaStream_t stream);
  SymmetricRegion region_of(const void* ptr) const;
  PoolStats stats() const;
  std::uint64_t comm_id() const noexcept;
  std::size_t release_unused();
  // For the symmetry verifier: arenas and live blocks in a deterministic order.
  std::vector<Record> symmetry_records() const override;

  void add_arena_locked(std::size_t bytes, cudaStream_t stream);
  // Where a live allocation lies; LogicError naming `who` for foreign or freed pointers.
  struct Located {
    std::size_t arena, offset, bytes;
  };
  Located locate_locked(const void* ptr, const char* who, std::size_t bytes = 0,
                        std::size_t alignment = 0) const;
  // Stream-ordered frees whose stream may not have passed the free yet.
  struct PendingFree {
    std::size_t arena, offset, bytes;
    cudaEvent_t event;
  };
  // Orders use of [offset, offset + bytes) of `arena` on `stream` (host wait when null or
  // capturing) after the pending frees it overlaps; forgets frees that have completed.
  void order_after_pending_frees_locked(std::size_t arena, std::size_t offset, std::size_t bytes,
                                        cudaStream_t stream);
  // Waits for every pending free (before memory is released).
  void drain_pending_frees_locked() noexcept;
  std::vector<PendingFree> pending_;
  std::shared_ptr<detail::CommState> comm_;
  PoolOptions options_;
  mutable std::mutex mutex_;
  detail::ArenaAllocator book_;
  std::vector<SymmetricBuffer> arenas_;
  std::unordered_map<const void*, std::size_t> arena_of_ptr_;  // live pointer -> arena index
  std::size_t high_water_ = 0;
  std::uint64_t allocations_ = 0;
  std::uint64_t growths_ = 0;
};

SymmAllocator::SymmAllocator(const Communicator& comm, PoolOptions options)
    : impl_(std::make_unique<Impl>(comm, options)) {}
SymmAllocator::~SymmAllocator() = default;
void SymmAllocator::reserve(std::size_t bytes) {
  impl_->reserve(bytes);
}
void* SymmAllocator::allocate(std::size_t bytes, std::size_t alignment, cudaStream_t stream) {
  return impl_->allocate(bytes, alignment, stream);
}
void SymmAllocator::deallocate(void* ptr) {
  impl_->deallocate(ptr);
}
void SymmAllocator::deallocate(void* ptr, cudaStream_t stream) {
  impl_->deallocate(ptr, stream);
}
void SymmAllocator::deallocate_sync(void* ptr, std::size_t bytes, std::size_t alignment) {
  impl_->deallocate_sync(ptr, bytes, alignment);
}
void SymmAllocator::deallocate_async(void* ptr, std::size_t bytes, std::size_t alignment,
                                     cudaStream_t stream) {
  impl_->deallocate_async(ptr, bytes, alignment, stream);
}
SymmetricRegion SymmAllocator::region_of(const void* ptr) const {
  return impl_->region_of(ptr);
}
PoolStats SymmAllocator::stats() const {
  return impl_->stats();
}
std::uint64_t SymmAllocator::comm_id() const noexcept {
  return impl_->comm_id();
}
std::size_t SymmAllocator::release_unused() {
  return impl_->release_unused();
}

SymmAllocator::Impl::Impl(const Communicator& comm, PoolOptions options)
    : comm_(detail::state_of(comm)), options_(options), book_(options.alignment) {
  SYMMCOMM_EXPECTS(comm, "SymmAllocator: comm is empty");
  SYMMCOMM_EXPECTS(is_power_of_two(options.alignment) && options.alignment >= kPoolAlignment,
                   "PoolOptions.alignment " << options.alignment
                                            << " is not a power of two >= " << kPoolAlignment);
  SYMMCOMM_EXPECTS(options.growth_bytes > 0 || !options.allow_growth,
                   "PoolOptions.growth_bytes is 0 but allow_growth is set");
  {
    std::lock_guard lock(comm_->mutex);
    comm_->participants.push_back(this);
  }
  if (options.initial_bytes > 0) {
    try {
      reserve(options.initial_bytes);
    } catch (...) {
      std::lock_guard lock(comm_->mutex);
      auto& p = comm_->participants;
      p.erase(std::remove(p.begin(), p.end(), this), p.end());
      throw;
    }
  }
}

SymmAllocator::Impl::~Impl() {
  {
    std::lock_guard lock(mutex_);
    drain_pending_frees_locked();
    if (book_.live_blocks() > 0) {
      SYMMCOMM_LOG_WARN("SymmAllocator destroyed with "
                        << book_.live_blocks() << " live allocation(s) (" << book_.in_use_bytes()
                        << " bytes): leaked "
                        << "pointers are now dangling");
    }
  }
  std::lock_guard lock(comm_->mutex);
  auto& p = comm_->participants;
  p.erase(std::remove(p.begin(), p.end(), this), p.end());
  // arenas_ are destroyed after this body: deregister, then free.
}

void SymmAllocator::Impl::add_arena_locked(std::size_t bytes, cudaStream_t stream) {
  SYMMCOMM_EXPECTS(!detail::capture_in_progress(stream),
                   "SymmAllocator: growing the pool by "
                       << bytes << " bytes while a CUDA graph is being captured is refused (NCCL "
                       << "window registration is illegal under capture); reserve() enough "
                       << "before capturing");
  if (options_.max_bytes != 0 && book_.reserved_bytes() + bytes > options_.max_bytes) {
    throw OutOfMemory("symmcomm: SymmAllocator: reserving " + std::to_string(bytes) +
                      " more bytes would exceed PoolOptions.max_bytes " +
                      std::to_string(options_.max_bytes) + " (reserved " +
                      std::to_string(book_.reserved_bytes()) + ")");
  }
  SymmetricBuffer arena(comm_, bytes, stream);  // collective; throws before anything changes here
  std::size_t const index = book_.add_arena(bytes);
  SYMMCOMM_EXPECTS(index == arenas_.size(), "pool bookkeeping out of step with its arenas");
  arenas_.push_back(std::move(arena));
}

void SymmAllocator::Impl::reserve(std::size_t bytes) {
  SYMMCOMM_EXPECTS(bytes > 0, "SymmAllocator::reserve: bytes is 0");
  SYMMCOMM_EXPECTS(bytes <= kAbsurdBytes,
                   "SymmAllocator::reserve: bytes " << bytes << " is absurd (over 1 PiB)");
  comm_->check_usable("SymmAllocator::reserve");
  std::lock_guard lock(mutex_);
  add_arena_locked(round_up(bytes, options_.alignment), nullptr);
}

void* SymmAllocator::Impl::allocate(std::size_t bytes, std::size_t alignment, cudaStream_t stream) {
  SYMMCOMM_EXPECTS(bytes > 0, "SymmAllocator::allocate: bytes is 0");
  SYMMCOMM_EXPECTS(bytes <= kAbsurdBytes,
                   "SymmAllocator::allocate: bytes " << bytes << " is absurd (over 1 PiB)");
  if (alignment == 0) alignment = options_.alignment;
  SYMMCOMM_EXPECTS(is_power_of_two(alignment),
                   "SymmAllocator::allocate: alignment " << alignment << " is not a power of two");
  comm_->check_usable("SymmAllocator::allocate");
  std::lock_guard lock(mutex_);
  auto block = book_.allocate(bytes, alignment);
  if (!block) {
    if (!options_.allow_growth) {
      throw OutOfMemory("symmcomm: SymmAllocator cannot place " + std::to_string(bytes) +
                        " bytes (largest free range " + std::to_string(book_.largest_free()) +
                        " of " + std::to_string(book_.reserved_bytes()) +
                        " reserved) and PoolOptions.allow_growth is off");
    }
    std::size_t const arena_bytes =
        std::max(options_.growth_bytes, round_up(bytes, options_.alignment) + alignment);
    add_arena_locked(round_up(arena_bytes, options_.alignment), stream);
    ++growths_;
    SYMMCOMM_LOG_DEBUG("SymmAllocator grew by " << arena_bytes << " bytes for a request of "
                                                << bytes);
    block = book_.allocate(bytes, alignment);
    SYMMCOMM_EXPECTS(block.has_value(), "a fresh arena could not hold the request");
  }
  if (!pending_.empty()) {
    try {
      order_after_pending_frees_locked(block->arena, block->offset, block->bytes, stream);
    } catch (...) {
      book_.deallocate(block->arena, block->offset);  // nothing handed out, nothing lost
      throw;
    }
  }
  void* ptr = static_cast<char*>(arenas_[block->arena].data()) + block->offset;
  arena_of_ptr_.emplace(ptr, block->arena);
  ++allocations_;
  high_water_ = std::max(high_water_, book_.in_use_bytes());
  return ptr;
}

SymmAllocator::Impl::Located SymmAllocator::Impl::locate_locked(const void* ptr, const char* who,
                                                                std::size_t bytes,
                                                                std::size_t alignment) const {
  auto it = arena_of_ptr_.find(ptr);
  SYMMCOMM_EXPECTS(it != arena_of_ptr_.end(), who << ": ptr " << ptr
                                                  << " was not allocated by this pool, or was "
                                                     "already freed");
  std::size_t const arena = it->second;
  std::size_t const offset = static_cast<std::size_t>(
      static_cast<const char*>(ptr) - static_cast<const char*>(arenas_[arena].data()));
  auto const block = book_.find(arena, offset);
  SYMMCOMM_EXPECTS(block.has_value(), who << ": pool bookkeeping lost the block at " << ptr);
  // The memory-resource forms name the size and alignment they allocated with.
  SYMMCOMM_EXPECTS(block->bytes >= bytes,
                   who << ": ptr " << ptr << " holds " << block->bytes << " bytes, not " << bytes);
  SYMMCOMM_EXPECTS(reinterpret_cast<std::uintptr_t>(ptr) % (alignment ? alignment : 1) == 0,
                   who << ": ptr " << ptr << " is not aligned to " << alignment);
  return Located{arena, offset, block->bytes};
}

void SymmAllocator::Impl::deallocate(void* ptr) {
  std::lock_guard lock(mutex_);
  Located const at = locate_locked(ptr, "SymmAllocator::deallocate");
  book_.deallocate(at.arena, at.offset);
  arena_of_ptr_.erase(ptr);
}

void SymmAllocator::Impl::deallocate_sync(void* ptr, std::size_t bytes, std::size_t alignment) {
  std::lock_guard lock(mutex_);
  Located const at = locate_locked(ptr, "SymmAllocator::deallocate_sync", bytes, alignment);
  book_.deallocate(at.arena, at.offset);
  arena_of_ptr_.erase(ptr);
}

void SymmAllocator::Impl::deallocate(void* ptr, cudaStream_t stream) {
  // A null stream is the legacy default stream: the event below is recorded there.
  SYMMCOMM_EXPECTS(!detail::capture_in_progress(stream),
                   "SymmAllocator::deallocate: stream " << stream
                                                        << " is being captured; free the memory "
                                                           "after the graph is no longer "
                                                           "launched, or without a stream");
  std::lock_guard lock(mutex_);
  Located const at = locate_locked(ptr, "SymmAllocator::deallocate");
  detail::DeviceGuard guard(comm_->device);
  cudaEvent_t event = nullptr;
  SYMMCOMM_CUDA_TRY(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  cudaError_t const recorded = cudaEventRecord(event, stream);
  if (recorded != cudaSuccess) {
    cudaEventDestroy(event);
    SYMMCOMM_CUDA_TRY(recorded);
  }
  pending_.push_back(PendingFree{at.arena, at.offset, at.bytes, event});
  book_.deallocate(at.arena, at.offset);
  arena_of_ptr_.erase(ptr);
}

void SymmAllocator::Impl::deallocate_async(void* ptr, std::size_t bytes, std::size_t alignment,
                                           cudaStream_t stream) {
  {
    std::lock_guard lock(mutex_);
    locate_locked(ptr, "SymmAllocator::deallocate_async", bytes, alignment);
  }
  deallocate(ptr, stream);
}

void SymmAllocator::Impl::order_after_pending_frees_locked(std::size_t arena, std::size_t offset,
                                                           std::size_t bytes, cudaStream_t stream) {
  detail::DeviceGuard guard(comm_->device);
  bool const host_wait = stream == nullptr || detail::capture_in_progress(stream);
  // First the waits, which may throw (a host wait is bounded: a stream that never reaches its
  // free, e.g. behind a collective a peer never joins, is a TimeoutError, not a hang); nothing
  // is changed before them.
  for (const PendingFree& f : pending_) {
    bool const overlaps =
        f.arena == arena && f.offset < offset + bytes && offset < f.offset + f.bytes;
    if (!overlaps) continue;
    if (host_wait) {
      detail::wait_event(*comm_, f.event, default_wait_timeout(),
                         "SymmAllocator: reusing memory freed on a stream");
    } else {
      SYMMCOMM_CUDA_TRY(cudaStreamWaitEvent(stream, f.event, 0));
    }
  }
  // Then the frees that completed are forgotten; the list stays whole if a query fails.
  std::size_t kept = 0;
  cudaError_t failed = cudaSuccess;
  for (const PendingFree& f : pending_) {
    cudaError_t const state = cudaEventQuery(f.event);
    if (state == cudaSuccess) {
      cudaEventDestroy(f.event);
      continue;
    }
    if (state != cudaErrorNotReady && failed == cudaSuccess) failed = state;
    pending_[kept++] = f;
  }
  pending_.resize(kept);
  SYMMCOMM_CUDA_TRY(failed);
}

void SymmAllocator::Impl::drain_pending_frees_locked() noexcept {
  if (pending_.empty()) return;
  int previous = -1;
  cudaGetDevice(&previous);
  cudaSetDevice(comm_->device);
  for (PendingFree& f : pending_) {
    cudaEventSynchronize(f.event);
    cudaEventDestroy(f.event);
  }
  pending_.clear();
  if (previous >= 0) cudaSetDevice(previous);
}

SymmetricRegion SymmAllocator::Impl::region_of(const void* ptr) const {
  std::lock_guard lock(mutex_);
  Located const at = locate_locked(ptr, "SymmAllocator::region_of");
  return arenas_[at.arena].region(at.offset, at.bytes);
}

PoolStats SymmAllocator::Impl::stats() const {
  std::lock_guard lock(mutex_);
  PoolStats s;
  s.reserved_bytes = book_.reserved_bytes();
  s.in_use_bytes = book_.in_use_bytes();
  s.high_water_bytes = high_water_;
  s.arena_count = book_.arena_count();
  s.live_allocations = book_.live_blocks();
  s.allocations = allocations_;
  s.growths = growths_;
  return s;
}

std::uint64_t SymmAllocator::Impl::comm_id() const noexcept {
  return comm_->id;
}

std::size_t SymmAllocator::Impl::release_unused() {
  std::lock_guard lock(mutex_);
  {
    // Bounded, before anything is deregistered: a free whose stream never gets there is a
    // TimeoutError with every arena still in place, not a hang.
    detail::DeviceGuard guard(comm_->device);
    for (const PendingFree& f : pending_) {
      detail::wait_event(*comm_, f.event, default_wait_timeout(),
                         "SymmAllocator::release_unused: memory freed on a stream");
    }
  }
  drain_pending_frees_locked();
  std::size_t released = 0;
  while (!arenas_.empty()) {
    std::size_t const bytes = book_.arena_bytes(book_.arena_count() - 1);
    if (!book_.remove_last_arena_if_empty()) break;
    arenas_.pop_back();  // collective deregistration
    released += bytes;
  }
  return released;
}

std::vector<detail::SymmetryParticipant::Record> SymmAllocator::Impl::symmetry_records() const {
  std::lock_guard lock(mutex_);
  std::vector<Record> records;
  for (std::size_t a = 0; a < book_.arena_count(); ++a) {
    records.push_back(Record{a, ~std::uint64_t{0}, book_.arena_bytes(a)});
  }
  for (const auto& block : book_.live()) {
    records.push_back(Record{block.arena, block.offset, block.bytes});
  }
  return records;
}

}  // namespace symmcomm
