#pragma once
/// @file fault_injection.hpp
/// @brief Test hooks that make symmcomm's device allocations fail on purpose, to check that
/// callers (and symmcomm's own pool) survive an out-of-memory cleanly. Process-wide, thread-safe,
/// off by default; not for production use.

namespace symmcomm::fault_injection {

/// @brief The next `count` symmetric-memory allocations (ncclMemAlloc inside SymmetricBuffer,
/// hence also SymmAllocator growth) fail with OutOfMemory ("... injected failure ...") before
/// touching the device. 0 cancels pending failures.
void fail_next_symmetric_allocations(int count) noexcept;

/// @brief Injected failures not yet consumed.
int pending_symmetric_allocation_failures() noexcept;

}  // namespace symmcomm::fault_injection
