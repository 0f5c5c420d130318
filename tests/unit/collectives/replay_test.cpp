// The kept call's key (src/collectives/replay.hpp): which calls may be kept, and that every
// field of a call's descriptor and options, and every change of the windows, makes a call
// another one. The replay itself runs on the device (tests/multi_rank/replay_test.cpp).

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

}  // namespace
