// All-gathers with counts on the device, without a GPU: every argument error is named before
// anything runs (an empty communicator is never reached), the planner runs them on the fallback
// unless symmcomm's LSA kernel is asked for, saying what moves, and that kernel's launcher
// checks its arguments before any launch.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/planner.hpp"
#include "kernels/lsa.hpp"
#include "support/tensors.hpp"
#include "symmcomm/collectives/device_counts.hpp"
#include "symmcomm/error.hpp"
#include "testing/src/lsa_loopback.hpp"

namespace {

using namespace symmcomm;

using test::logic_error_text;

auto* const kDev = reinterpret_cast<std::int32_t*>(std::uintptr_t{1} << 20);
auto* const kBf16 = reinterpret_cast<bf16*>(std::uintptr_t{1} << 21);

DeviceCounts good(std::size_t capacity) {
  return DeviceCounts{kDev, capacity, kDev + 16, kDev + 32, kDev + 48};
}

TEST(DeviceCountsCallArgs, DeviceCountsAreNamed) {
  Communicator const none;
  Bf16Span const send{kBf16, 4 * 8}, recv{kBf16, 64};
  DeviceCounts c = good(4);
  c.count = nullptr;
  EXPECT_NE(logic_error_text([&] {
              all_gatherv(none, send, recv, 8, c, nullptr);
            }).find("counts.count is null (this rank's count, a device int32)"),
            std::string::npos);
  c = good(4);
  c.offsets = nullptr;
  EXPECT_NE(logic_error_text([&] {
              all_gatherv(none, send, recv, 8, c, nullptr);
            }).find("counts.counts and counts.offsets must be device arrays"),
            std::string::npos);
  c = good(4);
  c.overflow = nullptr;
  EXPECT_NE(logic_error_text([&] {
              all_gatherv(none, send, recv, 8, c, nullptr);
            }).find("counts.overflow is null"),
            std::string::npos);
  EXPECT_NE(logic_error_text([&] {
              all_gatherv(none, Bf16Span{kBf16, 31}, recv, 8, good(4), nullptr);
            }).find("send.count 31 is not counts.capacity 4 x row_elements 8"),
            std::string::npos);
  EXPECT_NE(logic_error_text([&] {
              all_gatherv(none, send, recv, 0, good(4), nullptr);
            }).find("row_elements is 0"),
            std::string::npos);
  auto* bytes = reinterpret_cast<std::uint8_t*>(kDev);
  auto* f = reinterpret_cast<float*>(kDev);
  Nvfp4View const q{bytes, bytes, f, 4 * 24};
  EXPECT_NE(logic_error_text([&] {
              all_gatherv(none, q, q, 24, good(4), nullptr);
            }).find("row_elements 24 is not a multiple of 16 (NVFP4 rows are whole blocks)"),
            std::string::npos);
  // Row items: at most kMaxRowItems, each with row bytes and both pointers (recv sized for the
  // empty communicator's 0 ranks, so the items are what is wrong).
  Bf16Span const none_recv{kBf16, 0};
  std::vector<RowItem> items(kMaxRowItems + 1, RowItem{kDev, kDev, 4, "ids"});
  EXPECT_NE(logic_error_text([&] {
              all_gatherv(none, send, none_recv, 8, items, good(4), nullptr);
            }).find("5 items; at most 4"),
            std::string::npos);
  items.assign(1, RowItem{kDev, kDev, 0, "topk_ids"});
  EXPECT_NE(logic_error_text([&] {
              all_gatherv(none, send, none_recv, 8, items, good(4), nullptr);
            }).find("items[0] (topk_ids).row_bytes is 0"),
            std::string::npos);
  items.assign(1, RowItem{kDev, nullptr, 4, "topk_weights"});
  EXPECT_NE(logic_error_text([&] {
              all_gatherv(none, send, none_recv, 8, items, good(4), nullptr);
            }).find("items[0] (topk_weights) send or recv is null"),
            std::string::npos);
  // Arguments pass, then the empty communicator is named.
  EXPECT_NE(logic_error_text([&] {
              all_gatherv(none, send, Bf16Span{kBf16, 0}, 8, good(4), nullptr);
            }).find("comm is empty"),
            std::string::npos);
}

TEST(DeviceCountsCallArgs, SwizzledScalesInTheGathersRecvAreLaidOutByRows) {
  Communicator const none;
  auto* bytes = reinterpret_cast<std::uint8_t*>(kDev);
  auto* f = reinterpret_cast<float*>(kDev);
  Nvfp4View const send{bytes, bytes, f, 4 * 16};
  // recv sized for the empty communicator's 0 ranks.
  Nvfp4View const recv = Nvfp4View{bytes, bytes, f, 0}.with_swizzled_scales(32);
  EXPECT_NE(logic_error_text([&] { all_gatherv(none, send, recv, 16, good(4), nullptr); })
                .find("recv.row_elements 32 is not row_elements 16 (swizzled block scales are "
                      "laid out by rows)"),
            std::string::npos);
  // Swizzled scales are accepted in the gather's recv: the arguments pass, then the empty
  // communicator is named.
  EXPECT_NE(logic_error_text([&] {
              all_gatherv(none, send, Nvfp4View{bytes, bytes, f, 0}.with_swizzled_scales(16), 16,
                          good(4), nullptr);
            }).find("comm is empty"),
            std::string::npos);
  // Never in a send.
  EXPECT_NE(logic_error_text([&] {
              all_gatherv(none, send.with_swizzled_scales(16), Nvfp4View{bytes, bytes, f, 0}, 16,
                          good(4), nullptr);
            }).find("send"),
            std::string::npos);
}

TEST(DeviceCountsCallArgs, ReduceScatterShapesMirrorTheGather) {
  Communicator const none;
  // The full compact tensor is the send (comm.size() x capacity rows of room), the shard recv.
  EXPECT_NE(logic_error_text([&] {
              reduce_scatterv(none, Bf16Span{kBf16, 0}, Bf16Span{kBf16, 31}, 8, good(4), nullptr);
            }).find("recv.count 31 is not counts.capacity 4 x row_elements 8"),
            std::string::npos);
  EXPECT_NE(logic_error_text([&] {
              reduce_scatterv(none, Bf16Span{kBf16, 8}, Bf16Span{kBf16, 32}, 8, good(4), nullptr);
            }).find("send.count 8 is not comm.size() 0 x counts.capacity 4 x row_elements 8"),
            std::string::npos);
  auto* bytes = reinterpret_cast<std::uint8_t*>(kDev);
  Nvfp4View const q{bytes, bytes, reinterpret_cast<float*>(kDev), 0};
  EXPECT_NE(logic_error_text([&] {
              reduce_scatterv(none, q, Bf16Span{kBf16, 0}, 24, good(4), nullptr);
            }).find("row_elements 24 is not a multiple of 16"),
            std::string::npos);
  EXPECT_NE(logic_error_text([&] {
              reduce_scatterv(none, Bf16Span{kBf16, 0}, Bf16Span{kBf16, 32}, 8, good(4), nullptr);
            }).find("comm is empty"),
            std::string::npos);
  // Counts gathered before the call (count null) pass the argument checks of a reduce-scatter.
  DeviceCounts gathered = good(4);
  gathered.count = nullptr;
  EXPECT_NE(logic_error_text([&] {
              reduce_scatterv(none, Bf16Span{kBf16, 0}, Bf16Span{kBf16, 32}, 8, gathered, nullptr);
            }).find("comm is empty"),
            std::string::npos);
}

TEST(DeviceCountsCallArgs, PlannedOnTheOneLaunchKernelWhereItRunsElseTheFallbackSayingWhatMoves) {
  Capabilities c;
  c.probed = true;
  c.symmetric_memory = true;
  c.lsa_team_size = 8;
  PlanRequest r;
  r.capabilities = &c;
  r.comm_size = 8;
  r.device_counts = true;
  r.bytes_per_rank = 40 * 144;
  Plan const p = plan_collective(r);
  EXPECT_EQ(p.path, Path::Fallback);
  EXPECT_EQ(p.why, PlanReason::DeviceCounts);
  EXPECT_NE(p.reason().find("5760 bytes per rank, whatever the counts"), std::string::npos)
      << p.reason();
  r.choice = PathChoice::NcclSymmetric;
  EXPECT_NE(logic_error_text([&] { plan_collective(r); })
                .find("Options::path nccl-symmetric: a gather with counts on the device runs on "
                      "symmcomm's one-launch LSA kernel (Auto's choice where it can run) or on "
                      "the fallback path"),
            std::string::npos);
  r.choice = PathChoice::Fallback;
  EXPECT_EQ(plan_collective(r).why, PlanReason::DeviceCounts);
  // symmcomm's LSA kernel when asked: refused, saying why, while it cannot run ...
  r.choice = PathChoice::LsaKernel;
  EXPECT_NE(logic_error_text([&] {
              plan_collective(r);
            }).find("Options::path = lsa-kernel cannot be taken"),
            std::string::npos);
  // ... taken once it can (every buffer peers touch in a window of the communicator).
  r.lsa_kernel_available = true;
  PlannedBuffer counts;
  counts.name = "counts.counts";
  counts.slot = Slot::RecvPart;
  counts.part = 0;
  counts.provenance.status = ProvenanceStatus::Symmetric;
  r.buffers.push_back(counts);
  Plan const lsa = plan_collective(r);
  EXPECT_EQ(lsa.path, Path::LsaKernel);
  EXPECT_EQ(lsa.why, PlanReason::Forced);
  // Auto takes it too, saying what NCCL's path would have moved; Fallback stays forced.
  r.choice = PathChoice::Auto;
  Plan const chosen = plan_collective(r);
  EXPECT_EQ(chosen.path, Path::LsaKernel);
  EXPECT_EQ(chosen.why, PlanReason::DeviceCountsInOneLaunch);
  EXPECT_NE(chosen.reason().find("moves only the rows that count, in one launch (NCCL's path "
                                 "would move 5760 bytes per rank at capacity"),
            std::string::npos)
      << chosen.reason();
  EXPECT_FALSE(chosen.counts_in_lines);
  EXPECT_NE(chosen.reason().find("behind a barrier (the rows do not fit a scratch slot)"),
            std::string::npos)
      << chosen.reason();
  // Rows that fit a scratch slot: the counts ride in the lines, and the reason says so; the
  // fallback never carries them there.
  r.counts_in_lines = true;
  Plan const in_lines = plan_collective(r);
  EXPECT_EQ(in_lines.path, Path::LsaKernel);
  EXPECT_TRUE(in_lines.counts_in_lines);
  EXPECT_EQ(in_lines.reason().rfind("lsa-kernel (counts in the lines): ", 0), 0u)
      << in_lines.reason();
  EXPECT_NE(in_lines.reason().find("in the scratch window's lines beside the rows"),
            std::string::npos)
      << in_lines.reason();
  // A reduce-scatter whose counts were gathered before: the rows go out at once, and the reason
  // says so; without the lines the flag means nothing.
  r.counts_gathered = true;
  Plan const gathered = plan_collective(r);
  EXPECT_TRUE(gathered.counts_gathered);
  EXPECT_EQ(gathered.reason().rfind("lsa-kernel (counts in the lines, gathered before): ", 0), 0u)
      << gathered.reason();
  EXPECT_NE(gathered.reason().find("sends the rows at once (no count exchange before them"),
            std::string::npos)
      << gathered.reason();
  r.counts_in_lines = false;
  EXPECT_FALSE(plan_collective(r).counts_gathered);
  r.counts_in_lines = true;
  r.counts_gathered = false;
  r.choice = PathChoice::LsaKernel;
  EXPECT_TRUE(plan_collective(r).counts_in_lines) << "forced onto the LSA kernel";
  r.choice = PathChoice::Fallback;
  EXPECT_FALSE(plan_collective(r).counts_in_lines);
  r.counts_in_lines = false;
  EXPECT_EQ(plan_collective(r).path, Path::Fallback);
  // A counts array outside the communicator's windows is named when the kernel is forced, and
  // sends Auto to the fallback.
  r.buffers.back().provenance.status = ProvenanceStatus::NotRegistered;
  r.choice = PathChoice::LsaKernel;
  EXPECT_NE(logic_error_text([&] { plan_collective(r); }).find("counts.counts"), std::string::npos)
      << logic_error_text([&] { plan_collective(r); });
  r.choice = PathChoice::Auto;
  EXPECT_EQ(plan_collective(r).why, PlanReason::DeviceCounts);
  r.buffers.back().provenance.status = ProvenanceStatus::Symmetric;
  // A reduce-scatter with device counts: the same choices (BF16 has the kernel; NVFP4's call
  // says it has none, and Auto takes the fallback), NCCL's symmetric path refused saying so.
  r.operation = Operation::ReduceScatter;
  r.choice = PathChoice::Auto;
  EXPECT_EQ(plan_collective(r).why, PlanReason::DeviceCountsInOneLaunch);
  r.choice = PathChoice::LsaKernel;
  EXPECT_EQ(plan_collective(r).path, Path::LsaKernel);
  r.lsa_kernel_available = false;
  EXPECT_NE(logic_error_text([&] {
              plan_collective(r);
            }).find("Options::path = lsa-kernel cannot be taken"),
            std::string::npos);
  r.choice = PathChoice::Auto;
  EXPECT_EQ(plan_collective(r).why, PlanReason::DeviceCounts);
  r.choice = PathChoice::NcclSymmetric;
  EXPECT_NE(logic_error_text([&] { plan_collective(r); })
                .find("a reduce-scatter with counts on the device runs on symmcomm's one-launch "
                      "LSA kernel (BF16; Auto's choice where it can run) or on the fallback path"),
            std::string::npos)
      << logic_error_text([&] { plan_collective(r); });
}

// Two loopback ranks whose slots all point into `words` (64 ints): host memory, for argument
// checks that fail before any launch.
detail::lsa::LoopbackPeers two_virtual_ranks(std::int32_t* words) {
  detail::lsa::LoopbackPeers peers(0, 2);
  for (int slot = 0; slot < detail::lsa::kSlots; ++slot) {
    for (int r = 0; r < 2; ++r) peers.base[slot][r] = words + 16 * slot;
  }
  return peers;
}

TEST(DeviceCountsCallArgs, OneLaunchKernelArgumentsAreCheckedBeforeAnyLaunch) {
  using detail::lsa::DeviceCountsGatherArgs;
  using detail::lsa::SymRef;
  static std::int32_t words[64];
  detail::lsa::LoopbackPeers const peers = two_virtual_ranks(words);
  DeviceCountsGatherArgs a;
  a.part[0] = DeviceCountsGatherArgs::Part{words, SymRef{0, 0}, 8, false};
  a.parts = 1;
  a.count = words;
  a.counts = SymRef{1, 0};
  a.offsets = words;
  a.overflow = words;
  a.capacity = 4;
  auto const text = [&](const DeviceCountsGatherArgs& bad) {
    return logic_error_text([&] { detail::lsa::device_counts_gather(peers, bad, nullptr); });
  };
  DeviceCountsGatherArgs b = a;
  b.parts = 0;
  EXPECT_NE(text(b).find("0 parts, outside 1..6"), std::string::npos) << text(b);
  b = a;
  b.offsets = nullptr;
  EXPECT_NE(text(b).find("count, offsets and overflow must be device pointers"), std::string::npos);
  b = a;
  b.phase = 3;
  EXPECT_NE(text(b).find("phase 3 outside 0..2"), std::string::npos);
  b = a;
  b.counts = SymRef{1, 2};
  EXPECT_NE(text(b).find("counts.counts at offset 2 is not 4-byte aligned"), std::string::npos)
      << text(b);
  b = a;
  b.part[0].swizzled = true;
  b.part[0].dst = SymRef{0, 1};
  EXPECT_NE(text(b).find("swizzled scales at offset 1 are not 4-byte aligned"), std::string::npos);
  b = a;
  b.scale_src = reinterpret_cast<const float*>(words);
  b.scale_dst = SymRef{2, 6};
  EXPECT_NE(text(b).find("recv scale at offset 6 is not 4-byte aligned"), std::string::npos);
  b = a;
  b.counts = SymRef{7, 0};
  EXPECT_NE(text(b).find("counts.counts slot 7 outside 0..3"), std::string::npos) << text(b);
}

TEST(DeviceCountsCallArgs, OneLaunchReduceScatterArgumentsAreCheckedBeforeAnyLaunch) {
  using detail::lsa::DeviceCountsReduceArgs;
  using detail::lsa::SymRef;
  alignas(16) static std::int32_t words[64];
  detail::lsa::LoopbackPeers const peers = two_virtual_ranks(words);
  DeviceCountsReduceArgs a;
  a.count = words;
  a.counts = SymRef{1, 0};
  a.offsets = words;
  a.overflow = words;
  a.capacity = 4;
  a.send = SymRef{0, 0};
  a.row_elements = 8;
  a.out = reinterpret_cast<bf16*>(words + 32);
  auto const text = [&](const DeviceCountsReduceArgs& bad) {
    return logic_error_text([&] { detail::lsa::device_counts_reduce(peers, bad, nullptr); });
  };
  DeviceCountsReduceArgs b = a;
  b.overflow = nullptr;
  EXPECT_NE(
      text(b).find("lsa device-count reduce: count, offsets and overflow must be device pointers"),
      std::string::npos)
      << text(b);
  b = a;
  b.phase = 3;
  EXPECT_NE(text(b).find("lsa device-count reduce: phase 3 outside 0..2"), std::string::npos);
  b = a;
  b.counts = SymRef{1, 2};
  EXPECT_NE(text(b).find("counts.counts at offset 2 is not 4-byte aligned"), std::string::npos);
  b = a;
  b.row_elements = 0;
  EXPECT_NE(text(b).find("row_elements is 0"), std::string::npos) << text(b);
  b = a;
  b.out = nullptr;
  EXPECT_NE(text(b).find("out is null"), std::string::npos) << text(b);
  b = a;
  b.send = SymRef{0, 1};
  EXPECT_NE(text(b).find("send.data at offset 1 is not 2-byte aligned"), std::string::npos)
      << text(b);
  // NVFP4 rows: whole blocks, codes 8-byte aligned, the scales' slots, out 16-byte aligned.
  DeviceCountsReduceArgs q = a;
  q.type = DataType::Nvfp4;
  q.row_elements = 32;
  q.block_scales = SymRef{2, 0};
  q.scale = SymRef{3, 0};
  q.out = reinterpret_cast<bf16*>(words + 32);  // 16-byte aligned with the array (alignas)
  b = q;
  b.row_elements = 24;
  EXPECT_NE(text(b).find("row_elements 24 is not whole NVFP4 blocks of 16"), std::string::npos)
      << text(b);
  b = q;
  b.send = SymRef{0, 4};
  EXPECT_NE(text(b).find("send.data at offset 4 is not 8-byte aligned"), std::string::npos)
      << text(b);
  b = q;
  b.scale = SymRef{9, 0};
  EXPECT_NE(text(b).find("send.global_scale slot 9 outside 0..3"), std::string::npos) << text(b);
  b = q;
  b.out = reinterpret_cast<bf16*>(words + 33);
  EXPECT_NE(text(b).find("out is not 16-byte aligned"), std::string::npos) << text(b);
  b = a;
  b.type = DataType::Fp32;
  EXPECT_NE(text(b).find("rows of fp32 (bf16 or nvfp4)"), std::string::npos) << text(b);
}

}  // namespace
