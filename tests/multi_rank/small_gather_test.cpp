// The small-message all-gather (src/kernels/lsa_ll.hpp): flags in the data instead of barriers,
// two halves of a scratch window used by alternate calls, a call counter on the device. Checked
// against the host across real ranks: many calls of changing sizes back to back with no host
// wait (each half reused while peers may still be reading the other), odd sizes and unaligned
// buffers, the limit and one byte past it, and one CUDA graph replayed with new inputs. The
// device call counter says which calls took the kernel.

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collectives/scratch.hpp"
#include "comm/comm_state.hpp"
#include "comm/dev_comm.hpp"
#include "kernels/lsa_ll.hpp"
#include "multi_rank/checks.hpp"
#include "multi_rank/world.hpp"
#include "support/gpu_test.hpp"
#include "support/tensors.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/comm/mpi.hpp"
#include "symmcomm/comm/wait.hpp"
#include "symmcomm/memory/symmetric_buffer.hpp"

namespace symmcomm::test {
namespace {

// Calls the small-message kernel has made on this rank's communicator (its device counter).
std::uint32_t small_gather_calls() {
  World& w = world();
  const auto& state = detail::state_of(w.comm);
  if (detail::scratch_of(*state).window.calls == nullptr) return 0;
  sync();
  std::uint32_t calls = 0;
  copy_sync(&calls, detail::scratch_of(*state).window.calls, sizeof(calls));
  return calls;
}

// Whether the kernel can run here; where an LSA team spans the ranks the communicator must have
// made its scratch (a failure, not a skip), unless SYMMCOMM_LSA_LL=0 turned it off.
bool has_small_gather() {
  const char* off = std::getenv("SYMMCOMM_LSA_LL");
  if (!lsa_can() || (off != nullptr && std::string(off) == "0")) return false;
  EXPECT_NE(detail::scratch_of(*detail::state_of(world().comm)).window.window, nullptr)
      << "an LSA team spans the ranks, but the communicator has no small-message scratch";
  return detail::scratch_of(*detail::state_of(world().comm)).window.window != nullptr;
}

// One call's tensors: part p sends bytes[p] bytes from `send` + skew and receives every rank's
// at `recv` + skew (skew: to test unaligned addresses).
struct Call {
  std::vector<std::size_t> bytes;
  std::size_t skew = 0;
  int salt = 0;
  std::vector<std::unique_ptr<PoolArray<std::uint8_t>>> send, recv;

  Call(std::vector<std::size_t> b, std::size_t s, int salt_)
      : bytes(std::move(b)), skew(s), salt(salt_) {
    for (std::size_t x : bytes) {
      send.push_back(std::make_unique<PoolArray<std::uint8_t>>(x + skew));
      recv.push_back(std::make_unique<PoolArray<std::uint8_t>>(x * world().size + skew));
    }
  }
  std::vector<std::uint8_t> content(std::size_t p, int rank, int round) const {
    return random_bytes(bytes[p], seed_of(rank, 1000 * salt + 10 * round + static_cast<int>(p)));
  }
  void upload(int round) {
    for (std::size_t p = 0; p < bytes.size(); ++p) {
      std::vector<std::uint8_t> host(skew, 0);
      auto const c = content(p, world().rank, round);
      host.insert(host.end(), c.begin(), c.end());
      send[p]->upload(host);
      recv[p]->poison();
    }
  }
  Plan run(const Options& o) const {
    std::vector<GatherItem> items;
    for (std::size_t p = 0; p < bytes.size(); ++p) {
      items.push_back(GatherItem{send[p]->get() + skew, recv[p]->get() + skew, bytes[p], "part"});
    }
    return all_gather(world().comm, items, world().stream, o);
  }
  void expect_gathered(int round, const std::string& what) const {
    for (std::size_t p = 0; p < bytes.size(); ++p) {
      std::vector<std::uint8_t> want;
      for (int r = 0; r < world().size; ++r) {
        auto const c = content(p, r, round);
        want.insert(want.end(), c.begin(), c.end());
      }
      auto got = recv[p]->download();
      got.erase(got.begin(), got.begin() + static_cast<long>(skew));
      EXPECT_SAME_VECTORS(got, want, what + ", part " + std::to_string(p));
    }
  }
  std::size_t lines() const {
    std::size_t l = 0;
    for (std::size_t x : bytes) l += (x + detail::kLlLineData - 1) / detail::kLlLineData;
    return l;
  }
};

Options lsa_kernel() {
  Options o;
  o.path = PathChoice::LsaKernel;
  return o;
}

TEST(MultiRankSmallGather, ChangingSizesBackToBackWithoutHostWaitsMatchTheHost) {
  if (!has_small_gather())
    GTEST_SKIP() << "no small-message all-gather here (no LSA team spanning the ranks, or "
                    "SYMMCOMM_LSA_LL=0): "
                 << caps().reason;
  std::size_t const limit = detail::kLlMaxBytesPerRank;
  // Sizes and parts: one byte, odd tails, several parts (an NVFP4 view's three), the limit in
  // lines exactly, and one line past it (the barrier kernel).
  std::vector<std::unique_ptr<Call>> calls;
  int salt = 0;
  auto const add = [&](std::vector<std::size_t> b, std::size_t skew) {
    calls.push_back(std::make_unique<Call>(std::move(b), skew, ++salt));
  };
  add({1}, 0);
  add({7}, 3);
  add({8, 9, 4}, 0);
  add({1000}, 1);
  add({3584, 448, 4}, 0);
  add({4099}, 5);
  add({30000, 17}, 0);
  add({limit - 16, 8, 8}, 0);  // exactly the slot's lines
  add({limit + 1}, 0);         // past it: the barrier kernel
  add({64}, 0);
  std::uint32_t const before = small_gather_calls();
  std::uint32_t expected = 0;
  constexpr int kRounds = 3;
  for (auto& c : calls) c->upload(0);
  // Every call twice in a row and the whole list three times: each half is rewritten while the
  // slowest rank may still be copying the other out, with nothing but the flags in between.
  for (int round = 0; round < kRounds; ++round) {
    for (auto& c : calls) {
      for (int again = 0; again < 2; ++again) {
        Plan const plan = c->run(lsa_kernel());
        EXPECT_EQ(plan.path, Path::LsaKernel);
        if (c->lines() <= limit / detail::kLlLineData) ++expected;
      }
    }
  }
  EXPECT_EQ(small_gather_calls() - before, expected)
      << "calls within the limit take the small-message kernel, larger ones the barrier kernel";
  for (auto& c : calls) c->expect_gathered(0, "call " + std::to_string(c->salt));
  expect_same_path_everywhere(Path::LsaKernel, "small gathers");
}

TEST(MultiRankSmallGather, OneGraphReplayedWithNewInputs) {
  if (!has_small_gather())
    GTEST_SKIP() << "no small-message all-gather here (no LSA team spanning the ranks, or "
                    "SYMMCOMM_LSA_LL=0): "
                 << caps().reason;
  World& w = world();
  Call a({3584, 448, 4}, 0, 1);
  Call b({1023}, 1, 2);
  a.upload(0);
  b.upload(0);
  // Eager first (the counter is not at 0 when the graph starts), then three calls captured.
  a.run(lsa_kernel());
  cudaGraph_t graph = nullptr;
  SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(w.stream, cudaStreamCaptureModeThreadLocal));
  a.run(lsa_kernel());
  b.run(lsa_kernel());
  a.run(lsa_kernel());
  SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(w.stream, &graph));
  cudaGraphExec_t exec = nullptr;
  SYMMCOMM_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
  std::uint32_t const before = small_gather_calls();
  constexpr int kReplays = 4;
  for (int replay = 1; replay <= kReplays; ++replay) {
    a.upload(replay);
    b.upload(replay);
    SYMMCOMM_CUDA_TRY(cudaGraphLaunch(exec, w.stream));
    sync();
    a.expect_gathered(replay, "replay " + std::to_string(replay) + ", a");
    b.expect_gathered(replay, "replay " + std::to_string(replay) + ", b");
  }
  EXPECT_EQ(small_gather_calls() - before, 3u * kReplays) << "replays advance the device counter";
  SYMMCOMM_CUDA_TRY(cudaGraphExecDestroy(exec));
  SYMMCOMM_CUDA_TRY(cudaGraphDestroy(graph));
}

TEST(MultiRankSmallGather, TurnedOffOnOneRankIsOffOnEvery) {
  if (!lsa_can()) GTEST_SKIP() << "no LSA team spanning the ranks: " << caps().reason;
  World& w = world();
  const char* before = std::getenv("SYMMCOMM_LSA_LL");
  std::string const saved = before != nullptr ? before : "";
  if (w.rank == 0) setenv("SYMMCOMM_LSA_LL", "0", 1);
  Communicator other = create_mpi_communicator(MPI_COMM_WORLD, w.comm.device());
  if (w.rank == 0) {
    if (before != nullptr) {
      setenv("SYMMCOMM_LSA_LL", saved.c_str(), 1);
    } else {
      unsetenv("SYMMCOMM_LSA_LL");
    }
  }
  // Had the ranks decided apart, rank 0 would take the barrier kernel for small gathers and the
  // others wait for its lines for ever: no rank makes the scratch.
  EXPECT_EQ(detail::scratch_of(*detail::state_of(other)).window.window, nullptr)
      << "rank " << w.rank;
  EXPECT_EQ(detail::scratch_of(*detail::state_of(other)).window.base, nullptr) << "rank " << w.rank;
}

}  // namespace
}  // namespace symmcomm::test
