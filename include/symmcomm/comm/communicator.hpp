#pragma once
/// @file communicator.hpp
/// @brief symmcomm::Communicator: an NCCL communicator, owned or borrowed, with its rank, size,
/// device and capabilities (symmetric-memory support, LSA team size) probed once.

#include <nccl.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "symmcomm/path.hpp"
#include "symmcomm/runtime.hpp"

namespace symmcomm {

/// @brief What a communicator can do, probed once when it is wrapped.
struct Capabilities {
  NcclVersion runtime_version{};  ///< NCCL loaded at run time
  bool probed = false;            ///< false when wrapped with Probe::No
  bool symmetric_memory = false;  ///< NCCL can run symmetric kernels on this communicator
  int lsa_team_size = 1;          ///< ranks reachable by load/store (NVLink/PCIe P2P)
  /// Most ranks of the communicator sharing one GPU (NCCL 2.30's NCCL_MULTI_RANK_GPU_ENABLE),
  /// agreed by every rank when symmetric memory is supported; 1 otherwise.
  int ranks_per_gpu = 1;
  /// SMs each rank's LSA kernels may count on, the same on every rank (the fewest SMs of any
  /// rank's GPU divided by ranks_per_gpu): symmcomm's kernels size their grids from it so that
  /// every CTA can be resident at once. 0 when not probed or without symmetric memory.
  int lsa_sm_share = 0;
  /// The fewest SMs of any rank's GPU, the same on every rank: the LSA kernels' grid caps and
  /// the LSA barriers the device communicator reserves scale with it. 0 as lsa_sm_share.
  int lsa_gpu_sms = 0;
  std::string reason;  ///< why symmetric_memory is false
  /// `reason` interned for the life of the process (what plans point to, so that planning a
  /// call copies no string); null for Capabilities built by hand.
  const char* reason_text = nullptr;
  /// @brief True when the LSA team spans the whole communicator (needed by our own kernels).
  bool lsa_covers(int comm_size) const noexcept {
    return symmetric_memory && lsa_team_size == comm_size;
  }
};

/// @brief Per-communicator counters of collective calls by path (thread-safe).
struct CommStats {
  std::array<std::atomic<std::uint64_t>, kPathCount> calls{};  ///< by Path (use count())
  /// @brief Of those, calls that repeated one of the communicator's recent calls of symmcomm's
  /// kernel exactly (same tensors, options and windows; it keeps 8) and were launched with its
  /// plan and arguments, without being validated and planned again.
  std::atomic<std::uint64_t> replayed{0};
  /// @brief Calls that took `path` so far.
  std::uint64_t count(Path path) const noexcept {
    return calls[static_cast<std::size_t>(path)].load(std::memory_order_relaxed);
  }
  /// @brief Calls replayed so far (see `replayed`).
  std::uint64_t replays() const noexcept { return replayed.load(std::memory_order_relaxed); }
};

class Communicator;

/// @brief A communicator's shared bookkeeping: opaque, defined inside the library (its owners
/// of windows keep it alive so that teardown runs deregister -> free -> destroy).
struct CommState;
/// @brief The library's own access to a Communicator's state (defined inside the library).
struct CommAccess;

/// @brief An NCCL communicator with symmcomm's bookkeeping. Move-only.
///
/// Ownership: `own()` destroys the ncclComm_t once the Communicator *and* every buffer or pool
/// registered through it are gone (they share its state), so teardown is always
/// deregister -> free -> destroy. `borrow()` never destroys it; releasing the wrapper while
/// buffers still live logs an error and makes those buffers refuse further use.
///
/// CUDA graphs: NCCL keeps a communicator until every CUDA graph that captured its work is
/// destroyed, and its ncclCommDestroy waits for that without a bound. symmcomm counts the graphs
/// that captured its collectives; when an owned communicator's last reference goes while any
/// still exists, it logs a warning and leaves the NCCL communicator (and its own scratch)
/// allocated, so the graphs stay valid, rather than hang. Destroy graphs before the
/// communicator.
class Communicator {
 public:
  /// @brief Whether wrapping probes capabilities. Probing is **collective** (it creates and keeps
  /// an NCCL device communicator): every rank must wrap at the same point.
  enum class Probe { Yes, No };

  Communicator() = default;
  /// @brief Takes ownership of `comm`. **Collective** when probing. @throws NcclError, LogicError
  static Communicator own(ncclComm_t comm, Probe probe = Probe::Yes);
  /// @brief Wraps an engine's communicator without taking ownership. **Collective** when probing.
  static Communicator borrow(ncclComm_t comm, Probe probe = Probe::Yes);

  /// @brief Takes over the other's communicator; the other is left empty.
  Communicator(Communicator&&) noexcept = default;
  /// @brief Releases this one's communicator (as the destructor does), then takes the other's.
  Communicator& operator=(Communicator&& other) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator();

  /// @brief The wrapped NCCL communicator (null when empty).
  ncclComm_t get() const noexcept;
  /// @brief This rank, in [0, size()) (0 when empty).
  int rank() const noexcept;
  /// @brief Number of ranks (0 when empty).
  int size() const noexcept;
  /// @brief The CUDA device of this rank (-1 when empty).
  int device() const noexcept;
  /// @brief Process-unique identifier (used by the provenance registry; 0 when empty).
  std::uint64_t id() const noexcept;
  /// @brief What was probed at wrap time.
  const Capabilities& capabilities() const;
  /// @brief Collective calls per path so far.
  const CommStats& stats() const;
  /// @brief True when this object wraps a communicator.
  explicit operator bool() const noexcept { return state_ != nullptr; }

  /// @brief NCCL's asynchronous error state of this communicator (`ncclCommGetAsyncError`):
  /// ncclSuccess while healthy, ncclInProgress during non-blocking operations, an error once a
  /// peer failed, a network error occurred or the communicator was aborted.
  ncclResult_t async_error() const;
  /// @brief Throws NcclError (naming the communicator, rank and NCCL's last error) when
  /// async_error() reports an error.
  void check_async_error() const;
  /// @brief Aborts the communicator (`ncclCommAbort`): NCCL work that can no longer complete
  /// (a peer died) is cancelled and NCCL's resources are freed. Afterwards every symmcomm call
  /// on it, its buffers or pools throws LogicError ("... was aborted"); buffers and pools free
  /// their memory without NCCL deregistration. Local and immediate; idempotent. For a borrowed
  /// communicator this aborts the caller's ncclComm_t, which must not be used afterwards.
  ///
  /// Limit: symmcomm's own LSA kernels wait in NCCL's LSA barriers. From NCCL 2.30.4 those
  /// barriers poll the communicator's abort flag, so abort() also ends a kernel whose peer never
  /// arrives; on older NCCL (2.28, 2.29) such a kernel keeps spinning on the GPU after abort()
  /// until the process exits. Waits on the host never hang either way: symmcomm::wait and every
  /// internal wait time out (SYMMCOMM_WAIT_TIMEOUT_S) with an error naming the communicator.
  void abort();

 private:
  friend struct CommAccess;
  explicit Communicator(std::shared_ptr<CommState> state) : state_(std::move(state)) {}
  void release() noexcept;
  friend void probe_capabilities(const std::vector<Communicator*>& comms);
  std::shared_ptr<CommState> state_;
};

// An owner (or the sole wrapper of a borrowed communicator): moved, never copied.
static_assert(!std::is_copy_constructible_v<Communicator> &&
              std::is_nothrow_move_constructible_v<Communicator>);

/// @brief Probes several communicators of one process concurrently (one thread each), as a
/// single thread driving several ranks must. **Collective** over those ranks.
void probe_capabilities(const std::vector<Communicator*>& comms);

/// @brief Creates one communicator per device in this process (`ncclCommInitRankConfig` per
/// device inside one group), rank i on devices[i], and probes them. Empty `devices` = all
/// visible GPUs. `config` (may be null) is passed to NCCL as is.
/// @throws LogicError for an empty machine or a bad device id, NcclError from NCCL.
std::vector<Communicator> create_local_communicators(std::vector<int> devices = {},
                                                     ncclConfig_t* config = nullptr);

}  // namespace symmcomm
