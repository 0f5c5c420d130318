#pragma once
// Private: creation of the NCCL device communicator (dev_comm.cu).

#include <cstdint>
#include <string>

#include "comm/comm_state.hpp"
#include "comm/lsa_limits.hpp"
#include "symmcomm/comm/communicator.hpp"

namespace symmcomm::detail {

/// Creates the device communicator (collective). On failure returns false with NCCL's reason.
bool create_dev_comm(CommState& state, std::string& reason);

/// Makes the communicator's scratch window (CommState::scratch; collective, after
/// create_dev_comm succeeded on every rank), for the kernels that meet their peers through
/// flags in the data (kernels/lsa_ll.hpp). Throws where ncclMemAlloc or the registration fails;
/// where the LSA team does not span the ranks it makes none, and those kernels are not used.
/// SYMMCOMM_LSA_LL=0 on any rank skips it on every rank (agreed beforehand).
void create_scratch_window(CommState& state);

/// Frees it: `deregister` first (a borrowed communicator that lives on), else the memory only
/// (after ncclCommDestroy released the window, or when NCCL's side is gone).
void release_scratch_window(CommState& state, bool deregister) noexcept;

/// Drops the device communicator without NCCL calls (after ncclCommAbort freed it).
void forget_dev_comm(CommState& state) noexcept;

/// The ncclDevComm of a communicator (as an opaque pointer), or null when there is none.
const void* dev_comm_handle(const CommState& state) noexcept;

/// symmcomm's abort word of the communicator as kernels read it (comm/abort_word.hpp): non-zero
/// once Communicator::abort() ran, on every NCCL line. Kernels that wait for peers poll it so
/// that an abort ends them.
const std::uint32_t* device_abort_word(const CommState& state) noexcept;

}  // namespace symmcomm::detail
