#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "memory/arena_allocator.hpp"

namespace {

using symmcomm::detail::ArenaAllocator;

TEST(ArenaAllocator, FirstFitAlignmentAndCoalescing) {
  ArenaAllocator a(256);
  EXPECT_EQ(a.add_arena(4096), 0u);
  auto b1 = a.allocate(100, 256);
  auto b2 = a.allocate(300, 256);
  auto b3 = a.allocate(256, 1024);
  ASSERT_TRUE(b1 && b2 && b3);
  EXPECT_EQ(b1->offset, 0u);
  EXPECT_EQ(b1->bytes, 256u);
  EXPECT_EQ(b2->offset, 256u);
  EXPECT_EQ(b2->bytes, 512u);
  EXPECT_EQ(b3->offset, 1024u);  // aligned up, leaving [768, 1024) free
  EXPECT_TRUE(a.check_invariants());
  EXPECT_EQ(a.in_use_bytes(), 1024u);
  EXPECT_EQ(a.deallocate(0, b2->offset), 512u);
  EXPECT_TRUE(a.check_invariants());  // [256, 1024) coalesced into one free range
  auto b4 = a.allocate(700, 256);
  ASSERT_TRUE(b4);
  EXPECT_EQ(b4->offset, 256u);
  EXPECT_FALSE(a.deallocate(0, 12345).has_value());  // never allocated
  EXPECT_TRUE(a.deallocate(0, b1->offset).has_value());
  EXPECT_FALSE(a.deallocate(0, b1->offset).has_value());  // double free
  EXPECT_FALSE(a.deallocate(7, 0).has_value());           // no such arena
  EXPECT_TRUE(a.check_invariants());
}

TEST(ArenaAllocator, SpillsToLaterArenasAndRemovesEmptyTail) {
  ArenaAllocator a(256);
  a.add_arena(1024);
  a.add_arena(8192);
  auto big = a.allocate(2048, 256);
  ASSERT_TRUE(big);
  EXPECT_EQ(big->arena, 1u);
  EXPECT_FALSE(a.allocate(1 << 20, 256).has_value());
  EXPECT_FALSE(a.remove_last_arena_if_empty());
  a.deallocate(1, big->offset);
  EXPECT_TRUE(a.remove_last_arena_if_empty());
  EXPECT_EQ(a.arena_count(), 1u);
  EXPECT_EQ(a.reserved_bytes(), 1024u);
  EXPECT_TRUE(a.check_invariants());
}

TEST(ArenaAllocator, RejectsBadArguments) {
  EXPECT_ANY_THROW(ArenaAllocator(300));
  ArenaAllocator a(256);
  EXPECT_ANY_THROW(a.add_arena(100));
  a.add_arena(1024);
  EXPECT_ANY_THROW(a.allocate(0, 256));
  EXPECT_ANY_THROW(a.allocate(16, 3));
  EXPECT_FALSE(a.allocate(SIZE_MAX - 10, 256).has_value());
}

// Property test: random allocate/free sequences keep the invariants, never hand out
// overlapping blocks, and two "ranks" replaying the same sequence get the same offsets.
TEST(ArenaAllocator, RandomSequencesAreConsistentAndDeterministic) {
  for (std::uint32_t seed = 0; seed < 20; ++seed) {
    ArenaAllocator rank0(256), rank1(256);
    std::mt19937 rng(seed);
    std::vector<ArenaAllocator::Block> live0, live1;
    for (auto* r : {&rank0, &rank1}) {
      r->add_arena(1 << 16);
      r->add_arena(1 << 18);
    }
    for (int step = 0; step < 3000; ++step) {
      bool const do_free = !live0.empty() && rng() % 100 < 45;
      if (do_free) {
        std::size_t const i = rng() % live0.size();
        ASSERT_TRUE(rank0.deallocate(live0[i].arena, live0[i].offset));
        ASSERT_TRUE(rank1.deallocate(live1[i].arena, live1[i].offset));
        live0.erase(live0.begin() + static_cast<std::ptrdiff_t>(i));
        live1.erase(live1.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        std::size_t const bytes = 1 + rng() % 20000;
        std::size_t const alignment = std::size_t{256} << (rng() % 4);
        auto b0 = rank0.allocate(bytes, alignment);
        auto b1 = rank1.allocate(bytes, alignment);
        ASSERT_EQ(b0.has_value(), b1.has_value());
        if (b0) {
          ASSERT_EQ(*b0, *b1) << "seed " << seed << " step " << step;
          ASSERT_EQ(b0->offset % alignment, 0u);
          ASSERT_GE(b0->bytes, bytes);
          live0.push_back(*b0);
          live1.push_back(*b1);
        }
      }
      if (step % 100 == 0) {
        ASSERT_TRUE(rank0.check_invariants()) << "seed " << seed << " step " << step;
      }
    }
    ASSERT_TRUE(rank0.check_invariants());
    EXPECT_EQ(rank0.live(), rank1.live());
    EXPECT_EQ(rank0.live_blocks(), live0.size());
    for (const auto& b : live0) ASSERT_TRUE(rank0.deallocate(b.arena, b.offset));
    EXPECT_EQ(rank0.in_use_bytes(), 0u);
    EXPECT_EQ(rank0.largest_free(), std::size_t{1} << 18);  // everything coalesced back
  }
}

}  // namespace
