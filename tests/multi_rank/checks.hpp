#pragma once
// Checks shared by the multi-rank collective tests: seeds every rank can reproduce, the
// forced-path and same-path-everywhere expectations, and a vector comparison that reports the
// first difference.

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/scratch.hpp"
#include "comm/comm_state.hpp"
#include "multi_rank/world.hpp"
#include "symmcomm/comm/wait.hpp"

namespace symmcomm::test {

inline std::uint32_t seed_of(int rank, int salt) {
  return 1000003u * static_cast<std::uint32_t>(rank + 1) + 7919u * static_cast<std::uint32_t>(salt);
}

inline void sync() {
  wait(world().comm, world().stream);
}

// Calls of symmcomm's scratch-window kernels on this communicator so far (the device call
// counter they share, kernels/lsa_ll.hpp), after this rank's stream drained.
inline std::uint32_t ll_kernel_calls() {
  const auto& state = detail::state_of(world().comm);
  sync();
  std::uint32_t calls = 0;
  copy_sync(&calls, detail::scratch_of(*state).window.calls, sizeof(calls));
  return calls;
}

inline Path path_of(PathChoice c) {
  return c == PathChoice::NcclSymmetric ? Path::NcclSymmetric
         : c == PathChoice::LsaKernel   ? Path::LsaKernel
                                        : Path::Fallback;
}

// The forced path was taken, and every rank took the same one.
inline void expect_path(PathChoice choice, Path got, const std::string& at) {
  if (choice != PathChoice::Auto) {
    EXPECT_EQ(got, path_of(choice)) << at;
  }
  expect_same_path_everywhere(got, at.c_str());
}

// Index of the first difference of a and b, -1 when equal.
template <class T>
long first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!(a[i] == b[i])) return static_cast<long>(i);
  }
  return -1;
}

#define EXPECT_SAME_VECTORS(got, want, what)                                                    \
  do {                                                                                          \
    long const at_ = first_difference(got, want);                                               \
    EXPECT_EQ(at_, -1) << (what) << ": first difference at " << at_ << " of " << (want).size(); \
  } while (0)

inline const Capabilities& caps() {
  return world().comm.capabilities();
}
inline bool lsa_can() {
  return caps().lsa_covers(world().size);
}

}  // namespace symmcomm::test
