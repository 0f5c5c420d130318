#pragma once
/// @file options.hpp
/// @brief Options of symmcomm's collectives and the plan a call takes.

#include <cstddef>
#include <cstdint>
#include <string>

#include "symmcomm/comm/communicator.hpp"
#include "symmcomm/memory/provenance.hpp"
#include "symmcomm/path.hpp"

namespace symmcomm {

/// @brief Symmetric scratch for staging (copying plain buffers into symmetric memory to use a
/// symmetric path, as vLLM does for small all-reduces). Both ranges must lie in symmetric
/// windows of the communicator, at the same offsets on every rank (e.g. from one SymmAllocator).
struct Staging {
  void* send = nullptr;        ///< symmetric scratch the send side is copied into
  std::size_t send_bytes = 0;  ///< capacity: at least the payload of this rank
  void* recv = nullptr;        ///< symmetric scratch the receive side lands in, then copied out
  std::size_t recv_bytes = 0;  ///< capacity: at least the payload of all ranks
};

/// @brief Options of a collective call: execution policy only (how a call runs, never what its
/// tensors are: an NVFP4 tensor's scale layout is Nvfp4View::scale_layout).
struct Options {
  /// The path to take: Auto (the planner's choice) or one forced (refused with the reason
  /// where it cannot run).
  PathChoice path = PathChoice::Auto;
  /// Device scratch for quantized reduce-scatter fallbacks (see reduce_scatter_workspace_bytes);
  /// null: a workspace owned by the communicator, grown outside graph capture.
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;  ///< bytes at `workspace`
  /// Copy plain buffers through `staging` when that allows a symmetric path and is faster.
  bool allow_staging = false;
  Staging staging{};  ///< the scratch `allow_staging` copies through
  /// Before NCCL's symmetric kernels, on NCCL versions where they may read stale input under
  /// programmatic dependent launch (2.28.0-2.30.6: nccl_has_pdl_stale_input_bug), enqueue
  /// enqueue_pdl_fence() so they start only after the producer of the input completed. Turn
  /// off only when no kernel before the collective uses programmatic dependent launch.
  bool pdl_fence = true;
  /// Agree the path with every rank before running the call. The planner decides from this
  /// rank's buffers; a rank whose buffers lie in windows and one whose buffers do not would take
  /// different paths, and the one entering symmcomm's LSA kernel (or NCCL's symmetric kernel)
  /// would wait for the other forever. With agreement every rank all-gathers its plan (one tiny
  /// NCCL all-gather and a host synchronisation of `stream`) and, where plans differ or a rank
  /// could not plan, every rank throws LogicError naming the ranks and their paths instead of
  /// hanging. Costs a round trip per call: meant for debugging and start-up checks, not for
  /// graph capture (refused there). `SYMMCOMM_AGREE_PLANS=1` turns it on for every call.
  bool agree_plan = false;
};

/// @brief The collectives symmcomm plans.
enum class Operation : std::uint8_t { AllGather, ReduceScatter };

/// @brief Why the planner chose a path (formatted by Plan::reason()).
enum class PlanReason : std::uint8_t {
  AllSymmetric,              ///< every buffer in a window of this communicator
  LsaKernelFaster,           ///< our LSA kernel beats NCCL here
  ForcedFallback,            ///< Options::path == Fallback
  NoSymmetricSupport,        ///< communicator has no symmetric memory support
  BufferNotSymmetric,        ///< buffers[buffer_index] is not in a window of this communicator
  VariableCounts,            ///< NCCL's symmetric kernels need equal counts per rank
  ScaledReduction,           ///< NCCL cannot reduce per-rank-scaled quantized data
  LsaKernelUnavailable,      ///< no LSA kernel for this operation and type in this build
  Staged,                    ///< plain buffers copied through symmetric staging scratch
  FusedQuantize,             ///< quantizing while gathering needs symmcomm's kernel, not NCCL
  NcclFasterHere,            ///< both symmetric paths work; NCCL's is preferred at this size
  Forced,                    ///< Options::path forced nccl-symmetric or lsa-kernel (and it can run)
  NcclCannot,                ///< NCCL cannot run it symmetrically (nccl_blocker says why): LSA does
  LsaKernelFuses,            ///< symmcomm's LSA kernel quantizes and gathers in one pass
  QuantizedSendInWorkspace,  ///< NCCL 2.28 would need the quantized copy in a window
  DeviceCounts,              ///< counts on the device: rows gathered at capacity, then compacted
  DeviceCountsInOneLaunch,   ///< counts on the device: symmcomm's LSA kernel moves counted rows
};

/// @brief The path a call took and why.
struct Plan {
  Path path = Path::Fallback;                   ///< the path the call took
  PlanReason why = PlanReason::ForcedFallback;  ///< why (reason() gives the text)
  bool staged = false;  ///< plain buffers were copied through Options::staging
  /// Device counts on symmcomm's LSA kernel: carried in the scratch window's lines beside the
  /// rows (no barrier before them), where the rows fit a scratch slot.
  bool counts_in_lines = false;
  /// A reduce_scatterv in the lines whose counts were gathered before the call (counts.count
  /// null, device_counts.hpp): the rows go out at once, without waiting for peers' counts.
  bool counts_gathered = false;
  int buffer_index = -1;              ///< the buffer the reason is about, if any
  const char* buffer_name = nullptr;  ///< its name ("recv.block_scales", ...)
  Provenance provenance{};            ///< its provenance
  const void* buffer_ptr = nullptr;   ///< its address
  std::size_t buffer_bytes = 0;       ///< its size in bytes
  const char* capability_note = "";   ///< the communicator's reason when unsupported (interned)
  /// NcclCannot: why NCCL's symmetric kernels cannot run the call (the buffer fields above say
  /// which buffer, for BufferNotSymmetric).
  PlanReason nccl_blocker = PlanReason::AllSymmetric;
  /// @brief Human-readable explanation ("fallback: recv.data 0x.. (4096 bytes) is not inside
  /// any symmetric window ...").
  std::string reason() const;
};

}  // namespace symmcomm
