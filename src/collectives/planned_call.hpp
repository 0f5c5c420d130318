#pragma once
// Private: one call's planning, assembled the same way by every executor (PlannedCall: the
// buffers by name, their provenance, the plan, agreement when asked, the bookkeeping around the
// enqueue; planned_call.cpp, plan_agreement.cpp).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/planner.hpp"
#include "comm/comm_state.hpp"
#include "symmcomm/collectives/options.hpp"

namespace symmcomm::detail {
/// A buffer a call touches (provenance filled in by resolve_provenance). LogicError naming
/// `name` for a null pointer with a non-zero size.
PlannedBuffer planned_buffer(const char* name, const void* ptr, std::size_t bytes);

/// Looks up every buffer's provenance for `comm` under one registry lock; non-symmetric
/// buffers are checked to be device memory of the communicator's device (LogicError naming
/// the buffer otherwise).
void resolve_provenance(const CommState& comm, std::vector<PlannedBuffer>& buffers);

/// True when Options::allow_staging is on and `staging` can hold `send_bytes` / `recv_bytes` in
/// windows of `comm` (a Group is PlannedCall's business).
bool staging_usable(const CommState& comm, const Options& options, std::size_t send_bytes,
                    std::size_t recv_bytes);

/// SYMMCOMM_AGREE_PLANS=1: Options::agree_plan for every call (read once).
bool agree_plans_from_environment() noexcept;

/// plan_collective(request), agreed with every rank when Options::agree_plan (or
/// SYMMCOMM_AGREE_PLANS=1) asks for it: then a rank that cannot plan, or plans another path
/// than its peers, makes every rank throw LogicError naming the ranks' paths (see options.hpp).
Plan plan_call(CommState& comm, const PlanRequest& request, const Options& options,
               cudaStream_t stream, const char* operation);

/// Before enqueueing a planned call's work on `stream`. LSA path: orders the launch after the
/// communicator's last windowed work when that went to another stream (its kernels share the
/// LSA barriers). NCCL paths: enqueue_pdl_fence() when Options::pdl_fence is on, the loaded
/// NCCL has the stale-input bug, any buffer NCCL touches lies in a window and NCCL has not said
/// the communicator lacks symmetric support.
void before_enqueue(CommState& comm, const Options& options, const Plan& plan,
                    const std::vector<PlannedBuffer>& buffers, cudaStream_t stream);

/// After enqueueing it: remembers the call as the communicator's last windowed work when it
/// touched a window (window teardown waits for it), counts the plan in the communicator's
/// stats and logs it at debug level.
void record_plan(CommState& comm, const Plan& plan, const std::vector<PlannedBuffer>& buffers,
                 cudaStream_t stream, const char* operation, const char* type, std::size_t count);

/// One call's planning, assembled the same way by every collective: the request's fields from
/// the communicator and the options, the buffers the call touches by name, their provenance
/// resolved under one registry lock, the plan (agreed across ranks when asked), and the
/// bookkeeping around the enqueue. Executors read buffers' provenance by name afterwards.
class PlannedCall {
 public:
  PlannedCall(CommState& state, Operation op, const Options& options, const char* operation);
  PlannedCall(const PlannedCall&) = delete;
  PlannedCall& operator=(const PlannedCall&) = delete;

  /// Element types (a gather that moves bytes as they are leaves the defaults).
  PlannedCall& types(DataType send, DataType recv);
  /// Payload bytes per rank, and whether every rank's count is the same.
  PlannedCall& per_rank(std::size_t bytes, bool equal_counts = true);
  /// Options::allow_staging with symmetric scratch big enough for this call (never in a Group).
  PlannedCall& staging_usable(bool usable);
  /// symmcomm has an LSA kernel for this call (lsa_kernel_usable() is checked as well, and no
  /// LSA kernel runs in a Group).
  PlannedCall& lsa_kernel(bool exists);
  /// A buffer the call touches, in `slot`, named `name` in messages (LogicError naming it for
  /// a null pointer with bytes); `peer_accessed` false for a side only this rank touches (see
  /// PlannedBuffer).
  PlannedCall& buffer(Slot slot, const char* name, const void* ptr, std::size_t bytes,
                      bool peer_accessed = true, bool nccl_accessed = true);
  /// Part `index` of a gather's send (Slot::SendPart) or receive (Slot::RecvPart) side.
  PlannedCall& part(Slot side, int index, const char* name, const void* ptr, std::size_t bytes,
                    bool peer_accessed = true);
  /// A call whose counts are on the device (device_counts.hpp; the planner's device_counts),
  /// whose rows fit the counts-in-lines kernels or not (the planner's counts_in_lines).
  /// `counts_gathered`: a reduce-scatter whose counts were gathered before the call.
  PlannedCall& device_counts(bool counts_in_lines, bool counts_gathered = false);
  /// A fused quantize + all-gather whose NCCL path gathers a quantized copy of `bytes`: in
  /// `staging` (planned as "Options::staging.send") when not null, else in the workspace.
  PlannedCall& quantize_first(const void* staging, std::size_t bytes);

  /// Resolves provenance and plans; once per call. @throws LogicError as plan_call does.
  const Plan& decide(cudaStream_t stream);
  const Plan& plan() const { return plan_; }
  /// The provenance registry's generation read before the buffers were looked up: the plan
  /// holds while it does (replay.hpp).
  std::uint64_t generation() const noexcept { return generation_; }
  /// The provenance of the buffer in `slot` (part `index` of a Part slot); LogicError if none
  /// was added there (a bug in symmcomm).
  const Provenance& provenance(Slot slot, int index = -1) const;
  const std::vector<PlannedBuffer>& buffers() const { return request_.buffers; }
  /// The communicator and the operation's name (as in messages).
  const CommState& state() const noexcept { return state_; }
  const char* operation() const noexcept { return operation_; }

  /// Whether the call runs inside a symmcomm::Group: decided once, at construction, and the
  /// one place the Group decides anything (no LSA kernel and no staging there; refused paths
  /// through refuse_in_group).
  bool in_group() const noexcept { return in_group_; }
  /// LogicError naming the operation and `why` when the call runs inside a Group: for work
  /// that must follow NCCL's (which a Group defers to its end).
  void refuse_in_group(const char* why) const;

  /// before_enqueue() and record_plan() with this call's plan and buffers.
  void before_enqueue(cudaStream_t stream) const;
  void record(cudaStream_t stream, const char* type, std::size_t count) const;

 private:
  CommState& state_;
  const Options& options_;
  const char* operation_;
  bool in_group_;
  PlanRequest request_;
  Plan plan_;
  std::uint64_t generation_ = 0;
  bool decided_ = false;
};

}  // namespace symmcomm::detail
