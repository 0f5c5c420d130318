// SymmAllocator (the pool) on a real one-rank NCCL communicator: allocation, statistics,
// provenance, failures that leave it usable, capture, stream-ordered frees, threads.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "support/comm_fixture.hpp"
#include "support/tensors.hpp"
#include "symmcomm/comm/wait.hpp"
#include "symmcomm/memory/provenance.hpp"
#include "symmcomm/memory/symm_allocator.hpp"
#include "symmcomm/testing/fault_injection.hpp"

namespace {

using namespace symmcomm;
using symmcomm::test::device_free_bytes;
using symmcomm::test::one_rank_comm;

using symmcomm::test::DeviceArray;
using symmcomm::test::error_text;
using symmcomm::test::logic_error_text;

TEST(SymmAllocator, AllocateFreeStatsAndProvenance) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  SymmAllocator pool(comm, PoolOptions{8 << 20, 8 << 20, true, 0, 256});
  void* a = pool.allocate(1000);
  void* b = pool.allocate(5000, 4096);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % 256, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b) % 4096, 0u);
  PoolStats s = pool.stats();
  EXPECT_EQ(s.arena_count, 1u);
  EXPECT_EQ(s.reserved_bytes, 8u << 20);
  EXPECT_EQ(s.live_allocations, 2u);
  EXPECT_EQ(s.in_use_bytes, 1024u + 5120u);

  Provenance p = provenance_of(comm, b, 5000);
  EXPECT_TRUE(p.symmetric());
  EXPECT_EQ(p.offset, pool.region_of(b).window_offset);
  void* plain = nullptr;
  SYMMCOMM_CUDA_TRY(cudaMalloc(&plain, 4096));
  EXPECT_EQ(provenance_of(comm, plain, 4096).status, ProvenanceStatus::NotRegistered);
  SYMMCOMM_CUDA_TRY(cudaFree(plain));

  // Growth on demand: a request larger than the arena adds one.
  void* big = pool.allocate(12 << 20);
  EXPECT_EQ(pool.stats().arena_count, 2u);
  EXPECT_EQ(pool.stats().growths, 1u);
  pool.deallocate(big);
  EXPECT_EQ(pool.release_unused(), (std::size_t{12} << 20) + 256);  // the grown arena only
  pool.deallocate(a);
  pool.deallocate_sync(b, 5000, 4096);
  EXPECT_EQ(pool.stats().in_use_bytes, 0u);
  EXPECT_GE(pool.stats().high_water_bytes, std::size_t{12} << 20);
  EXPECT_TRUE(pool == pool);
}

TEST(SymmAllocator, BadInputIsRefusedAndPoolStaysUsable) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  SymmAllocator pool(comm, PoolOptions{4 << 20, 4 << 20, true, 64 << 20, 256});
  EXPECT_NE(error_text<LogicError>([&] { pool.allocate(0); }).find("bytes is 0"),
            std::string::npos);
  EXPECT_NE(error_text<LogicError>([&] { pool.allocate(std::size_t{1} << 60); }).find("absurd"),
            std::string::npos);
  EXPECT_NE(error_text<LogicError>([&] { pool.allocate(64, 100); }).find("alignment 100"),
            std::string::npos);
  // Over the cap: OutOfMemory, nothing changed.
  PoolStats const before = pool.stats();
  EXPECT_NE(error_text<OutOfMemory>([&] { pool.allocate(100 << 20); }).find("max_bytes"),
            std::string::npos);
  EXPECT_EQ(pool.stats().reserved_bytes, before.reserved_bytes);
  // Foreign and double frees.
  int host_value = 0;
  EXPECT_NE(error_text<LogicError>([&] {
              pool.deallocate(&host_value);
            }).find("not allocated by this pool"),
            std::string::npos);
  void* p = pool.allocate(4096);
  pool.deallocate(p);
  EXPECT_NE(error_text<LogicError>([&] { pool.deallocate(p); }).find("already freed"),
            std::string::npos);
  // Still usable.
  void* q = pool.allocate(4096);
  EXPECT_EQ(q, p);  // deterministic first fit
  pool.deallocate(q);
}

TEST(SymmAllocator, RealDeviceExhaustionLeavesPoolConsistent) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  SymmAllocator pool(comm, PoolOptions{4 << 20, 4 << 20, true, 0, 256});
  void* keep = pool.allocate(1 << 20);
  std::size_t const free_now = device_free_bytes();
  EXPECT_THROW(pool.allocate(free_now + (std::size_t{1} << 30)), OutOfMemory);
  PoolStats const s = pool.stats();
  EXPECT_EQ(s.arena_count, 1u);
  EXPECT_EQ(s.live_allocations, 1u);
  void* more = pool.allocate(1 << 20);
  EXPECT_NE(more, nullptr);
  pool.deallocate(more);
  pool.deallocate(keep);
}

// An injected allocation failure while the pool grows: OutOfMemory naming the injection, the
// pool's arenas, allocations and provenance unchanged, and the next growth succeeds.
TEST(SymmAllocator, InjectedGrowthFailureLeavesPoolConsistentAndUsable) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  SymmAllocator pool(comm, PoolOptions{1 << 20, 1 << 20, true, 0, 256});
  void* keep = pool.allocate(512 << 10);
  std::vector<std::uint8_t> pattern(512 << 10, 0x5A);
  support::upload_on(nullptr, keep, pattern);
  PoolStats const before = pool.stats();
  fault_injection::fail_next_symmetric_allocations(1);
  std::string const m = error_text<OutOfMemory>([&] { pool.allocate(4 << 20); });
  EXPECT_NE(m.find("injected failure"), std::string::npos) << m;
  EXPECT_EQ(fault_injection::pending_symmetric_allocation_failures(), 0);
  PoolStats const after = pool.stats();
  EXPECT_EQ(after.arena_count, before.arena_count);
  EXPECT_EQ(after.live_allocations, before.live_allocations);
  EXPECT_EQ(after.reserved_bytes, before.reserved_bytes);
  EXPECT_EQ(support::download_on<std::uint8_t>(nullptr, keep, pattern.size()),
            pattern);                    // nothing lost
  void* grown = pool.allocate(4 << 20);  // no failure pending: the pool grows
  EXPECT_NE(grown, nullptr);
  EXPECT_EQ(pool.stats().arena_count, before.arena_count + 1);
  pool.deallocate(grown);
  pool.deallocate(keep);
}

// Stream-ordered free: a block freed right after enqueueing work that still reads it goes back
// to the pool at once (the next allocation of that size gets the same offset: symmetric), but
// its new user waits for the reader: on its stream (event wait) or on the host (no stream).
// The reader is held back by a host function sleeping on its stream, so a reuse that did not
// wait would overwrite the data before it is read.
void CUDART_CB sleep_ms(void* ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(*static_cast<int*>(ms)));
}

TEST(SymmAllocator, StreamOrderedFreeNeverLetsReuseOverwriteDataStillBeingRead) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  SymmAllocator pool(comm, PoolOptions{4 << 20, 1 << 20, true, 0, 256});
  std::size_t const bytes = 1 << 20;
  cudaStream_t reader = nullptr, writer = nullptr;
  SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&reader, cudaStreamNonBlocking));
  SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&writer, cudaStreamNonBlocking));
  DeviceArray<std::uint8_t> out(bytes);
  static int delay_ms = 200;
  for (bool with_stream : {true, false}) {
    std::string const at = with_stream ? "reuse on a stream" : "reuse without a stream";
    void* a = pool.allocate(bytes, 0, reader);
    // On the reader's stream: the legacy stream's memsets would not be ordered before it.
    support::fill_on(reader, a, 0x11, bytes);
    out.poison(0, reader);
    // The reader: held back, then copies `a` out.
    SYMMCOMM_CUDA_TRY(cudaLaunchHostFunc(reader, sleep_ms, &delay_ms));
    SYMMCOMM_CUDA_TRY(cudaMemcpyAsync(out.get(), a, bytes, cudaMemcpyDeviceToDevice, reader));
    pool.deallocate(a, reader);  // right after enqueueing the read
    void* b = pool.allocate(bytes, 0, with_stream ? writer : nullptr);
    EXPECT_EQ(b, a) << at << ": the freed block is reused at the same offset (deterministic)";
    if (with_stream) {
      SYMMCOMM_CUDA_TRY(cudaMemsetAsync(b, 0xEE, bytes, writer));
      SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(writer));
    } else {
      // The host waited for the reader: it has already passed the free.
      EXPECT_EQ(cudaStreamQuery(reader), cudaSuccess) << at;
      support::fill_on(nullptr, b, 0xEE, bytes);  // the legacy stream, as a stream-less user
    }
    SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(reader));
    auto const got = out.download(reader);
    std::size_t overwritten = 0;
    for (std::uint8_t v : got) overwritten += v != 0x11;
    EXPECT_EQ(overwritten, 0u) << at << ": the reader saw data written by the block's next user";
    pool.deallocate(b);
  }
  // A null stream is the legacy default stream (PyTorch's default stream): the free is ordered
  // on it like on any other, so a reader held back there is still not overwritten.
  {
    void* a = pool.allocate(bytes, 0, nullptr);
    support::fill_on(nullptr, a, 0x22, bytes);
    out.poison(0, nullptr);
    SYMMCOMM_CUDA_TRY(cudaLaunchHostFunc(nullptr, sleep_ms, &delay_ms));
    SYMMCOMM_CUDA_TRY(cudaMemcpyAsync(out.get(), a, bytes, cudaMemcpyDeviceToDevice, nullptr));
    pool.deallocate(a, nullptr);
    void* b = pool.allocate(bytes, 0, writer);  // non-blocking: only the event orders it
    EXPECT_EQ(b, a) << "legacy stream: the freed block is reused at the same offset";
    SYMMCOMM_CUDA_TRY(cudaMemsetAsync(b, 0xEE, bytes, writer));
    SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
    auto const got = out.download();
    std::size_t overwritten = 0;
    for (std::uint8_t v : got) overwritten += v != 0x22;
    EXPECT_EQ(overwritten, 0u) << "legacy stream: the reader saw the block's next user's data";
    pool.deallocate(b);
  }
  // Refused: a capturing stream.
  void* c = pool.allocate(4096);
  cudaGraph_t graph = nullptr;
  SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(writer, cudaStreamCaptureModeThreadLocal));
  std::string m = logic_error_text([&] { pool.deallocate(c, writer); });
  SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(writer, &graph));
  if (graph != nullptr) cudaGraphDestroy(graph);
  EXPECT_NE(m.find("is being captured"), std::string::npos) << m;
  pool.deallocate(c);  // still live after the refusals
  EXPECT_EQ(pool.stats().live_allocations, 0u);
  // A pending free at destruction is waited for (no event leaks, no error).
  {
    SymmAllocator scoped(comm, PoolOptions{1 << 20, 1 << 20, false, 0, 256});
    void* d = scoped.allocate(4096);
    SYMMCOMM_CUDA_TRY(cudaLaunchHostFunc(reader, sleep_ms, &delay_ms));
    scoped.deallocate(d, reader);
  }
  EXPECT_EQ(cudaStreamQuery(reader), cudaSuccess);
  cudaStreamDestroy(reader);
  cudaStreamDestroy(writer);
}

// A host wait for a stream-ordered free that never completes (its stream stuck, e.g. behind a
// collective a peer never joins) is bounded: TimeoutError after SYMMCOMM_WAIT_TIMEOUT_S; the
// allocation that waited hands nothing out, release_unused releases nothing. ctest runs it as
// gpu.SymmAllocatorHostWaitIsBounded with SYMMCOMM_WAIT_TIMEOUT_S=1 (the timeout is read once per
// process).
std::atomic<bool> hold_released{false};
void CUDART_CB hold_until_released(void*) {
  while (!hold_released.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST(SymmAllocator, AHostWaitForAFreeThatNeverCompletesIsBoundedAndHandsNothingOut) {
  SYMMCOMM_REQUIRE_GPU();
  auto const timeout = default_wait_timeout();
  if (timeout.count() == 0 || timeout > std::chrono::seconds(5)) {
    GTEST_SKIP() << "needs SYMMCOMM_WAIT_TIMEOUT_S between 1 and 5 (ctest's "
                    "gpu.SymmAllocatorHostWaitIsBounded sets 1)";
  }
  Communicator& comm = one_rank_comm();
  SymmAllocator pool(comm, PoolOptions{1 << 20, 1 << 20, false, 0, 256});
  cudaStream_t stuck = nullptr;
  SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&stuck, cudaStreamNonBlocking));
  void* a = pool.allocate(4096, 0, stuck);
  hold_released = false;
  SYMMCOMM_CUDA_TRY(cudaLaunchHostFunc(stuck, hold_until_released, nullptr));
  pool.deallocate(a, stuck);
  PoolStats const before = pool.stats();
  auto const start = std::chrono::steady_clock::now();
  std::string const m = error_text<TimeoutError>([&] { pool.allocate(4096); });
  auto const waited = std::chrono::steady_clock::now() - start;
  EXPECT_NE(m.find("SymmAllocator: reusing memory freed on a stream"), std::string::npos) << m;
  EXPECT_GE(waited, timeout);
  EXPECT_LT(waited, timeout + std::chrono::seconds(10));
  PoolStats const after = pool.stats();
  EXPECT_EQ(after.in_use_bytes, before.in_use_bytes) << "the refused allocation kept its block";
  EXPECT_EQ(after.live_allocations, before.live_allocations);
  // Releasing unused arenas waits for the same free: bounded too, and nothing is released.
  std::string const r = error_text<TimeoutError>([&] { pool.release_unused(); });
  EXPECT_NE(r.find("SymmAllocator::release_unused: memory freed on a stream"), std::string::npos)
      << r;
  EXPECT_EQ(pool.stats().arena_count, after.arena_count);
  // Once the stream moves on, the same request gets the same block.
  hold_released = true;
  SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(stuck));
  void* b = pool.allocate(4096);
  EXPECT_EQ(b, a);
  pool.deallocate(b);
  cudaStreamDestroy(stuck);
}

TEST(SymmAllocator, GrowthDuringCaptureIsRefusedButReservedSpaceIsHandedOut) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  SymmAllocator pool(comm, PoolOptions{1 << 20, 1 << 20, true, 0, 256});
  cudaStream_t stream;
  SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  void* inside = nullptr;
  EXPECT_NO_THROW(inside = pool.allocate(4096, 0, stream));
  std::string const m = error_text<LogicError>([&] { pool.allocate(8 << 20, 0, stream); });
  cudaGraph_t graph;
  SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(stream, &graph));
  SYMMCOMM_CUDA_TRY(cudaGraphDestroy(graph));
  SYMMCOMM_CUDA_TRY(cudaStreamDestroy(stream));
  EXPECT_NE(m.find("captured"), std::string::npos) << m;
  EXPECT_EQ(pool.stats().arena_count, 1u);
  pool.deallocate(inside);
}

TEST(SymmAllocator, ThousandArenaCyclesAndTenThousandAllocationsKeepMemoryFlat) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  { SymmAllocator warm(comm, PoolOptions{2 << 20, 2 << 20, true, 0, 256}); }
  std::size_t const before = device_free_bytes();
  {
    SymmAllocator pool(comm, PoolOptions{0, 2 << 20, true, 0, 256});
    for (int i = 0; i < 1000; ++i) {
      pool.reserve(2 << 20);
      ASSERT_EQ(pool.release_unused(), std::size_t{2} << 20);
    }
    pool.reserve(16 << 20);
    for (int i = 0; i < 10000; ++i) {
      void* p = pool.allocate(256 + static_cast<std::size_t>(i % 97) * 512);
      pool.deallocate(p);
    }
    EXPECT_EQ(pool.stats().live_allocations, 0u);
    EXPECT_EQ(pool.stats().allocations, 10000u);
  }
  std::size_t const after = device_free_bytes();
  EXPECT_LE(before - std::min(before, after), std::size_t{64} << 20)
      << "free before " << before << ", after " << after;
}

TEST(SymmAllocator, ThreadSafeUnderConcurrentUse) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  SymmAllocator pool(comm, PoolOptions{64 << 20, 64 << 20, false, 0, 256});
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      std::vector<void*> mine;
      for (int i = 0; i < 2000; ++i) {
        try {
          mine.push_back(pool.allocate(1024 + static_cast<std::size_t>(i % 7) * 256));
          if (mine.size() > 16) {
            pool.deallocate(mine.front());
            mine.erase(mine.begin());
          }
        } catch (...) {
          ++failures;
        }
      }
      for (void* p : mine) pool.deallocate(p);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(pool.stats().live_allocations, 0u);
}

}  // namespace
