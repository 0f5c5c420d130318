#pragma once
// Private: creation of the NCCL device communicator (dev_comm.cu).

#include <cstdint>
#include <string>

#include "comm/comm_state.hpp"
#include "symmcomm/comm/communicator.hpp"

namespace symmcomm::detail {

/// Creates the device communicator (collective). On failure returns false with NCCL's reason.
bool create_dev_comm(CommState& state, std::string& reason);

/// "`call` failed (NCCL's error string): NCCL's last error" for a failed NCCL call on `comm`.
std::string nccl_failure(ncclComm_t comm, const char* call, ncclResult_t r);

/// Drops the device communicator without NCCL calls (after ncclCommAbort freed it).
void forget_dev_comm(CommState& state) noexcept;

/// The ncclDevComm of a communicator (as an opaque pointer), or null when there is none.
const void* dev_comm_handle(const CommState& state) noexcept;

/// symmcomm's abort word of the communicator as kernels read it (comm/abort_word.hpp): non-zero
/// once Communicator::abort() ran, on every NCCL line. Kernels that wait for peers poll it so
/// that an abort ends them.
const std::uint32_t* device_abort_word(const CommState& state) noexcept;

}  // namespace symmcomm::detail
