#pragma once
// The provenance registry (private to symmcomm: its owners of windows write it, everyone else
// reads through provenance_of), and the library's own batch lookup into larger records.

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "symmcomm/memory/provenance.hpp"

namespace symmcomm {

namespace detail {
struct ProvenanceAccess;
}  // namespace detail

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

namespace symmcomm::detail {

struct ProvenanceAccess {
  /// ProvenanceRegistry::lookup of `count` ranges under one lock, answer i written at byte
  /// offset `i * out_stride` from `out`: straight into the Provenance member of an array of
  /// larger records (a collective's planned buffers), so that no freshly written answer is
  /// copied again on the hot path.
  static void lookup_strided(const ProvenanceRegistry& registry,
                             const ProvenanceRegistry::Query* queries, std::size_t count,
                             std::uint64_t comm_id, Provenance* out, std::size_t out_stride);
  /// A number that changes whenever a window is added or removed anywhere: lookups made at one
  /// generation give the same answers while it holds.
  static std::uint64_t generation(const ProvenanceRegistry& registry) noexcept;
};

}  // namespace symmcomm::detail
