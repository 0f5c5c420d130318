// Hazards that only real ranks show: asymmetric allocation, graph capture and replay, buffer
// reuse without host synchronisation, two streams on one communicator, and window teardown with
// work still queued.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "multi_rank/world.hpp"
#include "support/gpu_test.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/comm/group.hpp"
#include "symmcomm/comm/mpi.hpp"
#include "symmcomm/comm/wait.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/memory/symmetric_buffer.hpp"
#include "symmcomm/memory/verify.hpp"

namespace symmcomm::test {
namespace {

bool lsa_can() {
  return world().comm.capabilities().lsa_covers(world().size);
}

std::uint8_t value_of(int iteration, int rank, int salt) {
  return static_cast<std::uint8_t>(1 + iteration * 16 + rank * 3 + salt * 101);
}

// A byte all-gather of `bytes` per rank from send into recv on `stream`.
Plan gather_bytes(void* send, void* recv, std::size_t bytes, cudaStream_t stream, PathChoice path,
                  Options o = {}) {
  o.path = path;
  return all_gather(world().comm, std::vector<GatherItem>{GatherItem{send, recv, bytes, "bytes"}},
                    stream, o);
}

// Every rank's segment of `got` (bytes per rank) is filled with value_of(iteration, rank, salt).
void expect_segments(const std::vector<std::uint8_t>& got, std::size_t bytes, int iteration,
                     int salt, const std::string& what) {
  for (int r = 0; r < world().size; ++r) {
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < bytes; ++i) {
      wrong += got[static_cast<std::size_t>(r) * bytes + i] != value_of(iteration, r, salt) ? 1 : 0;
    }
    EXPECT_EQ(wrong, 0u) << what << ": iteration " << iteration << ", rank " << r << "'s segment";
  }
}

TEST(MultiRankLifecycle, VerifySymmetricNamesTheRankThatAllocatedDifferently) {
  World& w = world();
  if (w.size < 2) GTEST_SKIP() << "needs two ranks";
  EXPECT_NO_THROW(verify_symmetric(w.comm, w.stream));
  int const odd = w.size - 1;
  void* extra = w.rank == odd ? w.pool->allocate(4096) : nullptr;
  std::string text;
  try {
    verify_symmetric(w.comm, w.stream);
  } catch (const SymmetryError& e) {
    text = e.what();
  }
  EXPECT_NE(text.find("on rank " + std::to_string(odd)), std::string::npos)
      << "every rank must get an error naming rank " << odd << ", got: '" << text << "'";
  if (extra != nullptr) w.pool->deallocate(extra);
  EXPECT_NO_THROW(verify_symmetric(w.comm, w.stream));
}

TEST(MultiRankLifecycle, ImmediateReuseWithoutHostSynchronisation) {
  World& w = world();
  std::size_t const bytes = 1 << 20;
  int const iterations = 6;
  PoolArray<std::uint8_t> send(bytes), recv(bytes * static_cast<std::size_t>(w.size));
  std::uint8_t* host = nullptr;
  std::size_t const total = bytes * static_cast<std::size_t>(w.size);
  SYMMCOMM_CUDA_TRY(cudaMallocHost(&host, total * iterations));
  for (PathChoice path : paths_to_try(false, lsa_can())) {
    for (int it = 0; it < iterations; ++it) {
      SYMMCOMM_CUDA_TRY(cudaMemsetAsync(send.get(), value_of(it, w.rank, 0), bytes, w.stream));
      gather_bytes(send.get(), recv.get(), bytes, w.stream, path);
      SYMMCOMM_CUDA_TRY(
          cudaMemcpyAsync(host + total * it, recv.get(), total, cudaMemcpyDeviceToHost, w.stream));
    }
    wait(w.comm, w.stream);
    for (int it = 0; it < iterations; ++it) {
      expect_segments(std::vector<std::uint8_t>(host + total * it, host + total * (it + 1)), bytes,
                      it, 0, std::string("reuse on ") + to_string(path));
    }
  }
  SYMMCOMM_CUDA_TRY(cudaFreeHost(host));
}

// Two streams of one communicator, no host synchronisation between their collectives: symmcomm's
// LSA kernels share the communicator's barriers, so it orders them.
TEST(MultiRankLifecycle, TwoStreamsOnOneCommunicator) {
  World& w = world();
  if (!lsa_can()) GTEST_SKIP() << "no LSA path here: " << w.comm.capabilities().reason;
  std::size_t const bytes = 1 << 20;
  std::size_t const total = bytes * static_cast<std::size_t>(w.size);
  int const iterations = 8;
  cudaStream_t streams[2];
  std::uint8_t* host = nullptr;
  SYMMCOMM_CUDA_TRY(cudaMallocHost(&host, 2 * total * iterations));
  PoolArray<std::uint8_t> send0(bytes), send1(bytes), recv0(total), recv1(total);
  PoolArray<std::uint8_t>* sends[2] = {&send0, &send1};
  PoolArray<std::uint8_t>* recvs[2] = {&recv0, &recv1};
  for (auto& s : streams) SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int it = 0; it < iterations; ++it) {
    for (int k = 0; k < 2; ++k) {
      SYMMCOMM_CUDA_TRY(
          cudaMemsetAsync(sends[k]->get(), value_of(it, w.rank, k), bytes, streams[k]));
      Plan const p =
          gather_bytes(sends[k]->get(), recvs[k]->get(), bytes, streams[k], PathChoice::LsaKernel);
      EXPECT_EQ(p.path, Path::LsaKernel);
      SYMMCOMM_CUDA_TRY(cudaMemcpyAsync(host + (2 * it + k) * total, recvs[k]->get(), total,
                                        cudaMemcpyDeviceToHost, streams[k]));
    }
  }
  for (auto& s : streams) wait(w.comm, s);
  for (int it = 0; it < iterations; ++it) {
    for (int k = 0; k < 2; ++k) {
      auto const* at = host + (2 * it + k) * total;
      expect_segments(std::vector<std::uint8_t>(at, at + total), bytes, it, k,
                      "stream " + std::to_string(k));
    }
  }
  for (auto& s : streams) SYMMCOMM_CUDA_TRY(cudaStreamDestroy(s));
  SYMMCOMM_CUDA_TRY(cudaFreeHost(host));
}

TEST(MultiRankLifecycle, GraphCaptureAndReplayMatchTheHost) {
  World& w = world();
  std::size_t const bytes = 1 << 18;
  std::size_t const total = bytes * static_cast<std::size_t>(w.size);
  PoolArray<std::uint8_t> send(bytes), recv(total);
  for (PathChoice path : paths_to_try(false, lsa_can())) {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(w.stream, cudaStreamCaptureModeThreadLocal));
    Plan const plan = gather_bytes(send.get(), recv.get(), bytes, w.stream, path);
    SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(w.stream, &graph));
    SYMMCOMM_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 3; ++replay) {
      SYMMCOMM_CUDA_TRY(cudaMemsetAsync(send.get(), value_of(replay, w.rank, 5), bytes, w.stream));
      SYMMCOMM_CUDA_TRY(cudaGraphLaunch(exec, w.stream));
      wait(w.comm, w.stream);
      expect_segments(recv.download(), bytes, replay, 5,
                      std::string("graph replay on ") + to_string(plan.path));
    }
    SYMMCOMM_CUDA_TRY(cudaGraphExecDestroy(exec));
    SYMMCOMM_CUDA_TRY(cudaGraphDestroy(graph));
  }
}

// A window released right after a collective was enqueued on it: the release waits for that
// work before NCCL unmaps the window, so nothing faults.
TEST(MultiRankLifecycle, WindowReleasedWithWorkQueued) {
  World& w = world();
  if (!lsa_can()) GTEST_SKIP() << "no LSA path here: " << w.comm.capabilities().reason;
  std::size_t const bytes = 32u << 20;
  DeviceArray<std::uint8_t> send(bytes);
  settle();
  for (int round = 0; round < 3; ++round) {
    {
      SymmetricBuffer recv(w.comm, bytes * static_cast<std::size_t>(w.size));
      for (int k = 0; k < 4; ++k) {
        Plan const p =
            gather_bytes(send.get(), recv.data(), bytes, w.stream, PathChoice::LsaKernel);
        EXPECT_EQ(p.path, Path::LsaKernel);
      }
    }  // released here, with the gathers still queued
    wait(w.comm, w.stream);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  }
}

// Rank 0 gathers into a window, the others into plain memory: the planner, deciding from each
// rank's own buffers, would send rank 0 into a symmetric path and the others into the fallback
// (a hang). With Options::agree_plan every rank throws instead, naming the ranks' paths.
TEST(MultiRankLifecycle, AgreedPlansTurnRankLocalDifferencesIntoErrors) {
  World& w = world();
  std::size_t const bytes = 4096;
  std::size_t const total = bytes * static_cast<std::size_t>(w.size);
  PoolArray<std::uint8_t> send(bytes), in_window(total);
  DeviceArray<std::uint8_t> plain(total);
  settle();
  SYMMCOMM_CUDA_TRY(cudaMemsetAsync(send.get(), value_of(0, w.rank, 9), bytes, w.stream));
  void* recv = w.rank == 0 ? static_cast<void*>(in_window.get()) : static_cast<void*>(plain.get());
  Options o;
  o.agree_plan = true;
  bool const rank0_differs = lsa_can() || w.comm.capabilities().symmetric_memory;
  std::string text;
  try {
    all_gather(w.comm, std::vector<GatherItem>{GatherItem{send.get(), recv, bytes, "bytes"}},
               w.stream, o);
    wait(w.comm, w.stream);
  } catch (const LogicError& e) {
    text = e.what();
  }
  if (rank0_differs && w.size > 1) {
    EXPECT_NE(text.find("the ranks planned different paths"), std::string::npos)
        << "every rank must refuse, got: '" << text << "'";
    EXPECT_NE(text.find("rank 1: fallback"), std::string::npos) << text;
  } else {
    EXPECT_EQ(text, "") << "every rank takes the fallback here: nothing to refuse";
    std::vector<std::uint8_t> got(total);
    copy_sync(got.data(), recv, total);
    expect_segments(got, bytes, 0, 9, "agreed fallback");
  }
  // Agreed and symmetric on every rank: no error, and the same path everywhere.
  Plan const agreed = all_gather(
      w.comm, std::vector<GatherItem>{GatherItem{send.get(), in_window.get(), bytes, "bytes"}},
      w.stream, o);
  wait(w.comm, w.stream);
  expect_segments(in_window.download(), bytes, 0, 9, "agreed");
  expect_same_path_everywhere(agreed.path, "agreed all_gather");
}

// Staging (Options::allow_staging): outside a Group, Auto copies plain buffers through the
// symmetric scratch where symmetric support exists; inside a Group it must not plan the staged
// sequence (NCCL would run after the copies that need it) and takes the fallback instead.
TEST(MultiRankLifecycle, StagingOutsideAGroupOnlyAndRightEitherWay) {
  World& w = world();
  std::size_t const bytes = 8192;
  std::size_t const total = bytes * static_cast<std::size_t>(w.size);
  DeviceArray<std::uint8_t> send(bytes), recv(total);
  PoolArray<std::uint8_t> stage_send(bytes), stage_recv(total);
  settle();
  Options o;
  o.allow_staging = true;
  o.staging = Staging{stage_send.get(), bytes, stage_recv.get(), total};
  for (int grouped = 0; grouped < 2; ++grouped) {
    SYMMCOMM_CUDA_TRY(cudaMemsetAsync(send.get(), value_of(grouped, w.rank, 15), bytes, w.stream));
    SYMMCOMM_CUDA_TRY(cudaMemsetAsync(recv.get(), 0, total, w.stream));
    Plan plan;
    std::string error;
    try {
      if (grouped == 1) {
        Group group;
        plan = gather_bytes(send.get(), recv.get(), bytes, w.stream, PathChoice::Auto, o);
        group.end();
      } else {
        plan = gather_bytes(send.get(), recv.get(), bytes, w.stream, PathChoice::Auto, o);
      }
    } catch (const LogicError& e) {
      error = e.what();
    }
    std::string const at = grouped == 1 ? "inside a Group" : "outside a Group";
    ASSERT_EQ(error, "") << at;
    wait(w.comm, w.stream);
    std::vector<std::uint8_t> got(total);
    copy_sync(got.data(), recv.get(), total);
    expect_segments(got, bytes, grouped, 15, "staged all_gather " + at);
    if (grouped == 1) {
      EXPECT_FALSE(plan.staged) << at << ": " << plan.reason();
    } else if (w.comm.capabilities().symmetric_memory) {
      EXPECT_TRUE(plan.staged) << at << ": " << plan.reason();
    }
    expect_same_path_everywhere(plan.path, at.c_str());
  }
}

// A peer that aborts: the last rank aborts a second communicator instead of joining a gather on
// it. The others get an error from their bounded wait (TimeoutError, or NcclError where NCCL sees
// the peer go) instead of a hang, abort too, their stream drains, and the world's communicator
// still works. Runs on the fallback path: NCCL's kernels poll the abort flag on every version,
// symmcomm's LSA barriers only from NCCL 2.30.4 (documented on Communicator::abort).
TEST(MultiRankLifecycle, APeerThatAbortsGivesTheOthersAnErrorNotAHang) {
  World& w = world();
  if (w.size < 2) GTEST_SKIP() << "needs two ranks";
  using clock = std::chrono::steady_clock;
  int const quitter = w.size - 1;
  std::size_t const bytes = 1 << 16;
  std::size_t const total = bytes * static_cast<std::size_t>(w.size);
  Communicator doomed = create_mpi_communicator(MPI_COMM_WORLD, w.comm.device());
  cudaStream_t stream = nullptr;
  SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  DeviceArray<std::uint8_t> send(bytes), recv(total);
  settle();
  Options o;
  o.path = PathChoice::Fallback;
  auto gather_on_doomed = [&](int salt) {
    SYMMCOMM_CUDA_TRY(cudaMemsetAsync(send.get(), value_of(0, w.rank, salt), bytes, stream));
    all_gather(doomed, std::vector<GatherItem>{GatherItem{send.get(), recv.get(), bytes, "bytes"}},
               stream, o);
  };
  // It works before the abort.
  gather_on_doomed(11);
  wait(doomed, stream, std::chrono::seconds(60));
  std::vector<std::uint8_t> got(total);
  support::copy_on(stream, got.data(), recv.get(), total);
  expect_segments(got, bytes, 0, 11, "gather before the abort");
  MPI_Barrier(MPI_COMM_WORLD);
  if (w.rank == quitter) {
    doomed.abort();
  } else {
    gather_on_doomed(12);
    auto const start = clock::now();
    std::string const text = wait_error(doomed, stream, std::chrono::seconds(5));
    auto const waited = std::chrono::duration_cast<std::chrono::seconds>(clock::now() - start);
    EXPECT_FALSE(text.empty()) << "a gather whose peer aborted completed";
    EXPECT_LE(waited.count(), 30) << "the bounded wait took " << waited.count() << " s";
    if (w.rank == 0) std::printf("[ survivor ] rank 0 got: %s\n", text.c_str());
    doomed.abort();
    // The aborted communicator's kernel ends: the stream drains within seconds.
    cudaError_t const state = drained_within(stream, std::chrono::seconds(30));
    EXPECT_EQ(state, cudaSuccess) << "the stream still runs 30 s after Communicator::abort(): "
                                  << cudaGetErrorString(state);
  }
  // Every use of the aborted communicator is an error naming the abort, on every rank.
  std::string after;
  try {
    gather_on_doomed(13);
  } catch (const LogicError& e) {
    after = e.what();
  }
  EXPECT_NE(after.find("was aborted"), std::string::npos) << "got: '" << after << "'";
  MPI_Barrier(MPI_COMM_WORLD);
  // The world's communicator is untouched.
  PoolArray<std::uint8_t> wsend(bytes), wrecv(total);
  SYMMCOMM_CUDA_TRY(cudaMemsetAsync(wsend.get(), value_of(1, w.rank, 14), bytes, w.stream));
  gather_bytes(wsend.get(), wrecv.get(), bytes, w.stream, PathChoice::Auto);
  wait(w.comm, w.stream);
  expect_segments(wrecv.download(), bytes, 1, 14, "world gather after a peer aborted");
  SYMMCOMM_CUDA_TRY(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace symmcomm::test
