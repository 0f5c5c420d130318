#pragma once
// Device outputs with a guard tail, poisoned before each run: an element a kernel never wrote
// cannot pass by matching the poison (tests poison with each of kPoisons in turn), and a write
// past the end shows in the guard.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "support/gpu_test.hpp"

namespace symmcomm::test {

constexpr std::size_t kGuard = 64;  // bytes after every output that must stay poisoned
constexpr int kPoisons[] = {0xAB, 0x54};

// A byte buffer with a guard tail.
struct Guarded {
  explicit Guarded(std::size_t n) : bytes(n), mem(n + kGuard) {}
  std::uint8_t* get() const { return mem.get(); }
  std::vector<std::uint8_t> body() const {
    auto all = mem.download();
    return {all.begin(), all.begin() + static_cast<std::ptrdiff_t>(bytes)};
  }
  void expect_guard_intact(int poison, const std::string& what) const {
    auto const all = mem.download();
    for (std::size_t i = bytes; i < all.size(); ++i) {
      ASSERT_EQ(all[i], poison) << what << ": byte " << i - bytes << " past the end was written";
    }
  }
  std::size_t bytes;
  DeviceArray<std::uint8_t> mem;
};

}  // namespace symmcomm::test
