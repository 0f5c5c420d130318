#pragma once
// Private: the word symmcomm's waiting kernels poll so that Communicator::abort() ends them,
// whatever NCCL does with its own device-side abort flag (null at run time in NCCL 2.30's
// device communicator; absent in 2.28's). One per communicator, in mapped pinned host memory:
// the host sets it with a plain store, every kernel of that communicator that waits for a peer
// (LSA barriers, the small-message gather's line polls, the device-count exchange) reads it
// every few thousand spins and leaves.

#include <cstdint>

namespace symmcomm::detail {

/// One abort word: `host` for the host's store, `device` for kernels (the same memory).
struct AbortWord {
  volatile std::uint32_t* host = nullptr;
  const std::uint32_t* device = nullptr;
};

/// A zeroed word of the process-wide pool. Words are never freed: a kernel of a communicator
/// torn down while it waited may still read its word, and freeing pinned memory would
/// synchronise the device. @throws CudaError when pinned memory cannot be had.
AbortWord take_abort_word();

/// Sets `word` (Communicator::abort): every kernel polling it leaves at its next poll.
void raise_abort(const AbortWord& word) noexcept;

}  // namespace symmcomm::detail
