#pragma once
/// @file provenance.hpp
/// @brief Provenance: which symmetric window (and communicator, and offset) a device address
/// range belongs to, as recorded by symmcomm's owners of windows. Lookups are O(log n) and safe
/// against concurrent registration.

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace symmcomm {

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
  ProvenanceStatus status = ProvenanceStatus::NotRegistered;  ///< what the pointer lies in
  ncclWindow_t window = nullptr;      ///< the window (Symmetric, StraddlesWindowEnd)
  const void* window_base = nullptr;  ///< the window's first byte (Symmetric, StraddlesWindowEnd)
  std::size_t window_bytes = 0;       ///< the window's size in bytes
  std::size_t offset = 0;             ///< byte offset of the pointer inside the window
  std::uint64_t comm_id = 0;          ///< communicator of the window found
  std::uint64_t window_seq = 0;       ///< registration sequence number on that communicator

  /// @brief True when the range can take a symmetric path of the communicator asked about.
  bool symmetric() const noexcept { return status == ProvenanceStatus::Symmetric; }
  /// @brief Human-readable explanation naming `name`, the address and size.
  std::string describe(const char* name, const void* ptr, std::size_t bytes) const;
};

class Communicator;

/// @brief Where [ptr, ptr + bytes) lies with respect to the symmetric windows of `comm`: a
/// read-only query of the library's registry, which only symmcomm's own owners
/// (SymmetricBuffer, SymmAllocator, their register/adopt forms) write to.
Provenance provenance_of(const Communicator& comm, const void* ptr, std::size_t bytes);

/// @brief Number of symmetric windows symmcomm's owners hold now, over every communicator of
/// the process.
std::size_t registered_window_count();

}  // namespace symmcomm
