// The registry through which symmcomm's C++ PyTorch operators reach communicators by name.
#include "communicators.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace symmcomm::torch_ops {
namespace {

symmcomm_comm_t fake_handle(std::uintptr_t v) {
  return reinterpret_cast<symmcomm_comm_t>(v);
}

TEST(TorchCommunicators, FindsWhatWasSetAndNothingElse) {
  Communicators registry;
  EXPECT_FALSE(registry.find("tp"));
  registry.set("tp", {fake_handle(0x1000), 1, 4, 2});
  auto const lease = registry.find("tp");
  ASSERT_TRUE(lease);
  EXPECT_EQ(lease->comm, fake_handle(0x1000));
  EXPECT_EQ(lease->rank, 1);
  EXPECT_EQ(lease->size, 4);
  EXPECT_EQ(lease->device, 2);
  EXPECT_FALSE(registry.find("t"));
  EXPECT_FALSE(registry.find("tpx"));
  EXPECT_FALSE(registry.find(""));
}

TEST(TorchCommunicators, SetReplacesAndRemoveForgets) {
  Communicators registry;
  registry.set("ep", {fake_handle(0x1000), 0, 2, 0});
  registry.set("ep", {fake_handle(0x2000), 1, 8, 3});
  EXPECT_EQ(registry.find("ep")->comm, fake_handle(0x2000));
  EXPECT_EQ(registry.find("ep")->size, 8);
  EXPECT_TRUE(registry.remove("ep"));
  EXPECT_FALSE(registry.find("ep"));
  EXPECT_FALSE(registry.remove("ep"));
}

TEST(TorchCommunicators, UnknownNamesTheRegisteredOnes) {
  Communicators registry;
  EXPECT_EQ(registry.unknown("tp"),
            "no communicator registered as 'tp' (register_communicator); registered: none");
  registry.set("tp", {fake_handle(0x1000), 0, 2, 0});
  registry.set("ep", {fake_handle(0x2000), 0, 2, 0});
  EXPECT_EQ(registry.unknown("dp"),
            "no communicator registered as 'dp' (register_communicator); registered: ep, tp");
  EXPECT_EQ(registry.names(), (std::vector<std::string>{"ep", "tp"}));
}

TEST(TorchCommunicators, MoeGroupsAreNamedAsTheirOwnKind) {
  MoeGroups groups;
  MoeGroupEntry entry;
  entry.group = reinterpret_cast<symmcomm_moe_t>(std::uintptr_t{0x3000});
  entry.config.hidden = 7168;
  groups.set("layer0", entry);
  ASSERT_TRUE(groups.find("layer0"));
  EXPECT_EQ(groups.find("layer0")->config.hidden, 7168);
  EXPECT_EQ(groups.unknown("layer1"),
            "no MoE group registered as 'layer1' (register_moe_group); registered: layer0");
  EXPECT_TRUE(groups.remove("layer0"));
  EXPECT_FALSE(groups.find("layer0"));
}

TEST(TorchCommunicators, RemoveWaitsForTheCallsUsingTheCommunicator) {
  Communicators registry;
  registry.set("tp", {fake_handle(0x1000), 0, 2, 0});
  std::atomic<bool> removed{false};
  std::thread remover;
  {
    auto const lease = registry.find("tp");  // an operator inside its call
    ASSERT_TRUE(lease);
    remover = std::thread([&] {
      registry.remove("tp");
      removed = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(removed.load()) << "the communicator was removed during a call using it";
    EXPECT_EQ(lease->comm, fake_handle(0x1000));
  }
  remover.join();
  EXPECT_TRUE(removed.load());
  EXPECT_FALSE(registry.find("tp"));
}

TEST(TorchCommunicators, AMissedLookupHoldsNoLock) {
  Communicators registry;
  auto const miss = registry.find("tp");
  ASSERT_FALSE(miss);
  // With the miss still alive, a writer must not wait for it.
  std::atomic<bool> set{false};
  std::thread writer([&] {
    registry.set("tp", {fake_handle(0x1000), 0, 2, 0});
    set = true;
  });
  writer.join();
  EXPECT_TRUE(set.load());
}

TEST(TorchCommunicators, TheProcessRegistryIsOne) {
  EXPECT_EQ(&communicators(), &communicators());
}

}  // namespace
}  // namespace symmcomm::torch_ops
