// Injected symmetric-allocation failures (symmcomm/testing/fault_injection.hpp), through the
// library's allocation hook (memory/allocation_hook.hpp).

#include "symmcomm/testing/fault_injection.hpp"

#include <atomic>

#include "memory/allocation_hook.hpp"

namespace symmcomm::fault_injection {
namespace {

std::atomic<int> failures_left{0};

// Consumes one injected failure, if any is pending.
bool take_failure() noexcept {
  int left = failures_left.load(std::memory_order_relaxed);
  while (left > 0) {
    if (failures_left.compare_exchange_weak(left, left - 1)) return true;
  }
  return false;
}

}  // namespace

void fail_next_symmetric_allocations(int count) noexcept {
  failures_left.store(count > 0 ? count : 0, std::memory_order_relaxed);
  detail::allocation_failure_hook().store(&take_failure, std::memory_order_release);
}

int pending_symmetric_allocation_failures() noexcept {
  return failures_left.load(std::memory_order_relaxed);
}

}  // namespace symmcomm::fault_injection
