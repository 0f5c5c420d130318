#include "symmcomm/collectives/planner.hpp"

#include <optional>
#include <sstream>

#include "symmcomm/collectives/thresholds.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm {

const char* to_string(PathChoice choice) noexcept {
  switch (choice) {
    case PathChoice::Auto:
      return "auto";
    case PathChoice::NcclSymmetric:
      return "nccl-symmetric";
    case PathChoice::LsaKernel:
      return "lsa-kernel";
    case PathChoice::Fallback:
      return "fallback";
  }
  return "unknown";
}

std::string Plan::reason() const {
  std::ostringstream os;
  os << to_string(path) << (staged ? " (staged)" : "") << ": ";
  switch (why) {
    case PlanReason::AllSymmetric:
      os << "every buffer lies in a symmetric window of this communicator";
      break;
    case PlanReason::LsaKernelFaster:
      os << "symmcomm's LSA kernel reads peers' windows directly (faster than NCCL here)";
      break;
    case PlanReason::ForcedFallback:
      os << "forced by Options::path";
      break;
    case PlanReason::NoSymmetricSupport:
      os << "the communicator has no symmetric memory support (" << capability_note << ")";
      break;
    case PlanReason::BufferNotSymmetric:
      os << provenance.describe(buffer_name != nullptr ? buffer_name : "buffer", buffer_ptr,
                                buffer_bytes);
      break;
    case PlanReason::VariableCounts:
      os << "counts differ between ranks and NCCL's symmetric kernels need equal counts";
      break;
    case PlanReason::ScaledReduction:
      os << "NCCL cannot sum per-rank-scaled quantized data (it would round to the low-precision "
            "type at every step); symmcomm dequantizes and accumulates in fp32";
      break;
    case PlanReason::LsaKernelUnavailable:
      os << "this build has no LSA kernel for this operation and type";
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
  }
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

Plan about_buffer(Path path, const PlannedBuffer& b, int index) {
  Plan p = make(path, PlanReason::BufferNotSymmetric);
  p.buffer_index = index;
  p.buffer_name = b.name;
  p.buffer_ptr = b.ptr;
  p.buffer_bytes = b.bytes;
  p.provenance = b.provenance;
  return p;
}

// The first buffer that is not symmetric (only those peers access, for the LSA path), or -1.
int first_non_symmetric(const PlanRequest& r, bool peer_accessed_only) {
  for (std::size_t i = 0; i < r.buffers.size(); ++i) {
    const PlannedBuffer& b = r.buffers[i];
    if (peer_accessed_only && !b.peer_accessed) continue;
    if (!b.provenance.symmetric()) return static_cast<int>(i);
  }
  return -1;
}

// Auto's choice between two usable symmetric paths (thresholds.hpp).
bool lsa_preferred_over_nccl(const PlanRequest& r) {
  return r.operation == Operation::AllGather &&
         r.bytes_per_rank <= thresholds::kLsaAllGatherMaxBytesPerRank;
}

// What stops NCCL's symmetric kernels, or nothing.
std::optional<Plan> nccl_symmetric_blocker(const PlanRequest& r, int bad) {
  if (!r.capabilities->symmetric_memory) {
    Plan p = make(Path::Fallback, PlanReason::NoSymmetricSupport);
    p.capability_note = capability_reason(*r.capabilities);
    return p;
  }
  if (r.operation == Operation::AllGather && r.send_type != r.recv_type) {
    return make(Path::Fallback, PlanReason::FusedQuantize);
  }
  bool const native =
      r.operation == Operation::AllGather || nccl_reduces_natively(r.send_type, r.recv_type);
  if (!native) return make(Path::Fallback, PlanReason::ScaledReduction);
  if (!r.equal_counts) return make(Path::Fallback, PlanReason::VariableCounts);
  if (bad >= 0) return about_buffer(Path::Fallback, r.buffers[static_cast<std::size_t>(bad)], bad);
  return std::nullopt;
}

std::optional<Plan> lsa_blocker(const PlanRequest& r, int bad) {
  // The communicator's own limits first: they explain why no kernel is available either.
  if (!r.capabilities->lsa_covers(r.comm_size)) {
    Plan p = make(Path::Fallback, PlanReason::NoSymmetricSupport);
    p.capability_note = r.capabilities->symmetric_memory
                            ? "the LSA team does not span the communicator"
                            : capability_reason(*r.capabilities);
    return p;
  }
  if (!r.lsa_kernel_available) return make(Path::Fallback, PlanReason::LsaKernelUnavailable);
  if (bad >= 0) return about_buffer(Path::Fallback, r.buffers[static_cast<std::size_t>(bad)], bad);
  return std::nullopt;
}

[[noreturn]] void refuse(PathChoice choice, const Plan& blocker) {
  std::string why = blocker.reason();
  why = why.substr(why.find(": ") + 2);
  SYMMCOMM_FAIL("Options::path = " << to_string(choice) << " cannot be taken: " << why);
}

}  // namespace

Plan plan_collective(const PlanRequest& r) {
  SYMMCOMM_EXPECTS(r.capabilities != nullptr, "plan_collective: capabilities is null");
  int const bad = first_non_symmetric(r, false);
  int const bad_lsa = first_non_symmetric(r, true);
  switch (r.choice) {
    case PathChoice::Fallback:
      return make(Path::Fallback, PlanReason::ForcedFallback);
    case PathChoice::NcclSymmetric: {
      if (auto blocker = nccl_symmetric_blocker(r, bad)) refuse(r.choice, *blocker);
      return make(Path::NcclSymmetric, PlanReason::AllSymmetric);
    }
    case PathChoice::LsaKernel: {
      if (auto blocker = lsa_blocker(r, bad_lsa)) refuse(r.choice, *blocker);
      return make(Path::LsaKernel, PlanReason::LsaKernelFaster);
    }
    case PathChoice::Auto:
      break;
  }
  bool const lsa_usable = !lsa_blocker(r, bad_lsa);
  auto blocker = nccl_symmetric_blocker(r, bad);
  if (lsa_usable && (blocker || lsa_preferred_over_nccl(r))) {
    return make(Path::LsaKernel, PlanReason::LsaKernelFaster);
  }
  if (!blocker) {
    return make(Path::NcclSymmetric,
                lsa_usable ? PlanReason::NcclFasterHere : PlanReason::AllSymmetric);
  }
  if (blocker->why == PlanReason::BufferNotSymmetric && r.staging_usable &&
      r.bytes_per_rank <= thresholds::kStagingMaxBytesPerRank) {
    Plan p = make(Path::NcclSymmetric, PlanReason::Staged);
    p.staged = true;
    return p;
  }
  return *blocker;
}

}  // namespace symmcomm
