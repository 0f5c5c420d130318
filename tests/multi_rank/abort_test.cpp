// Communicator::abort() ends symmcomm's kernels that wait for a peer, on every NCCL line: they
// poll an abort word symmcomm owns (src/comm/abort_word.hpp), in the small-message gather's
// line polls and in every LSA barrier. A peer that aborts, or one that simply stops calling,
// leaves the others' kernel waiting; their bounded wait reports it, their own abort ends the
// kernel and their stream drains - no GPU left spinning.

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/comm_state.hpp"
#include "comm/dev_comm.hpp"
#include "kernels/lsa_ll.hpp"
#include "multi_rank/checks.hpp"
#include "multi_rank/world.hpp"
#include "support/ordered_copy.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/comm/mpi.hpp"
#include "symmcomm/comm/wait.hpp"
#include "symmcomm/memory/symmetric_buffer.hpp"

namespace symmcomm::test {
namespace {

enum class Quitter { Aborts, Stops };

// One all-gather of `bytes` per rank forced onto symmcomm's LSA kernel (the small-message
// kernel up to kLlMaxBytesPerRank, the barrier kernel above), once with every rank, then with
// the last rank gone (`how`).
void abort_while_a_peer_is_missing(std::size_t bytes, Quitter how) {
  World& w = world();
  Communicator doomed = create_mpi_communicator(MPI_COMM_WORLD, w.comm.device());
  ASSERT_NE(detail::device_abort_word(*detail::state_of(doomed)), nullptr);
  int const quitter = w.size - 1;
  cudaStream_t stream = nullptr;
  SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  SymmetricBuffer send(doomed, bytes), recv(doomed, bytes * static_cast<std::size_t>(w.size));
  Options forced;
  forced.path = PathChoice::LsaKernel;
  auto const gather = [&](int value) {
    SYMMCOMM_CUDA_TRY(cudaMemsetAsync(send.data(), value + w.rank, bytes, stream));
    all_gather(doomed, std::vector<GatherItem>{GatherItem{send.data(), recv.data(), bytes, "b"}},
               stream, forced);
  };
  gather(10);  // works with every rank
  wait(doomed, stream, std::chrono::seconds(60));
  std::vector<std::uint8_t> got(bytes * static_cast<std::size_t>(w.size));
  support::copy_on(stream, got.data(), recv.data(), got.size());
  for (int r = 0; r < w.size; ++r) {
    EXPECT_EQ(got[static_cast<std::size_t>(r) * bytes], 10 + r) << "rank " << r << "'s part";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (w.rank == quitter) {
    if (how == Quitter::Aborts) doomed.abort();
  } else {
    gather(20);  // waits for the quitter, who never comes
    std::string const text = wait_error(doomed, stream, std::chrono::seconds(5));
    EXPECT_FALSE(text.empty()) << "a gather whose peer "
                               << (how == Quitter::Aborts ? "aborted" : "stopped") << " completed";
    doomed.abort();
    cudaError_t const state = drained_within(stream, std::chrono::seconds(30));
    EXPECT_EQ(state, cudaSuccess) << "the kernel still waits 30 s after Communicator::abort(): "
                                  << cudaGetErrorString(state);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (w.rank == quitter && how == Quitter::Stops) doomed.abort();  // its own cleanup, late
  SYMMCOMM_CUDA_TRY(cudaStreamDestroy(stream));
}

std::string no_lsa_kernel() {
  return "no LSA team spans the ranks here (" + caps().reason + ")";
}

constexpr std::size_t kSmall = 256;                                  // the small-message kernel
constexpr std::size_t kBarrier = detail::kLlMaxBytesPerRank + 4096;  // the barrier kernel

TEST(MultiRankAbort, APeerThatAbortsEndsTheOthersSmallGather) {
  if (!lsa_can()) GTEST_SKIP() << no_lsa_kernel();
  abort_while_a_peer_is_missing(kSmall, Quitter::Aborts);
}

TEST(MultiRankAbort, APeerThatStopsIsReportedAndAbortEndsTheOthersSmallGather) {
  if (!lsa_can()) GTEST_SKIP() << no_lsa_kernel();
  abort_while_a_peer_is_missing(kSmall, Quitter::Stops);
}

TEST(MultiRankAbort, APeerThatAbortsEndsTheOthersBarrier) {
  if (!lsa_can()) GTEST_SKIP() << no_lsa_kernel();
  abort_while_a_peer_is_missing(kBarrier, Quitter::Aborts);
}

TEST(MultiRankAbort, APeerThatStopsIsReportedAndAbortEndsTheOthersBarrier) {
  if (!lsa_can()) GTEST_SKIP() << no_lsa_kernel();
  abort_while_a_peer_is_missing(kBarrier, Quitter::Stops);
}

}  // namespace
}  // namespace symmcomm::test
