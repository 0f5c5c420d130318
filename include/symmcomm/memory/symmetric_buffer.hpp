#pragma once
/// @file symmetric_buffer.hpp
/// @brief symmcomm::SymmetricBuffer: device memory from `ncclMemAlloc`, registered as an NCCL
/// symmetric window (`NCCL_WIN_COLL_SYMMETRIC`) of one communicator. Move-only RAII.

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "symmcomm/comm/communicator.hpp"
#include "symmcomm/formats/views.hpp"

namespace symmcomm {

/// @brief A window's record (opaque; defined inside the library): its address stays stable
/// while NCCL fills in the window at the end of a group, even if the owning buffer moves.
struct WindowRecord;

/// @brief A byte range inside a symmetric window: pointer, size, window and offset.
struct SymmetricRegion {
  void* data = nullptr;           ///< first byte of the range (device memory)
  std::size_t bytes = 0;          ///< size of the range
  ncclWindow_t window = nullptr;  ///< the window the range lies in
  std::size_t window_offset = 0;  ///< the same on every rank for symmetric allocation sequences
};

/// @brief Device memory registered as a symmetric window of one communicator.
class SymmetricBuffer {
 public:
  SymmetricBuffer() noexcept;
  /// @brief Allocates `bytes` on the communicator's device and registers the window.
  /// **Collective**: every rank calls with the same size, in the same order. Inside a
  /// symmcomm::Group the window handle is valid once the group ends.
  /// Registration is illegal while a CUDA graph is captured: it is refused when `stream` is
  /// capturing, or when a global-mode capture makes the legacy stream unusable (CUDA offers no
  /// query for a capture on some other non-blocking stream: pass the stream you capture on).
  /// @throws LogicError (zero bytes, under stream capture, communicator released),
  /// OutOfMemory (more than the device can give), NcclError.
  SymmetricBuffer(const Communicator& comm, std::size_t bytes, cudaStream_t stream = nullptr);
  /// @brief Takes over the other's window; the other is left empty.
  SymmetricBuffer(SymmetricBuffer&& other) noexcept;
  /// @brief Releases this one's window (as the destructor does), then takes the other's.
  SymmetricBuffer& operator=(SymmetricBuffer&& other) noexcept;
  SymmetricBuffer(const SymmetricBuffer&) = delete;
  SymmetricBuffer& operator=(const SymmetricBuffer&) = delete;
  /// @brief Registers memory the caller allocated (`ncclMemAlloc`, or cuMem memory with the
  /// handle types NCCL needs) as a symmetric window of `comm`. symmcomm owns the registration,
  /// not the memory: destruction deregisters (collective) and never frees. **Collective**, same
  /// sizes and order on every rank; refused under capture as the constructor.
  /// @throws LogicError (null pointer, zero bytes, memory not on the communicator's device, a
  /// range overlapping a window already known on this communicator), NcclError.
  static SymmetricBuffer register_memory(const Communicator& comm, void* ptr, std::size_t bytes,
                                         cudaStream_t stream = nullptr);
  /// @brief Adopts a window the caller registered on `comm` itself (`base`, `bytes`: the range
  /// it registered): symmcomm owns neither memory nor registration, and only records the window
  /// so that collectives plan symmetric paths on it and verify_symmetric() covers it. Local (no
  /// NCCL call). The caller keeps the window registered, on this communicator, until this
  /// object is gone (symmcomm cannot check either: NCCL offers no query).
  /// @throws LogicError (null window or pointer, zero bytes, memory not on the communicator's
  /// device, the range adopted or registered already on this communicator).
  static SymmetricBuffer adopt_window(const Communicator& comm, ncclWindow_t window, void* base,
                                      std::size_t bytes);
  /// @brief Releases what this object owns: waits for symmcomm's queued work on the window,
  /// then deregisters it (owned registrations; **collective**: destroy buffers in the same
  /// order on every rank) and frees the memory (owned memory). Never throws.
  ~SymmetricBuffer();

  /// @brief Device pointer to the start of the buffer.
  void* data() const noexcept;
  /// @brief Size in bytes.
  std::size_t size() const noexcept;
  /// @brief The NCCL window (null until a surrounding Group has ended, and null for good when
  /// NCCL refused the window on a communicator without symmetric support: the memory is then
  /// plain, and provenance says so).
  ncclWindow_t window() const noexcept;
  /// @brief The id of the communicator the window belongs to.
  std::uint64_t comm_id() const noexcept;
  /// @brief True when this object owns a buffer.
  explicit operator bool() const noexcept { return record_ != nullptr; }

  /// @brief Bytes [offset, offset + bytes) as a region keeping window and offset.
  /// @throws LogicError if the range is outside the buffer, or the communicator was released.
  SymmetricRegion region(std::size_t offset, std::size_t bytes) const;
  /// @brief Elements [first, first + count) of type T. @throws LogicError when out of range.
  template <class T>
  Span<T> span(std::size_t first, std::size_t count) const {
    SymmetricRegion const r = region(first * sizeof(T), count * sizeof(T));
    return Span<T>{static_cast<T*>(r.data), count};
  }
  /// @brief The whole buffer as elements of T (size() / sizeof(T) of them).
  template <class T>
  Span<T> span() const {
    return span<T>(0, size() / sizeof(T));
  }

 private:
  friend class SymmAllocator;  // grows its pool from the communicator's state
  SymmetricBuffer(const std::shared_ptr<CommState>& comm, std::size_t bytes, cudaStream_t stream);
  void reset() noexcept;
  // Registers record->ptr (bytes) on record->comm and publishes it (at the group's end).
  void register_window(std::unique_ptr<WindowRecord> record);
  std::unique_ptr<WindowRecord> record_;
};

// An owner: moved, never copied (a copy would deregister the window twice).
static_assert(!std::is_copy_constructible_v<SymmetricBuffer> &&
              std::is_nothrow_move_constructible_v<SymmetricBuffer>);

}  // namespace symmcomm
