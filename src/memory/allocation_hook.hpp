#pragma once
// Private: a process-wide hook consulted before every symmetric-memory allocation, so that a
// test library (symmcomm::testing's fault injection) can make allocations fail on purpose
// without the shipped library carrying any testing code. Null by default.

#include <atomic>

namespace symmcomm::detail {

/// Returns true when the allocation about to happen must fail as out of memory.
using AllocationFailureHook = bool (*)() noexcept;

/// The installed hook (null: none). Installing one is a test's business.
std::atomic<AllocationFailureHook>& allocation_failure_hook() noexcept;

}  // namespace symmcomm::detail
