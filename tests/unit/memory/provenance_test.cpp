#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "memory/provenance_internal.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/memory/provenance.hpp"

namespace {

using namespace symmcomm;

const void* at(std::uintptr_t a) {
  return reinterpret_cast<const void*>(a);
}
ncclWindow_t fake_window(std::uintptr_t a) {
  return reinterpret_cast<ncclWindow_t>(a);
}

TEST(Provenance, AnswersForEveryCase) {
  ProvenanceRegistry reg;
  reg.add({0x100000, 0x1000, fake_window(1), 7, 0});
  reg.add({0x200000, 0x1000, fake_window(2), 7, 1});
  reg.add({0x300000, 0x1000, fake_window(3), 9, 0});

  Provenance p = reg.lookup(at(0x100100), 0x100, 7);
  EXPECT_TRUE(p.symmetric());
  EXPECT_EQ(p.offset, 0x100u);
  EXPECT_EQ(p.window, fake_window(1));
  EXPECT_EQ(p.window_bytes, 0x1000u);

  EXPECT_TRUE(reg.lookup(at(0x100000), 0x1000, 7).symmetric());  // exactly the whole window
  EXPECT_EQ(reg.lookup(at(0x100f00), 0x200, 7).status, ProvenanceStatus::StraddlesWindowEnd);
  EXPECT_EQ(reg.lookup(at(0x300010), 0x10, 7).status, ProvenanceStatus::OtherCommunicator);
  EXPECT_EQ(reg.lookup(at(0x300010), 0x10, 9).status, ProvenanceStatus::Symmetric);
  EXPECT_EQ(reg.lookup(at(0x150000), 0x10, 7).status, ProvenanceStatus::NotRegistered);
  EXPECT_EQ(reg.lookup(at(0x0ff000), 0x10, 7).status, ProvenanceStatus::NotRegistered);
  EXPECT_EQ(reg.lookup(nullptr, 0x10, 7).status, ProvenanceStatus::Null);
  EXPECT_EQ(reg.lookup(at(0x100000), 0, 7).status, ProvenanceStatus::Empty);
  EXPECT_EQ(reg.lookup(at(0x100000), 0x10, 12345).status, ProvenanceStatus::OtherCommunicator);

  std::string const why = reg.lookup(at(0x150000), 0x10, 7).describe("recv", at(0x150000), 16);
  EXPECT_NE(why.find("recv 0x150000 (16 bytes) is not inside any symmetric window"),
            std::string::npos)
      << why;
  EXPECT_NE(
      reg.lookup(at(0x100f00), 0x200, 7).describe("send", at(0x100f00), 0x200).find("window ends"),
      std::string::npos);
  EXPECT_NE(reg.lookup(at(0x300010), 0x10, 7)
                .describe("send", at(0x300010), 16)
                .find("another communicator"),
            std::string::npos);
}

TEST(Provenance, BatchLookupAnswersEachQuery) {
  ProvenanceRegistry reg;
  reg.add({0x100000, 0x1000, fake_window(1), 7, 0});
  reg.add({0x300000, 0x1000, fake_window(3), 9, 0});
  ProvenanceRegistry::Query const queries[] = {
      {at(0x100010), 16}, {at(0x100ff0), 32}, {at(0x300000), 8}, {at(0x500000), 8}, {nullptr, 8}};
  Provenance out[5];
  reg.lookup(queries, 5, 7, out);
  EXPECT_EQ(out[0].status, ProvenanceStatus::Symmetric);
  EXPECT_EQ(out[0].offset, 0x10u);
  EXPECT_EQ(out[1].status, ProvenanceStatus::StraddlesWindowEnd);
  EXPECT_EQ(out[2].status, ProvenanceStatus::OtherCommunicator);
  EXPECT_EQ(out[3].status, ProvenanceStatus::NotRegistered);
  EXPECT_EQ(out[4].status, ProvenanceStatus::Null);
}

// The strided batch lookup fills the Provenance member of larger records and touches nothing
// else in them.
TEST(Provenance, StridedBatchLookupWritesOnlyTheProvenanceMembers) {
  ProvenanceRegistry reg;
  reg.add({0x100000, 0x1000, fake_window(1), 7, 0});
  struct Record {
    std::uint64_t before = 0xAAAAAAAAAAAAAAAAull;
    Provenance provenance{};
    std::uint32_t after = 0xBBBBBBBBu;
  };
  Record records[3];
  ProvenanceRegistry::Query const queries[] = {
      {at(0x100020), 16}, {at(0x900000), 8}, {at(0x100000), 0}};
  detail::ProvenanceAccess::lookup_strided(reg, queries, 3, 7, &records[0].provenance,
                                           sizeof(Record));
  EXPECT_EQ(records[0].provenance.status, ProvenanceStatus::Symmetric);
  EXPECT_EQ(records[0].provenance.offset, 0x20u);
  EXPECT_EQ(records[1].provenance.status, ProvenanceStatus::NotRegistered);
  EXPECT_EQ(records[2].provenance.status, ProvenanceStatus::Empty);
  for (const Record& r : records) {
    EXPECT_EQ(r.before, 0xAAAAAAAAAAAAAAAAull);
    EXPECT_EQ(r.after, 0xBBBBBBBBu);
  }
}

TEST(Provenance, RemoveAndOverlap) {
  ProvenanceRegistry reg;
  reg.add({0x100000, 0x1000, fake_window(1), 7, 0});
  EXPECT_THROW(reg.add({0x100800, 0x1000, fake_window(2), 7, 1}), LogicError);
  EXPECT_THROW(reg.add({0x0ff800, 0x1000, fake_window(2), 7, 1}), LogicError);
  // The same memory registered with another communicator is fine (NCCL allows it).
  EXPECT_NO_THROW(reg.add({0x100000, 0x1000, fake_window(3), 8, 0}));
  EXPECT_EQ(reg.size(), 2u);
  EXPECT_TRUE(reg.remove(7, at(0x100000)));
  EXPECT_FALSE(reg.remove(7, at(0x100000)));
  EXPECT_EQ(reg.lookup(at(0x100000), 16, 7).status, ProvenanceStatus::OtherCommunicator);
  EXPECT_TRUE(reg.lookup(at(0x100000), 16, 8).symmetric());
}

// The pre-check adoption uses: any intersection with a window of the same communicator,
// including a range that swallows a window whole or touches only its last byte.
TEST(Provenance, OverlapsSeesEveryIntersectionOnOneCommunicatorOnly) {
  ProvenanceRegistry reg;
  reg.add({0x100000, 0x1000, fake_window(1), 7, 0});
  EXPECT_TRUE(reg.overlaps(7, at(0x100000), 1));
  EXPECT_TRUE(reg.overlaps(7, at(0x100fff), 1));        // the last byte
  EXPECT_TRUE(reg.overlaps(7, at(0x0ff000), 0x1001));   // reaches its first byte
  EXPECT_TRUE(reg.overlaps(7, at(0x0f0000), 0x20000));  // swallows it
  EXPECT_FALSE(reg.overlaps(7, at(0x101000), 0x1000));  // right after
  EXPECT_FALSE(reg.overlaps(7, at(0x0ff000), 0x1000));  // right before
  EXPECT_FALSE(reg.overlaps(8, at(0x100000), 0x1000));  // another communicator
  EXPECT_FALSE(reg.overlaps(7, at(0x100000), 0));
}

TEST(Provenance, ConcurrentRegistrationAndLookup) {
  ProvenanceRegistry reg;
  constexpr std::uintptr_t kStable = 0x10000000;
  reg.add({kStable, 0x10000, fake_window(1), 1, 0});
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        if (!reg.lookup(at(kStable + 0x100), 0x100, 1).symmetric()) ++wrong;
      }
    });
  }
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        std::uintptr_t const base =
            0x20000000 + static_cast<std::uintptr_t>(t * 100000 + i) * 0x1000;
        reg.add({base, 0x1000, fake_window(base), 1, static_cast<std::uint64_t>(i)});
        if (!reg.lookup(at(base + 8), 8, 1).symmetric()) ++wrong;
        reg.remove(1, at(base));
      }
    });
  }
  for (auto& w : writers) w.join();
  stop = true;
  for (auto& r : readers) r.join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_EQ(reg.size(), 1u);
}

}  // namespace
