// The memory layer across real ranks: one process, one communicator per GPU, one thread.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/gpu_test.hpp"
#include "symmcomm/comm/group.hpp"
#include "symmcomm/memory/provenance.hpp"
#include "symmcomm/memory/symm_allocator.hpp"
#include "symmcomm/memory/verify.hpp"

namespace {

using namespace symmcomm;

std::vector<const Communicator*> pointers(const std::vector<Communicator>& comms) {
  std::vector<const Communicator*> p;
  for (const auto& c : comms) p.push_back(&c);
  return p;
}

TEST(MultiGpuMemory, WindowsAndPoolsAreSymmetricAcrossRanks) {
  SYMMCOMM_REQUIRE_GPUS(2);
  auto comms = create_local_communicators();
  for (const auto& c : comms) {
    std::cout << "rank " << c.rank() << ": symmetric " << c.capabilities().symmetric_memory
              << ", LSA team " << c.capabilities().lsa_team_size << " " << c.capabilities().reason
              << "\n";
  }
  std::vector<SymmetricBuffer> buffers;
  {
    Group group;
    for (auto& c : comms) buffers.emplace_back(c, 1 << 20);
  }
  for (std::size_t i = 0; i < comms.size(); ++i) {
    EXPECT_NE(buffers[i].window(), nullptr);
    EXPECT_TRUE(provenance_of(comms[i], buffers[i].data(), 1 << 20).symmetric());
  }
  std::vector<std::unique_ptr<SymmAllocator>> pools;
  {
    Group group;
    for (auto& c : comms) pools.push_back(std::make_unique<SymmAllocator>(c, PoolOptions{4 << 20}));
  }
  std::vector<void*> ptrs;
  for (auto& p : pools) ptrs.push_back(p->allocate(12345));
  for (std::size_t i = 1; i < pools.size(); ++i) {
    EXPECT_EQ(pools[i]->region_of(ptrs[i]).window_offset,
              pools[0]->region_of(ptrs[0]).window_offset);
  }
  EXPECT_NO_THROW(verify_symmetric(pointers(comms)));
  for (std::size_t i = 0; i < pools.size(); ++i) pools[i]->deallocate(ptrs[i]);
  {
    Group group;
    pools.clear();
    buffers.clear();
  }
}

TEST(MultiGpuMemory, AsymmetricAllocationIsReportedNotHung) {
  SYMMCOMM_REQUIRE_GPUS(2);
  auto comms = create_local_communicators();
  std::vector<std::unique_ptr<SymmAllocator>> pools;
  {
    Group group;
    for (auto& c : comms) pools.push_back(std::make_unique<SymmAllocator>(c, PoolOptions{4 << 20}));
  }
  void* a0 = pools[0]->allocate(4096);
  void* a1 = pools[1]->allocate(8192);  // rank 1 asks for a different size
  std::string what;
  try {
    verify_symmetric(pointers(comms));
  } catch (const SymmetryError& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("rank 1"), std::string::npos) << what;
  EXPECT_NE(what.find("8192"), std::string::npos) << what;
  pools[0]->deallocate(a0);
  pools[1]->deallocate(a1);
  Group group;
  pools.clear();
}

}  // namespace
