#pragma once
// Private: creation of the NCCL device communicator (dev_comm.cu).

#include <string>

#include "comm/comm_state.hpp"
#include "comm/lsa_limits.hpp"
#include "symmcomm/comm/communicator.hpp"

namespace symmcomm::detail {

/// Creates the device communicator (collective). On failure returns false with NCCL's reason.
bool create_dev_comm(CommState& state, std::string& reason);

/// Drops the device communicator without NCCL calls (after ncclCommAbort freed it).
void forget_dev_comm(CommState& state) noexcept;

/// The ncclDevComm of a communicator (as an opaque pointer), or null when there is none.
const void* dev_comm_handle(const CommState& state) noexcept;

}  // namespace symmcomm::detail
