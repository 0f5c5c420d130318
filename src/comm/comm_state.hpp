#pragma once
// Private: the shared state of a communicator. Owners of windows (SymmetricBuffer, SymmAllocator)
// keep it alive, so that teardown always runs deregister -> free -> destroy communicator,
// whatever order the user drops things in. Reached through detail::state_of(Communicator).

#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "comm/abort_word.hpp"
#include "comm/layer_state.hpp"
#include "core/launch_share.hpp"
#include "symmcomm/comm/communicator.hpp"

namespace symmcomm::detail {

/// A copy of `text` that lives until the process ends; equal texts share one copy.
const char* intern(const std::string& text);
/// Source of live-allocation records for the symmetry verifier (implemented by SymmAllocator).
class SymmetryParticipant {
 public:
  struct Record {
    std::uint64_t arena;   ///< arena index in creation order
    std::uint64_t offset;  ///< byte offset inside the arena
    std::uint64_t bytes;   ///< size of the allocation (0 for an arena record)
  };
  virtual ~SymmetryParticipant() = default;
  /// Records in a deterministic order: each arena as {index, 0, 0... size}, then live blocks.
  virtual std::vector<Record> symmetry_records() const = 0;
};

struct DevCommHolder;
struct DevCommDeleter {
  void operator()(DevCommHolder* holder) const noexcept;
};
struct LaunchOrder;
struct LaunchOrderDeleter {
  void operator()(LaunchOrder* order) const noexcept;
};

}  // namespace symmcomm::detail

namespace symmcomm {

/// Shared state of a communicator (see the top of this file).
struct CommState {
  CommState(ncclComm_t c, bool own);
  ~CommState();
  CommState(const CommState&) = delete;
  CommState& operator=(const CommState&) = delete;

  ncclComm_t comm = nullptr;
  bool owned = false;
  int rank = 0;
  int size = 1;
  int device = 0;
  std::uint64_t id = 0;  ///< process-unique, never reused
  Capabilities caps;
  /// Ranks in other processes share a GPU, whose kernels CUDA MPS runs beside ours (then each
  /// LSA launch takes at most one CTA per two SMs of caps.lsa_sm_share: resident_cap,
  /// core/launch_share.hpp). Agreed at creation (comm/gpu_share.hpp).
  bool lsa_other_processes = false;

  /// What the LSA kernels' grids are sized from: caps.lsa_sm_share (0 without symmetric memory:
  /// no cap) and lsa_other_processes.
  detail::LaunchShare lsa_launch_share() const noexcept {
    return detail::LaunchShare{caps.lsa_sm_share, lsa_other_processes};
  }
  CommStats stats;
  std::atomic<bool> detached{false};  ///< a borrowed communicator was released by its wrapper
  std::atomic<bool> aborted{false};   ///< Communicator::abort() ran: NCCL state is gone
  /// Set by Communicator::abort(); symmcomm's kernels that wait for peers poll it.
  detail::AbortWord abort_word;
  /// NCCL itself reported no symmetric memory support for this communicator (so it never
  /// launches its symmetric kernels here, and the PDL fence they need is skipped).
  bool nccl_symmetric_off = false;
  std::unique_ptr<detail::DevCommHolder, detail::DevCommDeleter> dev_comm;
  /// Order of symmcomm's windowed work across streams (src/comm/launch_order.hpp); made on
  /// first use, under `mutex`.
  std::unique_ptr<detail::LaunchOrder, detail::LaunchOrderDeleter> launch_order;
  /// CUDA graphs that captured a collective of this communicator and are not destroyed yet
  /// (src/comm/launch_order.hpp, note_graph_use). Shared with the graphs' destructor callbacks,
  /// which may run after the state is gone. NCCL's ncclCommDestroy waits, without a bound, for
  /// every such graph to be destroyed: the teardown refuses to call it while any lives.
  std::shared_ptr<std::atomic<int>> live_graphs = std::make_shared<std::atomic<int>>(0);
  unsigned long long last_noted_capture = 0;  ///< under `mutex`

  /// What the layers above keep per communicator (comm/layer_state.hpp; the collectives'
  /// scratch window, workspace and switches), made with the state and never replaced, so callers
  /// read it without a lock; released by the teardown in the communicator's order (left
  /// allocated where live graphs may still use it).
  std::shared_ptr<detail::LayerState> layers;

  // Live windows (registration sequence -> bytes) and pools, for the symmetry verifier.
  mutable std::mutex mutex;
  std::uint64_t next_window_seq = 0;
  std::map<std::uint64_t, std::uint64_t> live_windows;
  std::vector<const detail::SymmetryParticipant*> participants;

  /// Throws LogicError if the wrapper of a borrowed communicator is gone or it was aborted.
  void check_usable(const char* what) const;
};

struct CommAccess {
  static const std::shared_ptr<CommState>& state(const Communicator& comm) noexcept {
    return comm.state_;
  }
  /// A Communicator sharing `state` (see detail::CommAlias).
  static Communicator alias(std::shared_ptr<CommState> state) {
    return Communicator(std::move(state));
  }
  /// Drops `comm`'s share of its state without a wrapper's release steps (see CommAlias).
  static void drop(Communicator& comm) noexcept { comm.state_.reset(); }
};

}  // namespace symmcomm

namespace symmcomm::detail {

using symmcomm::CommState;

/// A Communicator sharing a state that its holder keeps alive anyway, so that library code can
/// call the public collectives on the holder's behalf (MoeGroup's fallback path). Dropped
/// without the wrapper's release steps: those belong to the user's Communicator alone.
class CommAlias {
 public:
  explicit CommAlias(std::shared_ptr<CommState> state)
      : comm_(CommAccess::alias(std::move(state))) {}
  ~CommAlias() { CommAccess::drop(comm_); }
  CommAlias(const CommAlias&) = delete;
  CommAlias& operator=(const CommAlias&) = delete;
  const Communicator& get() const noexcept { return comm_; }

 private:
  Communicator comm_;
};

/// The state behind `comm` (null for an empty Communicator), for symmcomm's own owners of
/// windows and executors.
inline const std::shared_ptr<CommState>& state_of(const Communicator& comm) noexcept {
  return CommAccess::state(comm);
}

}  // namespace symmcomm::detail
