#pragma once
// Private: the one check of a call's arguments (run() calls it once, before any planning or
// launch); executors and kernel launchers rely on it and assert only their own invariants.

#include <cstddef>

#include "call.hpp"

namespace symmcomm::detail {

/// Throws LogicError naming the argument and its value unless `call` is well formed for a
/// communicator of `ranks` ranks on which this is `rank`: tensors (pointers, alignment, scale
/// layout), counts against each other and against the ranks, device counts and row items.
/// The call's row (operation and dtypes) is known to exist.
void validate_call(const CollectiveCall& call, int ranks, int rank);

/// Host counts of a v-collective: `entries` == ranks, counts[rank] == mine, sum == total, each
/// a multiple of `multiple`.
void check_counts(const std::size_t* counts, std::size_t entries, int ranks, int rank,
                  std::size_t mine, std::size_t total, std::size_t multiple, const char* mine_name,
                  const char* total_name);

}  // namespace symmcomm::detail
