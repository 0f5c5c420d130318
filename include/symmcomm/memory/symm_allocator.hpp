#pragma once
/// @file symm_allocator.hpp
/// @brief symmcomm::SymmAllocator: a pool that registers a few large symmetric windows (arenas)
/// and sub-allocates them locally and deterministically, so engines get symmetric buffers
/// without a collective registration per tensor.
///
/// Determinism: offsets depend only on the sequence of reserve/allocate/deallocate calls, so
/// ranks that make the same calls get buffers at the same window offsets (what NCCL's symmetric
/// kernels require). verify_symmetric() checks that they did.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>

// CCCL's memory-resource properties, where the user opted in to them (they are experimental in
// CUDA 13: LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE, and <CUDA>/include/cccl on the path).
#if defined(LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE) && defined(__has_include)
#if __has_include(<cuda/memory_resource>)
#include <cuda/memory_resource>
#define SYMMCOMM_HAS_CUDA_MR_PROPERTIES 1
#endif
#endif

#include "symmcomm/comm/communicator.hpp"
#include "symmcomm/memory/symmetric_buffer.hpp"

namespace symmcomm {

/// @brief Alignment of every pool allocation (and the least PoolOptions::alignment): what
/// cudaMalloc guarantees, so pool memory can stand in for it anywhere.
inline constexpr std::size_t kPoolAlignment = 256;

/// @brief Construction options of a SymmAllocator.
struct PoolOptions {
  std::size_t initial_bytes = 0;           ///< reserved at construction (0: none)
  std::size_t growth_bytes = 256 << 20;    ///< minimum size of an arena added on demand
  bool allow_growth = true;                ///< grow on demand (a **collective** step)
  std::size_t max_bytes = 0;               ///< cap on reserved bytes (0: no cap)
  std::size_t alignment = kPoolAlignment;  ///< default alignment (power of two >= kPoolAlignment)
};

/// @brief Pool statistics (a consistent snapshot).
struct PoolStats {
  std::size_t reserved_bytes = 0;    ///< sum of arena sizes
  std::size_t in_use_bytes = 0;      ///< bytes handed out (rounded to the alignment)
  std::size_t high_water_bytes = 0;  ///< largest in_use_bytes seen
  std::size_t arena_count = 0;       ///< arenas (windows) the pool holds
  std::size_t live_allocations = 0;  ///< allocations not yet returned
  std::uint64_t allocations = 0;     ///< total successful allocate calls
  std::uint64_t growths = 0;         ///< arenas added on demand
};

/// @brief A pool of symmetric memory for one communicator. Thread-safe. Not movable (the
/// communicator's verifier refers to it).
class SymmAllocator final {
 public:
  /// @brief **Collective** when `options.initial_bytes` > 0. @throws as reserve().
  explicit SymmAllocator(const Communicator& comm, PoolOptions options = {});
  /// @brief Releases every arena (**collective**: deregistration). Live allocations left are
  /// logged as leaks. Never throws.
  ~SymmAllocator();
  SymmAllocator(const SymmAllocator&) = delete;
  SymmAllocator& operator=(const SymmAllocator&) = delete;

  /// @brief Adds an arena of `bytes` (rounded up to the alignment). **Collective**.
  /// @throws LogicError (zero bytes, over max_bytes, during stream capture), OutOfMemory,
  /// NcclError. The pool is unchanged when it throws.
  void reserve(std::size_t bytes);

  /// @brief Allocates `bytes` (> 0) aligned to `alignment` (0: the pool's default). Local, unless
  /// the pool must grow, which is **collective** and refused while `stream` (or any global-mode
  /// capture) is being captured. **Stream:** the stream the memory will be used on. Where the
  /// block reuses memory returned by a stream-ordered deallocate() whose stream has not yet
  /// passed that point, `stream` is made to wait for it (cudaStreamWaitEvent); without a stream
  /// (nullptr) or while `stream` is being captured, the call waits on the host instead.
  /// @throws LogicError (bad size or alignment, growth during capture or disabled),
  /// OutOfMemory (cap reached or device exhausted; the pool stays usable).
  void* allocate(std::size_t bytes, std::size_t alignment = 0, cudaStream_t stream = nullptr);
  /// @brief Returns an allocation, for reuse at once: the caller guarantees no queued work still
  /// uses it. @throws LogicError for a pointer this pool did not hand out or already took back.
  void deallocate(void* ptr);
  /// @brief Stream-ordered return (as RMM's resources and cudaFreeAsync): the block goes back
  /// to the pool now, at the same offset on every rank that makes the same calls (so buffers
  /// stay symmetric), but memory reused from it is used only after `stream` has passed this
  /// point (see allocate()). So an engine can free a tensor right after enqueueing the
  /// collective that reads it. A null `stream` is CUDA's legacy default stream (as for
  /// cudaFreeAsync; PyTorch's default stream is that one). @throws LogicError as
  /// deallocate(ptr), or while `stream` is being captured (the event would be a graph node).
  void deallocate(void* ptr, cudaStream_t stream);

  /// @brief Memory-resource shape (as CCCL's cuda::mr and RMM): allocate(bytes, alignment).
  void* allocate_sync(std::size_t bytes, std::size_t alignment = kPoolAlignment) {
    return allocate(bytes, alignment);
  }
  /// @brief Memory-resource shape: deallocate (the size and alignment are checked).
  void deallocate_sync(void* ptr, std::size_t bytes, std::size_t alignment = kPoolAlignment);
  /// @brief Memory-resource shape of the stream-ordered pair (as cuda::mr's async resources).
  void* allocate_async(std::size_t bytes, std::size_t alignment, cudaStream_t stream) {
    return allocate(bytes, alignment, stream);
  }
  /// @brief deallocate(ptr, stream) in that shape (the size and alignment are checked).
  void deallocate_async(void* ptr, std::size_t bytes, std::size_t alignment, cudaStream_t stream);
  /// @brief Resources compare equal only to themselves (memory is not interchangeable).
  bool operator==(const SymmAllocator& other) const noexcept { return this == &other; }
  /// @brief Not the same resource.
  bool operator!=(const SymmAllocator& other) const noexcept { return this != &other; }
  /// @brief Where its memory can be used: device code only (ncclMemAlloc memory).
  static constexpr bool device_accessible = true;
  /// @brief Never host code (ncclMemAlloc memory is not mapped for the host).
  static constexpr bool host_accessible = false;
#if defined(SYMMCOMM_HAS_CUDA_MR_PROPERTIES)
  /// @brief The property as CCCL's cuda::mr resources (and RMM's) declare it, so
  /// `cuda::has_property<SymmAllocator, cuda::mr::device_accessible>` holds.
  friend void get_property(const SymmAllocator&, cuda::mr::device_accessible) noexcept {}
#endif

  /// @brief The region (window, offset) of a live allocation. @throws LogicError otherwise.
  SymmetricRegion region_of(const void* ptr) const;
  /// @brief A snapshot of the statistics.
  PoolStats stats() const;
  /// @brief The communicator the pool serves.
  std::uint64_t comm_id() const noexcept;
  /// @brief Releases trailing arenas that hold no live allocation. **Collective.** Returns bytes
  /// released. Waits first for frees still pending on their streams, bounded like every wait
  /// (wait.hpp): @throws TimeoutError, with nothing released, when one never completes.
  std::size_t release_unused();

 private:
  struct Impl;  // arenas, their bookkeeping and lock, pending frees (src/memory/symm_allocator.cpp)
  std::unique_ptr<Impl> impl_;
};

}  // namespace symmcomm
