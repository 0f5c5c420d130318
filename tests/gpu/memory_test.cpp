// The memory layer on a real one-rank NCCL communicator: communicators, symmetric buffers,
// the verifier and groups (the pool: symm_allocator_test.cpp).

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "memory/provenance_internal.hpp"  // white-box: lookups by communicator id
#include "support/comm_fixture.hpp"
#include "support/tensors.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/comm/group.hpp"
#include "symmcomm/comm/wait.hpp"
#include "symmcomm/memory/provenance.hpp"
#include "symmcomm/memory/symm_allocator.hpp"
#include "symmcomm/memory/symmetric_buffer.hpp"
#include "symmcomm/memory/verify.hpp"

namespace {

using namespace symmcomm;
using symmcomm::test::device_free_bytes;
using symmcomm::test::one_rank_comm;

using symmcomm::test::error_text;
using symmcomm::test::logic_error_text;

// symmcomm's waits poll the stream and NCCL's asynchronous error state instead of blocking:
// a stream that does not drain in time gives a TimeoutError naming the timeout, not a hang.
TEST(Communicator, WaitWatchesAsyncErrorsAndTimesOut) {
  SYMMCOMM_REQUIRE_GPU();
  using namespace std::chrono_literals;
  Communicator& comm = one_rank_comm();
  EXPECT_EQ(comm.async_error(), ncclSuccess);
  EXPECT_NO_THROW(comm.check_async_error());
  cudaStream_t stream = nullptr;
  SYMMCOMM_CUDA_TRY(cudaStreamCreate(&stream));
  EXPECT_NO_THROW(wait(comm, stream, 100ms));
  // A host function sleeping 1.5 s holds the stream (standing in for a collective whose peer
  // never arrives).
  SYMMCOMM_CUDA_TRY(cudaLaunchHostFunc(
      stream, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(1500)); },
      nullptr));
  auto const start = std::chrono::steady_clock::now();
  std::string const m = error_text<TimeoutError>([&] { wait(comm, stream, 100ms); });
  auto const waited = std::chrono::steady_clock::now() - start;
  EXPECT_NE(m.find("timeout 100 ms"), std::string::npos) << m;
  EXPECT_LT(waited, 1000ms);
  EXPECT_NO_THROW(wait(comm, stream, 0ms));  // 0: no timeout; the stream drains
  EXPECT_THROW(wait(comm, stream, -1ms), LogicError);
  SYMMCOMM_CUDA_TRY(cudaStreamDestroy(stream));
}

// ncclCommAbort through symmcomm: every later use is a LogicError saying so, buffers still free
// their memory, and teardown neither crashes nor hangs.
TEST(Communicator, AbortMakesEveryUseAnErrorAndTearsDownCleanly) {
  SYMMCOMM_REQUIRE_GPU();
  auto comms = create_local_communicators({0});
  Communicator comm = std::move(comms.at(0));
  SymmetricBuffer buffer(comm, 1 << 20);
  SymmAllocator pool(comm, PoolOptions{8 << 20});
  void* p = pool.allocate(4096);
  comm.abort();
  comm.abort();  // idempotent
  EXPECT_NE(comm.async_error(), ncclSuccess);
  std::string const m = error_text<LogicError>([&] { comm.check_async_error(); });
  EXPECT_NE(m.find("was aborted"), std::string::npos) << m;
  std::string const m2 = error_text<LogicError>([&] {
    all_gather(comm, Bf16Span{static_cast<bf16*>(p), 16}, Bf16Span{static_cast<bf16*>(p), 16},
               nullptr);
  });
  EXPECT_NE(m2.find("was aborted"), std::string::npos) << m2;
  EXPECT_THROW(pool.allocate(4096), LogicError);
  EXPECT_THROW(SymmetricBuffer(comm, 4096), LogicError);
  // symmcomm's own waits do not hang on an aborted communicator: they refuse at once.
  EXPECT_THROW(wait(comm, nullptr, std::chrono::milliseconds(0)), LogicError);
  pool.deallocate(p);
}

TEST(Communicator, OneRankFacts) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.size(), 1);
  EXPECT_EQ(comm.device(), 0);
  EXPECT_TRUE(comm.capabilities().probed);
  EXPECT_GE(comm.capabilities().runtime_version, kMinNcclVersion);
  // NCCL reports no symmetric support for a single rank (measured on H200, NCCL 2.28): the
  // probe must say so with NCCL's reason rather than claim support.
  if (!comm.capabilities().symmetric_memory) {
    EXPECT_FALSE(comm.capabilities().reason.empty());
    std::cout << "symmetric support: no (" << comm.capabilities().reason << ")\n";
  }
}

TEST(Communicator, RejectsBadDevices) {
  SYMMCOMM_REQUIRE_GPU();
  std::string const m = error_text<LogicError>([] { create_local_communicators({0, 0}); });
  EXPECT_NE(m.find("repeats a device"), std::string::npos) << m;
  EXPECT_NE(
      error_text<LogicError>([] { create_local_communicators({999}); }).find("devices[0] = 999"),
      std::string::npos);
}

TEST(SymmetricBuffer, AllocateRegisterDeregisterFree) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  std::size_t const before = registered_window_count();
  {
    SymmetricBuffer buffer(comm, 1 << 20);
    ASSERT_NE(buffer.data(), nullptr);
    EXPECT_NE(buffer.window(), nullptr);
    EXPECT_EQ(buffer.size(), 1u << 20);
    EXPECT_EQ(registered_window_count(), before + 1);
    support::fill_on(nullptr, buffer.data(), 1, buffer.size());
    SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(nullptr));
    Provenance p = provenance_of(comm, static_cast<char*>(buffer.data()) + 4096, 4096);
    EXPECT_TRUE(p.symmetric());
    EXPECT_EQ(p.offset, 4096u);
    EXPECT_EQ(p.window, buffer.window());
    auto span = buffer.span<float>(16, 32);
    EXPECT_EQ(static_cast<void*>(span.data), static_cast<char*>(buffer.data()) + 64);
    EXPECT_THROW(buffer.region(1 << 20, 1), LogicError);
    SymmetricBuffer moved = std::move(buffer);
    EXPECT_EQ(buffer.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
    EXPECT_NE(moved.data(), nullptr);
  }
  EXPECT_EQ(registered_window_count(), before);
}

TEST(SymmetricBuffer, ThousandCyclesKeepDeviceMemoryFlat) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  { SymmetricBuffer warm(comm, 4 << 20); }
  std::size_t const before = device_free_bytes();
  for (int i = 0; i < 1000; ++i) {
    SymmetricBuffer buffer(comm, 4 << 20);
    ASSERT_NE(buffer.window(), nullptr);
  }
  std::size_t const after = device_free_bytes();
  // Allow NCCL's own lazily grown bookkeeping a little slack, far below 1000 x 4 MiB.
  EXPECT_LE(before - std::min(before, after), std::size_t{64} << 20)
      << "free before " << before << ", after " << after;
}

// Memory and windows an engine already has: register_memory() registers the caller's
// ncclMemAlloc memory (symmcomm deregisters, never frees); adopt_window() records a window the
// caller registered (symmcomm touches neither). Both enter provenance; overlaps, null and
// non-device arguments are refused naming the call; the caller's memory and window outlive them.
TEST(SymmetricBuffer, RegisterAndAdoptWhatTheCallerOwns) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  bool const symmetric = comm.capabilities().symmetric_memory;
  std::size_t const bytes = 1 << 20;
  auto& registry = ProvenanceRegistry::global();
  void* mem = nullptr;
  SYMMCOMM_NCCL_TRY(ncclMemAlloc(&mem, bytes));
  {
    SymmetricBuffer reg = SymmetricBuffer::register_memory(comm, mem, bytes);
    EXPECT_EQ(reg.data(), mem);
    // A window makes the range symmetric; NCCL 2.28 registers one on a one-rank communicator
    // even without device-API (symmetric kernel) support, so the capability only forces it.
    EXPECT_EQ(registry.lookup(mem, bytes, comm.id()).symmetric(), reg.window() != nullptr);
    if (symmetric) {
      EXPECT_NE(reg.window(), nullptr);
    }
    if (reg.window() != nullptr) {
      std::string const m =
          logic_error_text([&] { SymmetricBuffer::register_memory(comm, mem, 4096); });
      EXPECT_NE(m.find("overlaps a window already registered or adopted"), std::string::npos) << m;
    }
  }
  // Deregistered, not freed: the memory is still the caller's.
  EXPECT_FALSE(registry.lookup(mem, bytes, comm.id()).symmetric());
  support::fill_on(nullptr, mem, 1, bytes);
  SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());

  ncclWindow_t window = nullptr;
  ncclResult_t const r =
      ncclCommWindowRegister(comm.get(), mem, bytes, &window, NCCL_WIN_COLL_SYMMETRIC);
  if (r == ncclSuccess && window != nullptr) {
    {
      SymmetricBuffer adopted = SymmetricBuffer::adopt_window(comm, window, mem, bytes);
      EXPECT_EQ(adopted.window(), window);
      EXPECT_TRUE(registry.lookup(static_cast<char*>(mem) + 4096, 4096, comm.id()).symmetric());
      std::string const m =
          logic_error_text([&] { SymmetricBuffer::adopt_window(comm, window, mem, bytes); });
      EXPECT_NE(m.find("overlaps"), std::string::npos) << m;
    }
    EXPECT_FALSE(registry.lookup(mem, bytes, comm.id()).symmetric());
    // Still registered: the caller deregisters it.
    EXPECT_EQ(ncclCommWindowDeregister(comm.get(), window), ncclSuccess);
  } else {
    (void)cudaGetLastError();
    EXPECT_FALSE(symmetric) << "NCCL refused a window on a communicator with symmetric support";
  }
  std::string m = logic_error_text([&] { SymmetricBuffer::register_memory(comm, nullptr, 16); });
  EXPECT_NE(m.find("SymmetricBuffer::register_memory: ptr is null"), std::string::npos) << m;
  std::vector<char> host(4096);
  m = logic_error_text([&] { SymmetricBuffer::register_memory(comm, host.data(), host.size()); });
  EXPECT_NE(m.find("not device memory"), std::string::npos) << m;
  m = logic_error_text([&] { SymmetricBuffer::adopt_window(comm, nullptr, mem, bytes); });
  EXPECT_NE(m.find("window is null"), std::string::npos) << m;
  if (symmetric) {
    // A pool arena's memory is already a window of this communicator.
    SymmAllocator pool(comm, PoolOptions{1 << 20, 1 << 20, false, 0, 256});
    void* p = pool.allocate(4096);
    m = logic_error_text([&] { SymmetricBuffer::register_memory(comm, p, 4096); });
    EXPECT_NE(m.find("overlaps"), std::string::npos) << m;
    pool.deallocate(p);
  }
  SYMMCOMM_NCCL_TRY(ncclMemFree(mem));
}

TEST(SymmetricBuffer, BadSizes) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  EXPECT_NE(error_text<LogicError>([&] { SymmetricBuffer b(comm, 0); }).find("bytes is 0"),
            std::string::npos);
  std::string const m =
      error_text<OutOfMemory>([&] { SymmetricBuffer b(comm, std::size_t{1} << 50); });
  EXPECT_NE(m.find("exceeds"), std::string::npos) << m;
  SymmetricBuffer still_fine(comm, 4096);  // the communicator is still usable
  EXPECT_NE(still_fine.window(), nullptr);
}

TEST(SymmetricBuffer, RegistrationDuringCaptureIsRefused) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  cudaStream_t stream;
  SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  std::string const m = error_text<LogicError>([&] { SymmetricBuffer b(comm, 4096, stream); });
  cudaGraph_t graph;
  SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(stream, &graph));
  SYMMCOMM_CUDA_TRY(cudaGraphDestroy(graph));
  SYMMCOMM_CUDA_TRY(cudaStreamDestroy(stream));
  EXPECT_NE(m.find("captured"), std::string::npos) << m;
}

TEST(SymmetricBuffer, BuffersKeepTheirOwnedCommunicatorAlive) {
  SYMMCOMM_REQUIRE_GPU();
  auto comms = create_local_communicators({0});
  SymmetricBuffer buffer(comms[0], 8192);
  std::uint64_t const id = comms[0].id();
  comms.clear();  // the ncclComm_t must outlive the window: teardown waits for the buffer
  EXPECT_TRUE(ProvenanceRegistry::global().lookup(buffer.data(), 8192, id).symmetric());
  EXPECT_NO_THROW(buffer.region(0, 8192));
}

TEST(SymmetricBuffer, UseAfterBorrowedCommunicatorReleasedIsRefused) {
  SYMMCOMM_REQUIRE_GPU();
  ncclComm_t raw = nullptr;
  int device = 0;
  SYMMCOMM_NCCL_TRY(ncclCommInitAll(&raw, 1, &device));
  {
    SymmetricBuffer buffer;
    {
      Communicator borrowed = Communicator::borrow(raw, Communicator::Probe::No);
      buffer = SymmetricBuffer(borrowed, 8192);
    }
    std::string const m = error_text<LogicError>([&] { buffer.region(0, 16); });
    EXPECT_NE(m.find("was released"), std::string::npos) << m;
  }
  SYMMCOMM_NCCL_TRY(ncclCommDestroy(raw));
}

TEST(VerifySymmetric, PassesOnOneRank) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  SymmAllocator pool(comm, PoolOptions{1 << 20, 1 << 20, true, 0, 256});
  void* p = pool.allocate(1000);
  SymmetricBuffer extra(comm, 1 << 16);
  EXPECT_NO_THROW(verify_symmetric(comm));
  pool.deallocate(p);
}

TEST(Group, BuffersCreatedInsideAGroupGetTheirWindowAtTheEnd) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  std::vector<SymmetricBuffer> buffers;
  {
    Group group;
    for (int i = 0; i < 3; ++i) buffers.emplace_back(comm, 1 << 16);
  }
  for (auto& b : buffers) {
    EXPECT_NE(b.window(), nullptr);
    EXPECT_TRUE(provenance_of(comm, b.data(), 1 << 16).symmetric());
  }
  {
    Group group;
    buffers.clear();  // deregistrations grouped, frees after the group ends
  }
  EXPECT_FALSE(Group::active());
}

}  // namespace
