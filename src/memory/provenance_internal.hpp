#pragma once
// The library's own batch lookup into larger records (private to symmcomm).

#include <cstddef>
#include <cstdint>

#include "symmcomm/memory/provenance.hpp"

namespace symmcomm::detail {

struct ProvenanceAccess {
  /// ProvenanceRegistry::lookup of `count` ranges under one lock, answer i written at byte
  /// offset `i * out_stride` from `out`: straight into the Provenance member of an array of
  /// larger records (a collective's planned buffers), so that no freshly written answer is
  /// copied again on the hot path.
  static void lookup_strided(const ProvenanceRegistry& registry,
                             const ProvenanceRegistry::Query* queries, std::size_t count,
                             std::uint64_t comm_id, Provenance* out, std::size_t out_stride);
};

}  // namespace symmcomm::detail
