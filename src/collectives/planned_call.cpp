#include "planned_call.hpp"
#include "call_prerequisites.hpp"

#include "scale_swizzle.hpp"
#include "scratch.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <string>

#include "comm/dev_comm.hpp"
#include "comm/launch_order.hpp"
#include "comm/wait_internal.hpp"
#include "core/cuda_utils.hpp"
#include "memory/provenance_internal.hpp"
#include "symmcomm/comm/group.hpp"
#include "symmcomm/comm/wait.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/logging.hpp"
#include "symmcomm/runtime.hpp"

namespace symmcomm::detail {

CommState& usable_state(const Communicator& comm, const char* what) {
  SYMMCOMM_EXPECTS(comm, what << ": comm is empty");
  state_of(comm)->check_usable(what);
  return *state_of(comm);
}

PlannedBuffer planned_buffer(const char* name, const void* ptr, std::size_t bytes) {
  SYMMCOMM_EXPECTS(bytes == 0 || ptr != nullptr, name << " is null (" << bytes << " bytes)");
  PlannedBuffer b;
  b.name = name;
  b.ptr = ptr;
  b.bytes = bytes;
  return b;
}

void resolve_provenance(const CommState& comm, std::vector<PlannedBuffer>& buffers) {
  constexpr std::size_t kInline = 16;
  ProvenanceRegistry::Query queries[kInline];
  for (std::size_t first = 0; first < buffers.size(); first += kInline) {
    std::size_t const n = std::min(kInline, buffers.size() - first);
    for (std::size_t i = 0; i < n; ++i) {
      queries[i] = ProvenanceRegistry::Query{buffers[first + i].ptr, buffers[first + i].bytes};
    }
    // Answers land in the buffers themselves (no copy of freshly written structs).
    ProvenanceAccess::lookup_strided(ProvenanceRegistry::global(), queries, n, comm.id,
                                     &buffers[first].provenance, sizeof(PlannedBuffer));
  }
  for (auto& b : buffers) {
    if (b.bytes == 0) {
      b.provenance.status = ProvenanceStatus::Symmetric;  // nothing to move: no constraint
      continue;
    }
    if (b.provenance.symmetric()) continue;
    // Windows are known to be on the communicator's device; other memory is checked.
    int const device = device_of_pointer(b.ptr);
    SYMMCOMM_EXPECTS(device == comm.device,
                     b.name << " " << b.ptr << " (" << b.bytes << " bytes) is "
                            << (device < 0 ? std::string("not device memory")
                                           : "on device " + std::to_string(device))
                            << ", but the communicator's rank " << comm.rank << " is on device "
                            << comm.device);
  }
}

bool staging_usable(const CommState& comm, const Options& options, std::size_t send_bytes,
                    std::size_t recv_bytes) {
  if (!options.allow_staging) return false;
  const Staging& s = options.staging;
  if (s.send == nullptr || s.recv == nullptr || s.send_bytes < send_bytes ||
      s.recv_bytes < recv_bytes) {
    return false;
  }
  auto& registry = ProvenanceRegistry::global();
  return registry.lookup(s.send, send_bytes, comm.id).symmetric() &&
         registry.lookup(s.recv, recv_bytes, comm.id).symmetric();
}

namespace {
// True when a buffer with bytes lies in a window (empty buffers count as symmetric for the
// planner but touch nothing).
bool touches_window(const Plan& plan, const std::vector<PlannedBuffer>& buffers) {
  if (plan.path != Path::Fallback || plan.staged) return true;
  for (const PlannedBuffer& b : buffers) {
    if (b.bytes > 0 && b.provenance.symmetric()) return true;
  }
  return false;
}

}  // namespace

void before_enqueue(CommState& comm, const Options& options, const Plan& plan,
                    const std::vector<PlannedBuffer>& buffers, cudaStream_t stream) {
  if (plan.path == Path::LsaKernel) {
    order_after_last_use(comm, stream);
    return;
  }
  // NCCL chooses its symmetric kernels from its own window lookup (from 2.29 with only the
  // side peers access registered), whatever symmcomm planned: fence whenever NCCL is called on
  // a window by a version with the bug, unless NCCL said the communicator has no symmetric
  // support at all (then it never runs those kernels, and the fence would only slow small
  // calls down).
  if (options.pdl_fence && !comm.nccl_symmetric_off &&
      nccl_has_pdl_stale_input_bug(comm.caps.runtime_version) && touches_window(plan, buffers)) {
    enqueue_pdl_fence(stream);
  }
}

void record_plan(CommState& comm, const Plan& plan, const std::vector<PlannedBuffer>& buffers,
                 cudaStream_t stream, const char* operation, const char* type, std::size_t count) {
  CaptureInfo const capture = capture_info(stream);
  if (touches_window(plan, buffers)) mark_use(comm, stream, capture);
  note_graph_use(comm, capture);
  comm.stats.calls[static_cast<std::size_t>(plan.path)].fetch_add(1, std::memory_order_relaxed);
  SYMMCOMM_LOG_DEBUG(operation << " " << type << " count " << count << " on rank " << comm.rank
                               << "/" << comm.size << " -> " << plan.reason());
}

bool lsa_kernel_usable(const CommState& comm) {
  return lsa::production_available() && dev_comm_handle(comm) != nullptr &&
         comm.size <= lsa::kMaxRanks;
}

lsa::Peers lsa_peers(const CommState& comm) {
  return lsa::Peers::production_of(comm.rank, comm.size, dev_comm_handle(comm),
                                   comm.lsa_launch_share(), comm.caps.lsa_gpu_sms,
                                   device_abort_word(comm));
}

void fill_ll_scratch(const CommState& comm, lsa::LlScratchView& args) {
  args.rank = comm.rank;
  args.size = comm.size;
  args.scratch = scratch_of(comm).window.window;
  args.calls = scratch_of(comm).window.calls;
  args.abort_word = device_abort_word(comm);
}

void refuse_in_group(const char* operation, const char* why) {
  SYMMCOMM_EXPECTS(!Group::active(),
                   operation << " (" << why << ") cannot run inside a symmcomm::Group: NCCL "
                             << "enqueues grouped calls only at the end of the group, after the "
                             << "kernels that must follow them. Drive each rank from its own "
                             << "thread instead");
}

PlannedCall::PlannedCall(CommState& state, Operation op, const Options& options,
                         const char* operation)
    : state_(state), options_(options), operation_(operation), in_group_(Group::active()) {
  request_.operation = op;
  request_.capabilities = &state.caps;
  request_.comm_size = state.size;
  request_.choice = options.path;
  request_.buffers.reserve(6);  // an NVFP4 call's three tensors per side without regrowth
}

PlannedCall& PlannedCall::types(DataType send, DataType recv) {
  request_.send_type = send;
  request_.recv_type = recv;
  return *this;
}

PlannedCall& PlannedCall::per_rank(std::size_t bytes, bool equal_counts) {
  request_.bytes_per_rank = bytes;
  request_.equal_counts = equal_counts;
  return *this;
}

PlannedCall& PlannedCall::staging_usable(bool usable) {
  // Inside a Group NCCL enqueues only at the group's end, after the copies that need it: the
  // staged sequence cannot run there, so Auto must not plan it.
  request_.staging_usable = usable && !in_group_;
  return *this;
}

PlannedCall& PlannedCall::lsa_kernel(bool exists) {
  request_.lsa_kernel_available = exists && !in_group_ && lsa_kernel_usable(state_);
  return *this;
}

void PlannedCall::refuse_in_group(const char* why) const {
  if (in_group_) detail::refuse_in_group(operation_, why);
}

PlannedCall& PlannedCall::buffer(Slot slot, const char* name, const void* ptr, std::size_t bytes,
                                 bool peer_accessed, bool nccl_accessed) {
  request_.buffers.push_back(planned_buffer(name, ptr, bytes));
  PlannedBuffer& b = request_.buffers.back();
  b.slot = slot;
  b.peer_accessed = peer_accessed;
  b.nccl_accessed = nccl_accessed;
  return *this;
}

PlannedCall& PlannedCall::part(Slot side, int index, const char* name, const void* ptr,
                               std::size_t bytes, bool peer_accessed) {
  SYMMCOMM_EXPECTS(side == Slot::SendPart || side == Slot::RecvPart,
                   operation_ << ": part of a slot that has no parts (a bug in symmcomm)");
  buffer(side, name, ptr, bytes, peer_accessed);
  request_.buffers.back().part = index;
  return *this;
}

PlannedCall& PlannedCall::device_counts(bool counts_in_lines, bool counts_gathered) {
  request_.device_counts = true;
  request_.counts_in_lines = counts_in_lines;
  request_.counts_gathered = counts_gathered;
  return *this;
}

PlannedCall& PlannedCall::quantize_first(const void* staging, std::size_t bytes) {
  request_.quantize_first = true;
  if (staging != nullptr) {
    // Only this rank writes it; NCCL reads it as the gather's send side.
    buffer(Slot::StagingSend, "Options::staging.send", staging, bytes, false, true);
  } else {
    request_.quantized_send_bytes = bytes;
  }
  return *this;
}

const Plan& PlannedCall::decide(cudaStream_t stream) {
  SYMMCOMM_EXPECTS(!decided_, operation_ << ": planned twice (a bug in symmcomm)");
  generation_ = ProvenanceAccess::generation(ProvenanceRegistry::global());
  resolve_provenance(state_, request_.buffers);
  plan_ = plan_call(state_, request_, options_, stream, operation_);
  decided_ = true;
  return plan_;
}

const Provenance& PlannedCall::provenance(Slot slot, int index) const {
  for (const PlannedBuffer& b : request_.buffers) {
    if (b.slot == slot && b.part == index) return b.provenance;
  }
  SYMMCOMM_FAIL(operation_ << ": no planned buffer in slot " << static_cast<int>(slot) << " part "
                           << index << " (a bug in symmcomm)");
}

void PlannedCall::before_enqueue(cudaStream_t stream) const {
  detail::before_enqueue(state_, options_, plan_, request_.buffers, stream);
}

void PlannedCall::record(cudaStream_t stream, const char* type, std::size_t count) const {
  record_plan(state_, plan_, request_.buffers, stream, operation_, type, count);
}

}  // namespace symmcomm::detail
