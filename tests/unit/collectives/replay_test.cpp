// The kept calls' key (src/collectives/replay.hpp): which calls may be kept, that every field of
// a call's descriptor and options, and every change of the windows, makes a call another one,
// and which entry a call is kept in. The replay itself runs on the device
// (tests/multi_rank/replay_test.cpp).

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "collectives/call.hpp"
#include "collectives/replay.hpp"
#include "memory/provenance_internal.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/memory/provenance.hpp"

namespace {

using namespace symmcomm;
using namespace symmcomm::detail;

template <class T>
T* fake(std::uintptr_t a) {
  return reinterpret_cast<T*>(a);
}

CollectiveCall nvfp4_gather() {
  TensorRef send;
  send.dtype = DataType::Nvfp4;
  send.data = fake<void>(0x1000);
  send.block_scales = fake<void>(0x2000);
  send.scales = fake<float>(0x3000);
  send.count = 4096;
  TensorRef recv = send;
  recv.data = fake<void>(0x4000);
  recv.block_scales = fake<void>(0x5000);
  recv.scales = fake<float>(0x6000);
  recv.count = 4096 * 8;
  return gather_call(send, recv);
}

TEST(ReplayKey, EveryFieldOfTheCallMakesAnotherCall) {
  CollectiveCall const base = nvfp4_gather();
  EXPECT_TRUE(same_call(base, base));
  std::vector<std::pair<std::string, std::function<void(CollectiveCall&)>>> const changes = {
      {"op", [](CollectiveCall& c) { c.op = Collective::ReduceScatter; }},
      {"counts", [](CollectiveCall& c) { c.counts = Counts::Host; }},
      {"send.dtype", [](CollectiveCall& c) { c.send.dtype = DataType::Bf16; }},
      {"send.data", [](CollectiveCall& c) { c.send.data = fake<void>(0x1100); }},
      {"send.block_scales", [](CollectiveCall& c) { c.send.block_scales = nullptr; }},
      {"send.scales", [](CollectiveCall& c) { c.send.scales = nullptr; }},
      {"send.count", [](CollectiveCall& c) { c.send.count = 2048; }},
      {"recv.scale_layout",
       [](CollectiveCall& c) { c.recv.scale_layout = ScaleLayout::Swizzled128x4; }},
      {"recv.row_elements", [](CollectiveCall& c) { c.recv.row_elements = 7168; }},
      {"recv.data", [](CollectiveCall& c) { c.recv.data = fake<void>(0x4100); }},
      {"recv.count", [](CollectiveCall& c) { c.recv.count = 4096; }},
      {"host_counts", [](CollectiveCall& c) { c.host_counts = fake<const std::size_t>(0x10); }},
      {"host_count_entries", [](CollectiveCall& c) { c.host_count_entries = 8; }},
      {"row_elements", [](CollectiveCall& c) { c.row_elements = 64; }},
      {"items", [](CollectiveCall& c) { c.items = fake<const GatherItem>(0x20); }},
      {"item_count", [](CollectiveCall& c) { c.item_count = 1; }},
      {"row_items", [](CollectiveCall& c) { c.row_items = fake<const RowItem>(0x30); }},
      {"row_item_count", [](CollectiveCall& c) { c.row_item_count = 1; }},
      {"items_only", [](CollectiveCall& c) { c.items_only = true; }},
      {"quantize_scale", [](CollectiveCall& c) { c.quantize_scale = fake<const float>(0x40); }},
  };
  for (const auto& [field, change] : changes) {
    CollectiveCall other = base;
    change(other);
    EXPECT_FALSE(same_call(base, other)) << field;
    EXPECT_FALSE(same_call(other, base)) << field;
  }
}

TEST(ReplayKey, EveryOptionMakesAnotherCall) {
  Options const base;
  EXPECT_TRUE(same_options(base, base));
  std::vector<std::pair<std::string, std::function<void(Options&)>>> const changes = {
      {"path", [](Options& o) { o.path = PathChoice::LsaKernel; }},
      {"workspace", [](Options& o) { o.workspace = fake<void>(0x100); }},
      {"workspace_bytes", [](Options& o) { o.workspace_bytes = 256; }},
      {"allow_staging", [](Options& o) { o.allow_staging = true; }},
      {"staging.send", [](Options& o) { o.staging.send = fake<void>(0x200); }},
      {"staging.send_bytes", [](Options& o) { o.staging.send_bytes = 1; }},
      {"staging.recv", [](Options& o) { o.staging.recv = fake<void>(0x300); }},
      {"staging.recv_bytes", [](Options& o) { o.staging.recv_bytes = 1; }},
      {"pdl_fence", [](Options& o) { o.pdl_fence = false; }},
      {"agree_plan", [](Options& o) { o.agree_plan = true; }},
  };
  for (const auto& [field, change] : changes) {
    Options other = base;
    change(other);
    EXPECT_FALSE(same_options(base, other)) << field;
  }
}

TEST(ReplayKey, OnlyEqualCountCallsWithoutItemsOrAgreementAreKept) {
  CollectiveCall const call = nvfp4_gather();
  Options const options;
  EXPECT_TRUE(replayable(call, options));
  std::size_t const counts[8] = {};
  EXPECT_FALSE(replayable(with_host_counts(call, counts, 8), options));
  EXPECT_FALSE(replayable(with_device_counts(call, DeviceCounts{}, 64), options));
  GatherItem const item{fake<const void>(0x10), fake<void>(0x20), 64, "ids"};
  CollectiveCall with_item = call;
  with_item.items = &item;
  with_item.item_count = 1;
  EXPECT_FALSE(replayable(with_item, options));
  CollectiveCall only_items;
  only_items.items_only = true;
  only_items.items = &item;
  only_items.item_count = 1;
  EXPECT_FALSE(replayable(only_items, options));
  Options agree;
  agree.agree_plan = true;
  EXPECT_FALSE(replayable(call, agree));
}

TEST(ReplayKey, EveryChangeOfTheWindowsAndOnlyThatChangesTheGeneration) {
  ProvenanceRegistry reg;
  std::uint64_t g = ProvenanceAccess::generation(reg);
  auto changed = [&] {
    std::uint64_t const now = ProvenanceAccess::generation(reg);
    bool const differs = now != g;
    g = now;
    return differs;
  };
  reg.add({0x100000, 0x1000, fake<ncclWindow_vidmem>(1), 7, 0});
  EXPECT_TRUE(changed()) << "add";
  reg.add({0x200000, 0x1000, fake<ncclWindow_vidmem>(2), 9, 0});
  EXPECT_TRUE(changed()) << "add on another communicator";
  (void)reg.lookup(fake<const void>(0x100100), 0x10, 7);
  EXPECT_FALSE(changed()) << "lookup";
  EXPECT_THROW(reg.add({0x100800, 0x1000, fake<ncclWindow_vidmem>(3), 7, 0}), LogicError);
  EXPECT_FALSE(changed()) << "refused overlapping add";
  EXPECT_FALSE(reg.remove(7, fake<const void>(0x300000)));
  EXPECT_FALSE(changed()) << "remove of no window";
  EXPECT_TRUE(reg.remove(7, fake<const void>(0x100000)));
  EXPECT_TRUE(changed()) << "remove";
}

// A gather into its own receive buffer `i` (distinct calls, as an engine's alternating buffers).
CollectiveCall gather_into(std::size_t i) {
  CollectiveCall c = nvfp4_gather();
  c.recv.data = fake<void>(0x100000 * (i + 1));
  return c;
}

// Keeps `call` with `options` as keep_call does (marking the entry used) and returns it.
KeptCall& keep(KeptCalls& kept, const CollectiveCall& call, std::uint64_t generation = 1,
               const Options& options = {}) {
  KeptCall& k = kept.entry_for(call, options);
  kept.touch(k);
  k.call = call;
  k.options = options;
  k.generation = generation;
  return k;
}

bool found(KeptCalls& kept, const CollectiveCall& call, std::uint64_t generation = 1) {
  return kept.find(call, Options{}, generation, false) != nullptr;
}

TEST(KeptCalls, KeepsEveryDistinctCallUpToItsRoomAndReplacesTheLeastRecentlyUsed) {
  KeptCalls kept;
  EXPECT_FALSE(found(kept, gather_into(0))) << "nothing kept yet";
  for (std::size_t i = 0; i < kKeptCalls; ++i) keep(kept, gather_into(i));
  for (std::size_t i = 0; i < kKeptCalls; ++i) EXPECT_TRUE(found(kept, gather_into(i))) << i;
  // A replay makes its entry the most recently used: the second call is now the oldest.
  kept.touch(*kept.find(gather_into(0), Options{}, 1, false));
  keep(kept, gather_into(kKeptCalls));
  EXPECT_TRUE(found(kept, gather_into(kKeptCalls)));
  EXPECT_TRUE(found(kept, gather_into(0))) << "replayed last, so kept";
  EXPECT_FALSE(found(kept, gather_into(1))) << "the least recently used, replaced";
  for (std::size_t i = 2; i < kKeptCalls; ++i) EXPECT_TRUE(found(kept, gather_into(i))) << i;
}

TEST(KeptCalls, ACallPlannedAgainAfterTheWindowsChangedTakesItsOwnEntry) {
  KeptCalls kept;
  for (std::size_t i = 0; i < kKeptCalls; ++i) keep(kept, gather_into(i));
  EXPECT_FALSE(found(kept, gather_into(3), 2)) << "planned before the windows changed";
  KeptCall& again = keep(kept, gather_into(3), 2);
  EXPECT_EQ(&again, kept.find(gather_into(3), Options{}, 2, false));
  for (std::size_t i = 0; i < kKeptCalls; ++i) {
    EXPECT_EQ(found(kept, gather_into(i), 1), i != 3) << "no other entry replaced: " << i;
  }
}

TEST(KeptCalls, OptionsAndTheLlSwitchAreOfTheKey) {
  KeptCalls kept;
  keep(kept, gather_into(0));
  Options forced;
  forced.path = PathChoice::LsaKernel;
  EXPECT_EQ(kept.find(gather_into(0), forced, 1, false), nullptr);
  EXPECT_EQ(kept.find(gather_into(0), Options{}, 1, true), nullptr);
  keep(kept, gather_into(0), 1, forced);
  EXPECT_NE(kept.find(gather_into(0), forced, 1, false), nullptr);
  EXPECT_NE(kept.find(gather_into(0), Options{}, 1, false), nullptr) << "both kept";
}

}  // namespace
