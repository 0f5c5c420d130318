#pragma once
// Private: a communicator's last calls that ran as one launch of symmcomm's own kernel, kept so
// that the same call again launches without being validated, resolved and planned again.
//
// Engines call the same collectives on the same buffers every step (a decode layer's dispatch
// and combine; double-buffered activations alternate between two sets): descriptor, options and
// windows are what they were, and so is the plan. A communicator keeps its kKeptCalls most
// recently used such calls. A call is replayed only when
//   - every field of its descriptor and of its options equals a kept call's (equal counts,
//     no extra items: the descriptor is then the whole input of validation and planning),
//   - no window was added or removed anywhere since the kept call was planned (the provenance
//     registry's generation), so every buffer's provenance and the plan are the same,
//   - the launch switch that planning reads (lsa::ll_gather_enabled) is unchanged,
//   - it is not inside a Group and plan agreement is off (both change how a call runs).
// A replay still checks the communicator usable, orders the launch after the communicator's
// last windowed work and records the call as the full path does (stats, last use, graphs).
// Anything else runs the full path, which keeps the call again where it ended in one launch.

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

#include "collectives/call.hpp"
#include "comm/comm_state.hpp"
#include "kernels/lsa.hpp"
#include "symmcomm/collectives/options.hpp"

namespace symmcomm::detail {

class PlannedCall;

/// Distinct calls a communicator keeps for replay: an engine's collectives of one step on
/// alternating buffers (two per collective), the least recently used one replaced.
inline constexpr std::size_t kKeptCalls = 8;

/// One launch of symmcomm's kernel: the function that launches it and its arguments, copied.
struct ReplayLaunch {
  using Fn = void (*)(const CommState& state, const void* args, cudaStream_t stream);
  static constexpr std::size_t kMaxArgBytes = 1024;

  Fn fn = nullptr;
  std::size_t bytes = 0;
  alignas(16) unsigned char args[kMaxArgBytes];

  /// `fn` with a copy of `args` (trivially copyable: the kernels' argument structs are).
  template <class Args>
  static ReplayLaunch of(Fn fn, const Args& args) noexcept {
    static_assert(std::is_trivially_copyable_v<Args>, "launch arguments are copied as bytes");
    static_assert(sizeof(Args) <= kMaxArgBytes, "launch arguments exceed ReplayLaunch's room");
    static_assert(alignof(Args) <= 16, "launch arguments need more alignment than kept");
    ReplayLaunch l;
    l.fn = fn;
    l.bytes = sizeof(Args);
    std::memcpy(l.args, &args, sizeof(Args));
    return l;
  }
  /// Launches it on `stream` now; returns it (to be kept).
  const ReplayLaunch& now(const CommState& state, cudaStream_t stream) const {
    fn(state, args, stream);
    return *this;
  }
};

/// A scratch-window kernel's launch, `Launch(args, share, stream)` (kernels/lsa_ll.hpp), with the
/// communicator's launch share.
template <class Args, void (*Launch)(const Args&, LaunchShare, cudaStream_t)>
ReplayLaunch ll_launch(const Args& args) noexcept {
  return ReplayLaunch::of(
      [](const CommState& state, const void* a, cudaStream_t stream) {
        Launch(*static_cast<const Args*>(a), state.lsa_launch_share(), stream);
      },
      args);
}

/// A barrier kernel's launch with its peer policy, `Launch(peers, args, stream)`
/// (kernels/lsa.hpp).
template <class Args, void (*Launch)(const lsa::Peers&, const Args&, cudaStream_t)>
ReplayLaunch peers_launch(const lsa::Peers& peers, const Args& args) noexcept {
  struct WithPeers {
    lsa::Peers peers;
    Args args;
  };
  return ReplayLaunch::of(
      [](const CommState&, const void* a, cudaStream_t stream) {
        const auto& w = *static_cast<const WithPeers*>(a);
        Launch(w.peers, w.args, stream);
      },
      WithPeers{peers, args});
}

/// Whether `call` with `options` may be kept and replayed at all (see the top of this file;
/// the Group is checked where the call runs).
bool replayable(const CollectiveCall& call, const Options& options) noexcept;

/// Field-by-field equality of what validation and planning read.
bool same_call(const CollectiveCall& a, const CollectiveCall& b) noexcept;
bool same_options(const Options& a, const Options& b) noexcept;

/// A call kept for replay: what planning decided and the launch it made.
struct KeptCall {
  CollectiveCall call;
  Options options;
  std::uint64_t generation = 0;  ///< the provenance registry's, read before planning
  bool ll_gather = false;        ///< lsa::ll_gather_enabled() then
  Plan plan;
  /// The launch, shared with a replay that runs it after leaving the lock (never copied on
  /// replay: an entry replaced meanwhile leaves the replay its own reference). Increments happen
  /// under the lock only, so an entry whose count is 1 there is rewritten in place.
  std::shared_ptr<ReplayLaunch> launch;
  const char* type = "";
  std::size_t count = 0;
  std::uint64_t last_use = 0;  ///< when last kept or replayed (KeptCalls' count); 0: empty
};

/// A communicator's kept calls (under CollectiveScratch::replay_mutex).
class KeptCalls {
 public:
  /// The entry `call` with `options` replays: the same fields, planned when the registry's
  /// generation was `generation` and the LL gather switch `ll_gather`; null when none.
  KeptCall* find(const CollectiveCall& call, const Options& options, std::uint64_t generation,
                 bool ll_gather) noexcept;
  /// Where to keep `call` with `options`: the entry holding the same call planned from an older
  /// state, else an empty one, else the least recently used.
  KeptCall& entry_for(const CollectiveCall& call, const Options& options) noexcept;
  /// Marks `entry` the most recently used (kept or replayed now).
  void touch(KeptCall& entry) noexcept;

 private:
  std::array<KeptCall, kKeptCalls> calls_;
  std::uint64_t uses_ = 0;  ///< entries kept or replayed so far: their recency
};

/// Replays `call` when it is one of the communicator's kept calls (see the top of this file):
/// launches it on `stream` with the bookkeeping of the full path, sets `plan` and returns true.
/// False, having done nothing: run the full path.
bool replay_call(CommState& state, const CollectiveCall& call, const char* operation,
                 cudaStream_t stream, const Options& options, Plan& plan);

/// After the full path enqueued `call` as the single launch `launch` (planned by `planned`,
/// recorded with `type` and `count`): keeps it for replay_call when replayable. A call whose
/// enqueue was more than that one launch must not be kept.
void keep_call(CommState& state, const CollectiveCall& call, const Options& options,
               const PlannedCall& planned, const ReplayLaunch& launch, const char* type,
               std::size_t count);

}  // namespace symmcomm::detail
