#pragma once
// Private: what a call may use on its communicator now: the communicator usable, the Group rule,
// symmcomm's LSA kernels and their peer policy (planned_call.cpp).

#include "comm/comm_state.hpp"
#include "kernels/lsa.hpp"
#include "kernels/lsa_ll.hpp"
#include "symmcomm/comm/communicator.hpp"

namespace symmcomm::detail {

/// The communicator's state, checked usable.
CommState& usable_state(const Communicator& comm, const char* what);

/// Throws LogicError when called inside a symmcomm::Group: `operation` mixes NCCL calls with
/// its own kernels or copies, which must follow NCCL's work on the stream, but NCCL enqueues
/// grouped work only when the outermost group ends.
void refuse_in_group(const char* operation, const char* why);

/// True when symmcomm's LSA kernels can run on `comm` now: the build has NCCL's device API,
/// the communicator has a device communicator and at most lsa::kMaxRanks ranks (a Group, where
/// the kernel would run before the group's deferred NCCL calls that precede it, is
/// PlannedCall's business).
bool lsa_kernel_usable(const CommState& comm);

/// The production peer policy of `comm` (windows left for the caller to fill in: DeviceView).
lsa::Peers lsa_peers(const CommState& comm);

/// What the scratch-line kernels take of `comm` (lsa_ll.hpp): its rank, ranks, scratch window,
/// call counter and abort word; `args` (any scratch-line kernel's arguments) gets them.
void fill_ll_scratch(const CommState& comm, lsa::LlScratchView& args);

}  // namespace symmcomm::detail
