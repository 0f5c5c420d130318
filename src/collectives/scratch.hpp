#pragma once
// Private: what the collectives keep per communicator (attached to its CommState, which knows
// it only as an opaque object): the workspace of fallbacks that need one (quantized
// reduce-scatter, device counts, swizzled scales on NCCL's paths), Options::agree_plan's
// device words and the call kept for replay (replay.hpp).

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <cuda_runtime_api.h>

#include "comm/comm_state.hpp"
#include "symmcomm/collectives/options.hpp"

namespace symmcomm::detail {

struct KeptCall;  // replay.cpp
struct KeptCallDeleter {
  void operator()(KeptCall* kept) const noexcept;
};

struct CollectiveScratch {
  explicit CollectiveScratch(int on_device) : device(on_device) {}
  CollectiveScratch(const CollectiveScratch&) = delete;
  CollectiveScratch& operator=(const CollectiveScratch&) = delete;
  /// Frees everything (the communicator's teardown runs it once no call can use it).
  ~CollectiveScratch();

  int device;
  /// Grown outside graph capture, at least doubling. An outgrown workspace is kept until the
  /// communicator goes (`retired`): freeing it would synchronise the device, and earlier calls
  /// or captured graphs may still use it.
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  std::vector<void*> retired;
  /// Options::agree_plan's words (one per rank, and this rank's), made on first use.
  void* agreement = nullptr;
  /// The communicator's last call that ran as one launch of symmcomm's kernel (replay.hpp),
  /// under `replay_mutex`.
  std::mutex replay_mutex;
  std::unique_ptr<KeptCall, KeptCallDeleter> kept;
};

/// The collectives' scratch of `state`, made on first use.
CollectiveScratch& scratch_of(CommState& state);

/// Scratch of at least `bytes`: Options::workspace when given (checked big enough), else the
/// communicator's own, grown when not capturing.
void* acquire_workspace(CommState& comm, const Options& options, std::size_t bytes,
                        cudaStream_t stream);

}  // namespace symmcomm::detail
