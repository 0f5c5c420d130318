#pragma once
// Private: the device side of one planned call on symmcomm's LSA kernels, built in one place:
// the communicator's peers (rank, device communicator, grid share, abort word) and the table of
// windows the kernel addresses on peers, filled from the provenance the plan already looked up.
// Executors fill kernel arguments from it and never write window slots themselves.

#include "collectives/planned_call.hpp"
#include "kernels/lsa.hpp"

namespace symmcomm::detail {

class DeviceView {
 public:
  /// The view of `planned`'s call (decided: its buffers' provenance is known), no slot filled.
  explicit DeviceView(const PlannedCall& planned);

  /// The buffer in `slot` (part `index` of a part slot) as the kernel addresses it on peers:
  /// its window in a slot of the table (shared with an earlier buffer of the same window) and
  /// its offset there. LogicError naming `name` past lsa::kSlots distinct windows.
  lsa::SymRef ref(Slot slot, int index, const char* name);
  lsa::SymRef ref(Slot slot, const char* name) { return ref(slot, -1, name); }

  /// The buffer in `slot` (part `index`) in table slot `at`, for kernels whose slots are fixed
  /// by role (gather part i in slot i; data, block scales, scale in 0, 1, 2). Returns its
  /// offset in its window.
  std::size_t bind(int at, Slot slot, int index = -1);

  const lsa::Peers& peers() const noexcept { return peers_; }

 private:
  const PlannedCall& planned_;
  lsa::Peers peers_;
  int used_ = 0;  // slots ref() filled (bind() fills by role and leaves ref() unused)
};

/// The peers of `comm` with `window` in table slot 0: the device side of calls whose buffers
/// all lie in one window the caller owns (MoeGroup's), so no plan looks their provenance up.
lsa::Peers window_peers(const CommState& comm, ncclWindow_t window);

}  // namespace symmcomm::detail
