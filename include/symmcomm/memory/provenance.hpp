#pragma once
/// @file provenance.hpp
/// @brief The provenance registry: which symmetric window (and communicator, and offset) a
/// device address range belongs to. Lookups are O(log n) and safe against concurrent
/// registration.

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace symmcomm {

namespace detail {
struct ProvenanceAccess;  // the library's batch lookup into larger records (src/memory)
}  // namespace detail

/// @brief Why a range is not usable as a symmetric buffer of a communicator.
enum class ProvenanceStatus : std::uint8_t {
  Symmetric,          ///< wholly inside one window of the communicator
  Null,               ///< null pointer with a non-zero size
  Empty,              ///< zero bytes: nothing to place
  NotRegistered,      ///< in no symmetric window at all (e.g. cudaMalloc memory)
  OtherCommunicator,  ///< inside a window of another communicator only
  StraddlesWindowEnd  ///< starts in a window of this communicator but runs past its end
};

/// @brief Answer of a provenance lookup.
struct Provenance {
  ProvenanceStatus status = ProvenanceStatus::NotRegistered;
  ncclWindow_t window = nullptr;  ///< the window (Symmetric, StraddlesWindowEnd)
  const void* window_base = nullptr;
  std::size_t window_bytes = 0;
  std::size_t offset = 0;        ///< byte offset of the pointer inside the window
  std::uint64_t comm_id = 0;     ///< communicator of the window found
  std::uint64_t window_seq = 0;  ///< registration sequence number on that communicator

  /// @brief True when the range can take a symmetric path of the communicator asked about.
  bool symmetric() const noexcept { return status == ProvenanceStatus::Symmetric; }
  /// @brief Human-readable explanation naming `name`, the address and size.
  std::string describe(const char* name, const void* ptr, std::size_t bytes) const;
};

/// @brief A registered window as the registry stores it.
struct WindowEntry {
  std::uintptr_t base = 0;
  std::size_t bytes = 0;
  ncclWindow_t window = nullptr;
  std::uint64_t comm_id = 0;
  std::uint64_t window_seq = 0;
};

/// @brief Registry of symmetric windows, keyed by communicator then address.
class ProvenanceRegistry {
 public:
  ProvenanceRegistry();
  ~ProvenanceRegistry();
  ProvenanceRegistry(const ProvenanceRegistry&) = delete;
  ProvenanceRegistry& operator=(const ProvenanceRegistry&) = delete;

  /// @brief The process-wide registry symmcomm's owners record their windows in.
  static ProvenanceRegistry& global();

  /// @brief Records a window. @throws LogicError if it overlaps a window of the same communicator.
  void add(const WindowEntry& entry);
  /// @brief Forgets the window at `base` of communicator `comm_id`; false when it was unknown.
  bool remove(std::uint64_t comm_id, const void* base) noexcept;
  /// @brief True when [base, base + bytes) intersects a window registered on `comm_id`.
  bool overlaps(std::uint64_t comm_id, const void* base, std::size_t bytes) const;
  /// @brief Where [ptr, ptr + bytes) lies with respect to communicator `comm_id`'s windows.
  Provenance lookup(const void* ptr, std::size_t bytes, std::uint64_t comm_id) const;
  /// @brief A range to look up in a batch.
  struct Query {
    const void* ptr = nullptr;
    std::size_t bytes = 0;
  };
  /// @brief Looks up `count` ranges under one lock acquisition (a collective call's buffers):
  /// `out[i]` answers `queries[i]`.
  void lookup(const Query* queries, std::size_t count, std::uint64_t comm_id,
              Provenance* out) const;
  /// @brief Number of windows recorded (all communicators).
  std::size_t size() const;

 private:
  friend struct detail::ProvenanceAccess;
  struct State;  // windows per communicator and their lock (src/memory/provenance.cpp)
  std::unique_ptr<State> state_;
};

}  // namespace symmcomm
