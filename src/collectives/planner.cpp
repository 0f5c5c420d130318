#include "collectives/planner.hpp"

#include <sstream>

#include "collectives/thresholds.hpp"
#include "comm/comm_state.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/runtime.hpp"

namespace symmcomm {

namespace {
// The text of `why` for plan `p` (whose buffer and capability fields it may quote).
void describe(std::ostream& os, PlanReason why, const Plan& p) {
  switch (why) {
    case PlanReason::AllSymmetric:
      os << "every buffer lies in a symmetric window of this communicator";
      break;
    case PlanReason::LsaKernelFaster:
      os << "symmcomm's LSA kernel, measured faster than NCCL at this size (thresholds.hpp)";
      break;
    case PlanReason::ForcedFallback:
    case PlanReason::Forced:
      os << "forced by Options::path";
      break;
    case PlanReason::NoSymmetricSupport:
      os << "the communicator has no symmetric memory support (" << p.capability_note << ")";
      break;
    case PlanReason::BufferNotSymmetric:
      os << p.provenance.describe(p.buffer_name != nullptr ? p.buffer_name : "buffer", p.buffer_ptr,
                                  p.buffer_bytes);
      break;
    case PlanReason::VariableCounts:
      os << "counts differ between ranks and NCCL's symmetric kernels need equal counts";
      break;
    case PlanReason::ScaledReduction:
      os << "NCCL cannot sum per-rank-scaled quantized data (it would round to the low-precision "
            "type at every step); symmcomm dequantizes and accumulates in fp32";
      break;
    case PlanReason::LsaKernelUnavailable:
      os << "symmcomm has no LSA kernel for this operation, type and size";
      break;
    case PlanReason::Staged:
      os << "plain buffers are copied through symmetric staging scratch";
      break;
    case PlanReason::FusedQuantize:
      os << "NCCL moves bytes only: quantizing on the way needs symmcomm's LSA kernel, so the "
            "input is quantized first and then gathered";
      break;
    case PlanReason::NcclFasterHere:
      os << "every buffer lies in a symmetric window; NCCL's symmetric kernel is preferred at "
            "this size (thresholds.hpp)";
      break;
    case PlanReason::LsaKernelFuses:
      os << "symmcomm's LSA kernel quantizes on the way into peers' windows (NCCL's path would "
            "quantize in a pass of its own first)";
      break;
    case PlanReason::QuantizedSendInWorkspace:
      os << "the input is quantized into symmcomm's workspace, outside any window, and the loaded "
            "NCCL runs its symmetric kernels only with the send side in a window too: pass "
            "Options::staging.send, "
         << p.buffer_bytes << " bytes or more in a symmetric window of this communicator";
      break;
    case PlanReason::DeviceCounts:
      os << "the counts are on the device: NCCL moves every rank's rows at capacity ("
         << p.buffer_bytes << " bytes per rank, whatever the counts) after gathering the counts, "
         << "with one more pass on the device (a gather's compaction, a reduce-scatter's layout "
            "at capacity)";
      break;
    case PlanReason::DeviceCountsInOneLaunch:
      os << "the counts are on the device: symmcomm's LSA kernel "
         << (p.counts_gathered
                 ? "takes every rank's count from counts.counts, gathered before the call, and "
                   "sends the rows at once (no count exchange before them; each rank checks its "
                   "peers' counts in the scratch window's lines)"
             : p.counts_in_lines ? "carries them in the scratch window's lines beside the rows "
                                   "(no barrier before the rows)"
                                 : "exchanges them through the window behind a barrier (the "
                                   "rows do not fit a scratch slot)")
         << " and moves only the rows that count, in one launch (NCCL's path would move "
         << p.buffer_bytes << " bytes per rank at capacity, with one more pass on the device)";
      break;
    case PlanReason::NcclCannot:
      os << "NCCL's symmetric kernels cannot run this call (";
      describe(os, p.nccl_blocker, p);
      os << "); symmcomm's LSA kernel can";
      break;
  }
}
}  // namespace

std::string Plan::reason() const {
  std::ostringstream os;
  os << to_string(path) << (staged ? " (staged)" : "")
     << (counts_gathered   ? " (counts in the lines, gathered before)"
         : counts_in_lines ? " (counts in the lines)"
                           : "")
     << ": ";
  describe(os, why, *this);
  return os.str();
}

namespace {

// The communicator's reason as a stable pointer (no string copy on the hot path).
const char* capability_reason(const Capabilities& c) {
  return c.reason_text != nullptr ? c.reason_text : detail::intern(c.reason);
}

Plan make(Path path, PlanReason why) {
  Plan p;
  p.path = path;
  p.why = why;
  return p;
}

// Why a path cannot be taken: small enough to live in registers (the full Plan, with its
// provenance record, is built once, for the answer only).
struct Blocker {
  PlanReason why = PlanReason::AllSymmetric;  // AllSymmetric = not blocked
  int buffer = -1;                            // BufferNotSymmetric: the buffer
  const char* note = nullptr;                 // NoSymmetricSupport: the communicator's reason
  explicit operator bool() const { return why != PlanReason::AllSymmetric; }
};

Plan fallback(const PlanRequest& r, const Blocker& b) {
  Plan p = make(Path::Fallback, b.why);
  if (b.why == PlanReason::NoSymmetricSupport) p.capability_note = b.note;
  if (b.why == PlanReason::QuantizedSendInWorkspace) p.buffer_bytes = r.quantized_send_bytes;
  if (b.why == PlanReason::BufferNotSymmetric) {
    const PlannedBuffer& buffer = r.buffers[static_cast<std::size_t>(b.buffer)];
    p.buffer_index = b.buffer;
    p.buffer_name = buffer.name;
    p.buffer_ptr = buffer.ptr;
    p.buffer_bytes = buffer.bytes;
    p.provenance = buffer.provenance;
  }
  return p;
}

// The first buffer the path touches that is not symmetric, or -1: for NCCL's path (`nccl`)
// the buffers NCCL touches, for the LSA path all; of those only the ones peers access when
// `peer_accessed_only`.
int first_non_symmetric(const PlanRequest& r, bool peer_accessed_only, bool nccl) {
  for (std::size_t i = 0; i < r.buffers.size(); ++i) {
    const PlannedBuffer& b = r.buffers[i];
    if (peer_accessed_only && !b.peer_accessed) continue;
    if (nccl && !b.nccl_accessed) continue;
    if (!b.provenance.symmetric()) return static_cast<int>(i);
  }
  return -1;
}

// Auto's choice between two usable symmetric paths (thresholds.hpp).
bool lsa_preferred_over_nccl(const PlanRequest& r) {
  if (r.operation == Operation::AllGather) {
    return r.bytes_per_rank <= thresholds::kLsaAllGatherMaxBytesPerRank;
  }
  return nccl_reduces_natively(r.send_type, r.recv_type) &&
         r.bytes_per_rank <= thresholds::kLsaReduceScatterMaxBytesPerRank;
}

// What stops NCCL's symmetric kernels, if anything.
Blocker nccl_symmetric_blocker(const PlanRequest& r) {
  if (!r.capabilities->symmetric_memory) {
    return {PlanReason::NoSymmetricSupport, -1, capability_reason(*r.capabilities)};
  }
  if (r.operation == Operation::AllGather && r.send_type != r.recv_type && !r.quantize_first) {
    return {PlanReason::FusedQuantize};
  }
  bool const native =
      r.operation == Operation::AllGather || nccl_reduces_natively(r.send_type, r.recv_type);
  if (!native) return {PlanReason::ScaledReduction};
  if (!r.equal_counts) return {PlanReason::VariableCounts};
  // NCCL 2.28 runs its symmetric kernels only when send and receive buffers are both in
  // windows; from 2.29 the side peers access is enough (NCCL decides from its own lookup).
  bool const peer_side_only = nccl_symmetric_needs_peer_side_only(r.capabilities->runtime_version);
  int const bad = first_non_symmetric(r, peer_side_only, true);
  if (bad >= 0) return {PlanReason::BufferNotSymmetric, bad};
  if (r.quantize_first && r.quantized_send_bytes > 0 && !peer_side_only) {
    return {PlanReason::QuantizedSendInWorkspace};
  }
  return {};
}

// What stops symmcomm's LSA kernel, if anything.
Blocker lsa_blocker(const PlanRequest& r) {
  // The communicator's own limits first: they explain why no kernel is available either.
  if (!r.capabilities->lsa_covers(r.comm_size)) {
    return {PlanReason::NoSymmetricSupport, -1,
            r.capabilities->symmetric_memory ? "the LSA team does not span the communicator"
                                             : capability_reason(*r.capabilities)};
  }
  if (!r.lsa_kernel_available) return {PlanReason::LsaKernelUnavailable};
  int const bad = first_non_symmetric(r, true, false);
  if (bad >= 0) return {PlanReason::BufferNotSymmetric, bad};
  return {};
}

[[noreturn]] void refuse(const PlanRequest& r, const Blocker& blocker) {
  std::string why = fallback(r, blocker).reason();
  why = why.substr(why.find(": ") + 2);
  SYMMCOMM_FAIL("Options::path = " << to_string(r.choice) << " cannot be taken: " << why);
}

}  // namespace

Plan plan_collective(const PlanRequest& r) {
  SYMMCOMM_EXPECTS(r.capabilities != nullptr, "plan_collective: capabilities is null");
  if (r.device_counts) {
    // symmcomm's one-launch LSA kernels (counts exchanged through the window, then only the
    // rows that count) are Auto's choice wherever they can run: they move only the rows that
    // count and skip the fallback's pass at capacity (docs/design-notes.md has the figures).
    if (r.choice == PathChoice::LsaKernel) {
      if (Blocker const b = lsa_blocker(r)) refuse(r, b);
      Plan p = make(Path::LsaKernel, PlanReason::Forced);
      p.buffer_bytes = r.bytes_per_rank;
      p.counts_in_lines = r.counts_in_lines;
      p.counts_gathered = r.counts_in_lines && r.counts_gathered;
      return p;
    }
    if (r.choice == PathChoice::Auto && !lsa_blocker(r)) {
      Plan p = make(Path::LsaKernel, PlanReason::DeviceCountsInOneLaunch);
      p.buffer_bytes = r.bytes_per_rank;
      p.counts_in_lines = r.counts_in_lines;
      p.counts_gathered = r.counts_in_lines && r.counts_gathered;
      return p;
    }
    SYMMCOMM_EXPECTS(r.choice == PathChoice::Auto || r.choice == PathChoice::Fallback,
                     "Options::path " << to_string(r.choice) << ": "
                                      << (r.operation == Operation::AllGather
                                              ? "a gather with counts on the device runs on "
                                                "symmcomm's one-launch LSA kernel (Auto's choice "
                                                "where it can run) or on the fallback path "
                                                "(NCCL's calls with every rank's rows at "
                                                "capacity, then compaction on the device)"
                                              : "a reduce-scatter with counts on the device runs "
                                                "on symmcomm's one-launch LSA kernel (BF16; "
                                                "Auto's choice where it can run) or on the "
                                                "fallback path (its rows laid out at capacity, "
                                                "then NCCL's reduce-scatter)"));
    Plan p = make(Path::Fallback, PlanReason::DeviceCounts);
    p.buffer_bytes = r.bytes_per_rank;
    return p;
  }
  switch (r.choice) {
    case PathChoice::Fallback:
      return make(Path::Fallback, PlanReason::ForcedFallback);
    case PathChoice::NcclSymmetric: {
      if (Blocker const b = nccl_symmetric_blocker(r)) refuse(r, b);
      return make(Path::NcclSymmetric, PlanReason::Forced);
    }
    case PathChoice::LsaKernel: {
      if (Blocker const b = lsa_blocker(r)) refuse(r, b);
      return make(Path::LsaKernel, PlanReason::Forced);
    }
    case PathChoice::Auto:
      break;
  }
  bool const lsa_usable = !lsa_blocker(r);
  // Fusing the quantization into the gather saves NCCL's path a pass over the data.
  if (lsa_usable && r.quantize_first) return make(Path::LsaKernel, PlanReason::LsaKernelFuses);
  Blocker const blocker = nccl_symmetric_blocker(r);
  if (lsa_usable && blocker) {
    // NCCL cannot: say why, with the buffer or capability the blocker is about.
    Plan p = fallback(r, blocker);
    p.path = Path::LsaKernel;
    p.nccl_blocker = blocker.why;
    p.why = PlanReason::NcclCannot;
    return p;
  }
  if (lsa_usable && lsa_preferred_over_nccl(r)) {
    return make(Path::LsaKernel, PlanReason::LsaKernelFaster);
  }
  if (!blocker) {
    return make(Path::NcclSymmetric,
                lsa_usable ? PlanReason::NcclFasterHere : PlanReason::AllSymmetric);
  }
  if (blocker.why == PlanReason::BufferNotSymmetric && r.staging_usable &&
      r.bytes_per_rank <= thresholds::kStagingMaxBytesPerRank) {
    Plan p = make(Path::NcclSymmetric, PlanReason::Staged);
    p.staged = true;
    return p;
  }
  return fallback(r, blocker);
}

}  // namespace symmcomm
