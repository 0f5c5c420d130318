#pragma once
// Private: what the collectives keep per communicator (attached to its CommState, which knows
// it only as a LayerState, comm/layer_state.hpp): their switches as the ranks agreed them at
// creation, the scratch window of the flag-in-data kernels, the workspace of fallbacks that need
// one (quantized reduce-scatter, device counts, swizzled scales on NCCL's paths),
// Options::agree_plan's device words and the call kept for replay (replay.hpp).

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>

#include "comm/comm_state.hpp"
#include "comm/layer_state.hpp"
#include "symmcomm/collectives/options.hpp"

namespace symmcomm::detail {

class KeptCalls;  // replay.hpp
struct KeptCallsDeleter {
  void operator()(KeptCalls* kept) const noexcept;
};

/// The collectives' switches (layer_switches): a bit is on unless its variable is "0" here.
enum LayerSwitch : std::uint32_t {
  kSmallGatherSwitch = 1u << 0,    ///< SYMMCOMM_LSA_LL: the scratch window is made
  kCountsInLinesSwitch = 1u << 1,  ///< SYMMCOMM_LL_COUNTS: device counts ride in its lines
};

/// A symmetric scratch window every rank of a communicator holds (kernels/lsa_ll.hpp sizes and
/// lays it out) and this rank's call counter beside it (2 words, device memory, zeroed at
/// creation).
struct ScratchWindow {
  void* base = nullptr;  ///< ncclMemAlloc'd, scratch_window_bytes(size) bytes
  ncclWindow_t window = nullptr;
  std::uint32_t* calls = nullptr;
};

class CollectiveScratch final : public LayerState {
 public:
  explicit CollectiveScratch(int on_device) : device(on_device) {}
  CollectiveScratch(const CollectiveScratch&) = delete;
  CollectiveScratch& operator=(const CollectiveScratch&) = delete;
  /// Frees the workspaces (the communicator's teardown runs it once no call can use them); the
  /// scratch window goes with release_windows.
  ~CollectiveScratch() override;

  /// Makes the scratch window where the device communicator spans every rank and no rank set
  /// SYMMCOMM_LSA_LL=0, and takes counts in its lines unless a rank set SYMMCOMM_LL_COUNTS=0.
  void on_probed(CommState& state, std::uint32_t agreed) override;
  bool holds_peer_memory() const noexcept override { return window.base != nullptr; }
  /// Whether the scratch window exists, so the flag-in-data kernels can run.
  bool has_window() const noexcept { return window.window != nullptr; }
  void release_windows(CommState& state, bool deregister) noexcept override;

  int device;
  /// The flag-in-data kernels' scratch window; empty where none was made (no device
  /// communicator spanning the ranks, SYMMCOMM_LSA_LL=0 on some rank, Probe::No).
  ScratchWindow window;
  /// Device-count calls carry counts in the scratch lines where they fit (kernels/
  /// lsa_ll_device_counts.hpp): no rank set SYMMCOMM_LL_COUNTS=0 (agreed at creation).
  bool counts_in_lines = false;
  /// Grown outside graph capture, at least doubling. An outgrown workspace is kept until the
  /// communicator goes (`retired`): freeing it would synchronise the device, and earlier calls
  /// or captured graphs may still use it.
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  std::vector<void*> retired;
  /// Options::agree_plan's words (one per rank, and this rank's), made on first use.
  void* agreement = nullptr;
  /// The communicator's last kKeptCalls distinct calls that ran as one launch of symmcomm's
  /// kernel (replay.hpp), under `replay_mutex`.
  std::mutex replay_mutex;
  std::unique_ptr<KeptCalls, KeptCallsDeleter> kept;
};

/// The collectives' state of `state` (made with it: no lock).
inline CollectiveScratch& scratch_of(CommState& state) noexcept {
  return static_cast<CollectiveScratch&>(*state.layers);
}
inline const CollectiveScratch& scratch_of(const CommState& state) noexcept {
  return static_cast<const CollectiveScratch&>(*state.layers);
}

/// Scratch of at least `bytes`: Options::workspace when given (checked big enough), else the
/// communicator's own, grown when not capturing.
void* acquire_workspace(CommState& comm, const Options& options, std::size_t bytes,
                        cudaStream_t stream);

}  // namespace symmcomm::detail
