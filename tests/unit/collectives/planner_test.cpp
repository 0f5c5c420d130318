#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectives/planner.hpp"
#include "collectives/thresholds.hpp"
#include "symmcomm/error.hpp"

namespace {

using namespace symmcomm;

Capabilities caps(bool symmetric, int lsa = 8) {
  Capabilities c;
  c.probed = true;
  c.symmetric_memory = symmetric;
  c.lsa_team_size = symmetric ? lsa : 1;
  c.reason = symmetric ? "" : "isAllDirectP2p 0";
  return c;
}

PlannedBuffer buffer(const char* name, ProvenanceStatus status) {
  PlannedBuffer b;
  b.name = name;
  b.ptr = reinterpret_cast<const void*>(std::uintptr_t{0x1000});
  b.bytes = 4096;
  b.provenance.status = status;
  return b;
}

PlanRequest request(Operation op, DataType send, DataType recv, const Capabilities& c,
                    ProvenanceStatus send_status, ProvenanceStatus recv_status) {
  PlanRequest r;
  r.operation = op;
  r.send_type = send;
  r.recv_type = recv;
  r.capabilities = &c;
  r.comm_size = 8;
  r.bytes_per_rank = 4096;
  r.buffers = {buffer("send.data", send_status), buffer("recv.data", recv_status)};
  return r;
}

struct Case {
  Operation op;
  DataType send;
  DataType recv;
};

// Every operation x format: NCCL can gather anything, but only sums unscaled bf16/fp32.
std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (DataType t :
       {DataType::Nvfp4, DataType::Fp8E4M3, DataType::Fp8E5M2, DataType::Bf16, DataType::Fp32}) {
    cases.push_back({Operation::AllGather, t, t});
  }
  for (DataType t : {DataType::Bf16, DataType::Fp32})
    cases.push_back({Operation::ReduceScatter, t, t});
  for (DataType in : {DataType::Nvfp4, DataType::Fp8E4M3, DataType::Fp8E5M2}) {
    for (DataType out : {DataType::Bf16, DataType::Fp32, in}) {
      cases.push_back({Operation::ReduceScatter, in, out});
    }
  }
  return cases;
}

// What NCCL itself can run, written out here rather than taken from the library: any
// all-gather (bytes move as they are), and a plain sum of unscaled bf16 or fp32.
bool native(const Case& c) {
  if (c.op == Operation::AllGather) return true;
  bool const bf16 = c.send == DataType::Bf16 && c.recv == DataType::Bf16;
  bool const fp32 = c.send == DataType::Fp32 && c.recv == DataType::Fp32;
  return bf16 || fp32;
}

TEST(Planner, TableOfEveryOperationFormatAndProvenance) {
  Capabilities const with = caps(true), without = caps(false);
  std::vector<ProvenanceStatus> const statuses = {
      ProvenanceStatus::Symmetric, ProvenanceStatus::NotRegistered,
      ProvenanceStatus::OtherCommunicator, ProvenanceStatus::StraddlesWindowEnd};
  int symmetric_plans = 0;
  for (const Case& c : all_cases()) {
    for (const Capabilities* cap : {&with, &without}) {
      for (auto s : statuses) {
        for (auto r : statuses) {
          Plan const p = plan_collective(request(c.op, c.send, c.recv, *cap, s, r));
          bool const all_symmetric =
              s == ProvenanceStatus::Symmetric && r == ProvenanceStatus::Symmetric;
          bool const expect_symmetric = cap->symmetric_memory && all_symmetric && native(c);
          EXPECT_EQ(p.path, expect_symmetric ? Path::NcclSymmetric : Path::Fallback)
              << to_string(c.send) << "->" << to_string(c.recv) << " " << p.reason();
          symmetric_plans += p.path == Path::NcclSymmetric ? 1 : 0;
          if (!expect_symmetric) {
            if (!cap->symmetric_memory) {
              EXPECT_EQ(p.why, PlanReason::NoSymmetricSupport);
              EXPECT_NE(p.reason().find("isAllDirectP2p 0"), std::string::npos);
            } else if (!native(c)) {
              EXPECT_EQ(p.why, PlanReason::ScaledReduction);
            } else {
              EXPECT_EQ(p.why, PlanReason::BufferNotSymmetric);
              EXPECT_EQ(p.buffer_index, s != ProvenanceStatus::Symmetric ? 0 : 1);
            }
          }
        }
      }
    }
  }
  // Exactly one cell per natively-run case takes NCCL's symmetric path: both buffers symmetric
  // on a communicator with support. Five all-gathers (one per format) and two sums.
  EXPECT_EQ(symmetric_plans, 7);
}

TEST(Planner, ForcingAnImpossiblePathNamesTheBuffer) {
  Capabilities const c = caps(true);
  auto r = request(Operation::AllGather, DataType::Nvfp4, DataType::Nvfp4, c,
                   ProvenanceStatus::Symmetric, ProvenanceStatus::NotRegistered);
  r.choice = PathChoice::NcclSymmetric;
  try {
    plan_collective(r);
    FAIL() << "no throw";
  } catch (const LogicError& e) {
    std::string const m = e.what();
    EXPECT_NE(m.find("Options::path = nccl-symmetric cannot be taken"), std::string::npos) << m;
    EXPECT_NE(m.find("recv.data 0x1000 (4096 bytes) is not inside any symmetric window"),
              std::string::npos)
        << m;
  }
  r.choice = PathChoice::LsaKernel;
  EXPECT_THROW(plan_collective(r), LogicError);
  r.choice = PathChoice::Fallback;
  EXPECT_EQ(plan_collective(r).path, Path::Fallback);
  EXPECT_EQ(plan_collective(r).why, PlanReason::ForcedFallback);
}

TEST(Planner, ForcedSymmetricOnAScaledReductionSaysWhy) {
  Capabilities const c = caps(true);
  auto r = request(Operation::ReduceScatter, DataType::Nvfp4, DataType::Bf16, c,
                   ProvenanceStatus::Symmetric, ProvenanceStatus::Symmetric);
  r.choice = PathChoice::NcclSymmetric;
  try {
    plan_collective(r);
    FAIL() << "no throw";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("per-rank-scaled"), std::string::npos) << e.what();
  }
}

TEST(Planner, VariableCountsTakeTheFallback) {
  Capabilities const c = caps(true);
  auto r = request(Operation::AllGather, DataType::Bf16, DataType::Bf16, c,
                   ProvenanceStatus::Symmetric, ProvenanceStatus::Symmetric);
  r.equal_counts = false;
  Plan const p = plan_collective(r);
  EXPECT_EQ(p.path, Path::Fallback);
  EXPECT_EQ(p.why, PlanReason::VariableCounts);
}

TEST(Planner, StagingOnlyWhenUsableAndSmall) {
  Capabilities const c = caps(true);
  auto r = request(Operation::AllGather, DataType::Bf16, DataType::Bf16, c,
                   ProvenanceStatus::NotRegistered, ProvenanceStatus::NotRegistered);
  EXPECT_EQ(plan_collective(r).path, Path::Fallback);
  r.staging_usable = true;
  Plan p = plan_collective(r);
  EXPECT_EQ(p.path, Path::NcclSymmetric);
  EXPECT_TRUE(p.staged);
  EXPECT_NE(p.reason().find("staged"), std::string::npos);
  r.bytes_per_rank = thresholds::kStagingMaxBytesPerRank + 1;
  EXPECT_EQ(plan_collective(r).path, Path::Fallback);
  Capabilities const none = caps(false);
  r = request(Operation::AllGather, DataType::Bf16, DataType::Bf16, none,
              ProvenanceStatus::NotRegistered, ProvenanceStatus::NotRegistered);
  r.staging_usable = true;
  EXPECT_EQ(plan_collective(r).path, Path::Fallback);
}

TEST(Planner, LsaKernelChosenWhenAvailableAndCovering) {
  Capabilities const c = caps(true, 8);
  auto r = request(Operation::ReduceScatter, DataType::Nvfp4, DataType::Bf16, c,
                   ProvenanceStatus::Symmetric, ProvenanceStatus::Symmetric);
  r.lsa_kernel_available = true;
  EXPECT_EQ(plan_collective(r).path, Path::LsaKernel);
  Capabilities const partial = caps(true, 4);  // LSA team smaller than the communicator
  r.capabilities = &partial;
  EXPECT_EQ(plan_collective(r).path, Path::Fallback);
  r.choice = PathChoice::LsaKernel;
  EXPECT_THROW(plan_collective(r), LogicError);
}

TEST(Planner, LsaKernelNeedsOnlyPeerAccessedBuffersSymmetric) {
  Capabilities const c = caps(true, 8);
  // Push all-gather: a plain send buffer is fine for the LSA kernel, not for NCCL's.
  auto r = request(Operation::AllGather, DataType::Nvfp4, DataType::Nvfp4, c,
                   ProvenanceStatus::NotRegistered, ProvenanceStatus::Symmetric);
  r.buffers[0].peer_accessed = false;
  r.lsa_kernel_available = true;
  Plan p = plan_collective(r);
  EXPECT_EQ(p.path, Path::LsaKernel);
  // NCCL 2.28's rule (both sides registered) blocks NCCL here: the reason says so and names
  // the plain send buffer.
  EXPECT_EQ(p.why, PlanReason::NcclCannot);
  EXPECT_EQ(p.nccl_blocker, PlanReason::BufferNotSymmetric);
  EXPECT_NE(p.reason().find("cannot run this call (send.data"), std::string::npos) << p.reason();
  // Without the kernel the same call falls back, naming the plain send buffer.
  r.lsa_kernel_available = false;
  p = plan_collective(r);
  EXPECT_EQ(p.path, Path::Fallback);
  EXPECT_NE(p.reason().find("send.data"), std::string::npos) << p.reason();
  // A plain receive buffer blocks the LSA kernel, and forcing it names that buffer.
  r = request(Operation::AllGather, DataType::Nvfp4, DataType::Nvfp4, c,
              ProvenanceStatus::Symmetric, ProvenanceStatus::NotRegistered);
  r.buffers[0].peer_accessed = false;
  r.lsa_kernel_available = true;
  EXPECT_EQ(plan_collective(r).path, Path::Fallback);
  r.choice = PathChoice::LsaKernel;
  try {
    plan_collective(r);
    FAIL() << "forced lsa-kernel with a plain receive buffer was accepted";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("recv.data"), std::string::npos) << e.what();
  }
}

TEST(Planner, AutoPrefersLsaGatherOnlyBelowTheThreshold) {
  Capabilities const c = caps(true, 8);
  auto r = request(Operation::AllGather, DataType::Nvfp4, DataType::Nvfp4, c,
                   ProvenanceStatus::Symmetric, ProvenanceStatus::Symmetric);
  r.lsa_kernel_available = true;
  r.bytes_per_rank = thresholds::kLsaAllGatherMaxBytesPerRank;
  EXPECT_EQ(plan_collective(r).path, Path::LsaKernel);
  r.bytes_per_rank = thresholds::kLsaAllGatherMaxBytesPerRank + 1;
  Plan const p = plan_collective(r);
  EXPECT_EQ(p.path, Path::NcclSymmetric);
  EXPECT_EQ(p.why, PlanReason::NcclFasterHere);
  EXPECT_NE(p.reason().find("thresholds.hpp"), std::string::npos);
  // Where NCCL has no equivalent the LSA kernel wins at any size: quantized reduce-scatter,
  // variable counts.
  r.equal_counts = false;
  EXPECT_EQ(plan_collective(r).path, Path::LsaKernel);
  auto q = request(Operation::ReduceScatter, DataType::Fp8E4M3, DataType::Fp32, c,
                   ProvenanceStatus::Symmetric, ProvenanceStatus::NotRegistered);
  q.buffers[1].peer_accessed = false;
  q.lsa_kernel_available = true;
  q.bytes_per_rank = std::size_t{1} << 30;
  EXPECT_EQ(plan_collective(q).path, Path::LsaKernel);
}

// The push-model BF16 reduce-scatter (an LSA kernel where the executor says it fits) is Auto's
// choice up to its measured limit; NCCL's symmetric reduce-scatter above it.
TEST(Planner, AutoPrefersThePushReduceScatterOnlyBelowTheThreshold) {
  Capabilities const c = caps(true, 8);
  auto r = request(Operation::ReduceScatter, DataType::Bf16, DataType::Bf16, c,
                   ProvenanceStatus::Symmetric, ProvenanceStatus::Symmetric);
  r.lsa_kernel_available = true;
  r.bytes_per_rank = thresholds::kLsaReduceScatterMaxBytesPerRank;
  Plan p = plan_collective(r);
  EXPECT_EQ(p.path, Path::LsaKernel);
  EXPECT_EQ(p.why, PlanReason::LsaKernelFaster);
  r.bytes_per_rank = thresholds::kLsaReduceScatterMaxBytesPerRank + 2;
  p = plan_collective(r);
  EXPECT_EQ(p.path, Path::NcclSymmetric);
  EXPECT_EQ(p.why, PlanReason::NcclFasterHere);
  // No kernel for the call (FP32, or past the push kernel's slot): NCCL's, whatever the size.
  r.bytes_per_rank = 1024;
  r.lsa_kernel_available = false;
  EXPECT_EQ(plan_collective(r).path, Path::NcclSymmetric);
}

TEST(Planner, FusedQuantizeGatherFallsBackWithItsOwnReason) {
  Capabilities const c = caps(true, 8);
  auto r = request(Operation::AllGather, DataType::Bf16, DataType::Nvfp4, c,
                   ProvenanceStatus::NotRegistered, ProvenanceStatus::Symmetric);
  r.buffers[0].peer_accessed = false;
  r.lsa_kernel_available = true;
  EXPECT_EQ(plan_collective(r).path, Path::LsaKernel);
  r.lsa_kernel_available = false;
  Plan const p = plan_collective(r);
  EXPECT_EQ(p.path, Path::Fallback);
  EXPECT_EQ(p.why, PlanReason::FusedQuantize);
  EXPECT_NE(p.reason().find("quantized first"), std::string::npos) << p.reason();
  r.choice = PathChoice::NcclSymmetric;
  EXPECT_THROW(plan_collective(r), LogicError);
}

// quantize_all_gather: the LSA kernel quantizes on the way; NCCL's path gathers a copy quantized
// first, which NCCL 2.28 needs in a window (Options::staging.send) and 2.29+ does not.
TEST(Planner, QuantizeFirstGatherFusesOnLsaAndSaysWhatNcclNeeds) {
  Capabilities c = caps(true, 8);
  c.runtime_version = NcclVersion{2, 28, 9};
  auto r = request(Operation::AllGather, DataType::Bf16, DataType::Nvfp4, c,
                   ProvenanceStatus::NotRegistered, ProvenanceStatus::Symmetric);
  r.buffers[0].peer_accessed = false;
  r.buffers[0].nccl_accessed = false;  // the bf16 input: never NCCL's
  r.quantize_first = true;
  r.quantized_send_bytes = 1536;
  r.lsa_kernel_available = true;
  Plan p = plan_collective(r);
  EXPECT_EQ(p.path, Path::LsaKernel);
  EXPECT_EQ(p.why, PlanReason::LsaKernelFuses);
  EXPECT_NE(p.reason().find("quantizes on the way"), std::string::npos) << p.reason();
  // Large gathers too: the fusion, not a size threshold, decides.
  r.bytes_per_rank = std::size_t{1} << 30;
  EXPECT_EQ(plan_collective(r).why, PlanReason::LsaKernelFuses);

  // 2.28, copy in the workspace: NCCL's path is refused with what to pass.
  r.lsa_kernel_available = false;
  p = plan_collective(r);
  EXPECT_EQ(p.path, Path::Fallback);
  EXPECT_EQ(p.why, PlanReason::QuantizedSendInWorkspace);
  EXPECT_NE(p.reason().find("pass Options::staging.send, 1536 bytes or more"), std::string::npos)
      << p.reason();
  r.choice = PathChoice::NcclSymmetric;
  try {
    plan_collective(r);
    ADD_FAILURE() << "NCCL 2.28 planned with the quantized copy outside a window";
  } catch (const LogicError& e) {
    std::string const m = e.what();
    EXPECT_NE(m.find("Options::path = nccl-symmetric cannot be taken"), std::string::npos) << m;
    EXPECT_NE(m.find("Options::staging.send, 1536 bytes"), std::string::npos) << m;
  }

  // 2.28 with a staging buffer: planned as the send side NCCL touches.
  r.quantized_send_bytes = 0;
  PlannedBuffer staging = buffer("Options::staging.send", ProvenanceStatus::NotRegistered);
  staging.peer_accessed = false;
  r.buffers.insert(r.buffers.begin() + 1, staging);
  try {
    plan_collective(r);
    ADD_FAILURE() << "NCCL 2.28 planned with Options::staging.send outside a window";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("Options::staging.send"), std::string::npos) << e.what();
  }
  r.buffers[1].provenance.status = ProvenanceStatus::Symmetric;
  EXPECT_EQ(plan_collective(r).path, Path::NcclSymmetric);
  r.choice = PathChoice::Auto;
  p = plan_collective(r);
  EXPECT_EQ(p.path, Path::NcclSymmetric) << p.reason();
  EXPECT_EQ(p.why, PlanReason::AllSymmetric);

  // 2.29+: the receive side is enough, the copy may stay in the workspace.
  r.buffers.erase(r.buffers.begin() + 1);
  r.quantized_send_bytes = 1536;
  c.runtime_version = NcclVersion{2, 29, 2};
  EXPECT_EQ(plan_collective(r).path, Path::NcclSymmetric);
  r.choice = PathChoice::NcclSymmetric;
  EXPECT_EQ(plan_collective(r).why, PlanReason::Forced);
  // ... but not with the receive side outside a window.
  r.buffers[1].provenance.status = ProvenanceStatus::NotRegistered;
  EXPECT_THROW(plan_collective(r), LogicError);
}

TEST(Planner, MissingCapabilitiesAreRefused) {
  PlanRequest r;
  try {
    plan_collective(r);
    ADD_FAILURE() << "a request without capabilities was planned";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("capabilities is null"), std::string::npos) << e.what();
  }
}

// Empty buffers are marked symmetric by the executors before planning (nothing moves); the
// planner itself judges every buffer it is given by its provenance alone.
TEST(Planner, JudgesEveryBufferByItsProvenanceAlone) {
  Capabilities const c = caps(true);
  auto r = request(Operation::AllGather, DataType::Bf16, DataType::Bf16, c,
                   ProvenanceStatus::Symmetric, ProvenanceStatus::NotRegistered);
  r.buffers[1].bytes = 0;
  EXPECT_EQ(plan_collective(r).why, PlanReason::BufferNotSymmetric);
  r.buffers[1].provenance.status = ProvenanceStatus::Symmetric;  // as resolve_provenance marks it
  EXPECT_EQ(plan_collective(r).path, Path::NcclSymmetric);
}

// Reasons say what happened: forced, NCCL cannot, or faster by a measured threshold.
TEST(Planner, ReasonsSayWhatHappened) {
  Capabilities const c = caps(true, 8);
  auto q = request(Operation::ReduceScatter, DataType::Nvfp4, DataType::Bf16, c,
                   ProvenanceStatus::Symmetric, ProvenanceStatus::NotRegistered);
  q.buffers[1].peer_accessed = false;
  q.lsa_kernel_available = true;
  Plan p = plan_collective(q);
  EXPECT_EQ(p.path, Path::LsaKernel);
  EXPECT_EQ(p.why, PlanReason::NcclCannot);
  EXPECT_EQ(p.nccl_blocker, PlanReason::ScaledReduction);
  EXPECT_EQ(p.reason().find("faster"), std::string::npos) << p.reason();
  EXPECT_NE(p.reason().find("per-rank-scaled"), std::string::npos) << p.reason();
  q.choice = PathChoice::LsaKernel;
  EXPECT_EQ(plan_collective(q).why, PlanReason::Forced);
  EXPECT_NE(plan_collective(q).reason().find("forced by Options::path"), std::string::npos);
  auto g = request(Operation::AllGather, DataType::Bf16, DataType::Bf16, c,
                   ProvenanceStatus::Symmetric, ProvenanceStatus::Symmetric);
  g.lsa_kernel_available = true;
  EXPECT_EQ(plan_collective(g).why, PlanReason::LsaKernelFaster);  // below the threshold
  EXPECT_NE(plan_collective(g).reason().find("thresholds.hpp"), std::string::npos);
  g.choice = PathChoice::NcclSymmetric;
  EXPECT_EQ(plan_collective(g).why, PlanReason::Forced);
}

}  // namespace

namespace {
// NCCL's registration rule follows the loaded version: 2.28 needs both sides in windows, from
// 2.29 the side peers access (an all-gather's receive buffer) is enough.
TEST(Planner, NcclSymmetricRegistrationRuleFollowsTheLoadedNccl) {
  Capabilities c228 = caps(true), c230 = caps(true);
  c228.runtime_version = NcclVersion{2, 28, 9};
  c230.runtime_version = NcclVersion{2, 30, 7};
  for (const Capabilities* c : {&c228, &c230}) {
    PlanRequest r = request(Operation::AllGather, DataType::Bf16, DataType::Bf16, *c,
                            ProvenanceStatus::NotRegistered, ProvenanceStatus::Symmetric);
    r.buffers[0].peer_accessed = false;  // as all_gather marks its send side
    r.choice = PathChoice::NcclSymmetric;
    if (c == &c230) {
      EXPECT_EQ(plan_collective(r).path, Path::NcclSymmetric);
    } else {
      try {
        plan_collective(r);
        ADD_FAILURE() << "2.28 must refuse a plain send buffer";
      } catch (const LogicError& e) {
        EXPECT_NE(std::string(e.what()).find("send.data"), std::string::npos) << e.what();
      }
    }
    // The peer-accessed side is needed by every version.
    PlanRequest plain_recv = request(Operation::AllGather, DataType::Bf16, DataType::Bf16, *c,
                                     ProvenanceStatus::Symmetric, ProvenanceStatus::NotRegistered);
    plain_recv.choice = PathChoice::NcclSymmetric;
    EXPECT_THROW(plan_collective(plain_recv), LogicError);
  }
}
}  // namespace
