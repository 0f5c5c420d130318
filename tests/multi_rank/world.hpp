#pragma once
// The multi-rank test tier: one rank per MPI process, launched by ctest through mpirun. Ranks
// may share one GPU (NCCL 2.30's NCCL_MULTI_RANK_GPU_ENABLE, or a distinct NCCL_HOSTID per rank
// on 2.28: see main.cpp); the same tests run unchanged with one GPU per rank.
//
// Every rank runs every test in the same order. Decisions to skip are taken from facts that are
// the same on every rank (the communicator's capabilities), so no rank waits in a collective
// that another skipped. Data checks use EXPECT (never ASSERT) for the same reason.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "symmcomm/collectives/options.hpp"
#include "symmcomm/comm/communicator.hpp"
#include "symmcomm/comm/wait.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/memory/symm_allocator.hpp"

namespace symmcomm::test {

/// What this process runs as.
struct World {
  int rank = 0;
  int size = 1;
  std::string mode;  ///< how ranks share GPUs (see main.cpp)
  Communicator comm;
  std::unique_ptr<SymmAllocator> pool;
  cudaStream_t stream = nullptr;
};

/// The process's world (made once by main.cpp).
World& world();

/// The paths this communicator can take for an operation whose buffers are all symmetric
/// (Fallback and Auto always; NcclSymmetric and LsaKernel where the capabilities allow).
std::vector<PathChoice> paths_to_try(bool nccl_can, bool lsa_can);

/// Every rank's value of `mine`, in rank order (MPI_Allgather).
std::vector<int> all_ranks(int mine);

/// EXPECT that every rank took the same path (a rank that differs would hang the others).
void expect_same_path_everywhere(Path mine, const char* what);

/// cudaMemcpy through the world's stream, waited for.
inline void copy_sync(void* dst, const void* src, std::size_t bytes) {
  SYMMCOMM_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, world().stream));
  SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(world().stream));
}

/// Waits for the legacy stream's work (DeviceArray poisons its memory there with cudaMemset,
/// which is asynchronous for device memory and not ordered with the world's stream).
inline void settle() {
  SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
}

/// 0xAB bytes over `bytes` at `ptr`, ordered before what follows on the world's stream.
inline void poison_on_stream(void* ptr, std::size_t bytes) {
  SYMMCOMM_CUDA_TRY(cudaMemsetAsync(ptr, 0xAB, bytes, world().stream));
}

/// An array in the world's pool, freed when it goes. Tests allocate in the same order on every
/// rank, so the pool stays symmetric.
// The error a bounded wait for `stream` on `comm` ends with ("" when the work completed): a
// TimeoutError's or an NcclError's text.
inline std::string wait_error(const Communicator& comm, cudaStream_t stream,
                              std::chrono::seconds limit) {
  try {
    wait(comm, stream, limit);
  } catch (const TimeoutError& e) {
    return e.what();
  } catch (const NcclError& e) {
    return e.what();
  }
  return "";
}

// Polls `stream` until it has no work left or `limit` passed: cudaSuccess once drained, else
// cudaErrorNotReady (or the error the stream reported). For "the kernel ends after an abort".
inline cudaError_t drained_within(cudaStream_t stream, std::chrono::seconds limit) {
  auto const start = std::chrono::steady_clock::now();
  cudaError_t state = cudaStreamQuery(stream);
  while (state == cudaErrorNotReady && std::chrono::steady_clock::now() - start < limit) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    state = cudaStreamQuery(stream);
  }
  return state;
}

template <class T>
class PoolArray {
 public:
  explicit PoolArray(std::size_t count)
      : ptr_(static_cast<T*>(world().pool->allocate(count > 0 ? count * sizeof(T) : 16))),
        count_(count) {}
  PoolArray(const PoolArray&) = delete;
  PoolArray& operator=(const PoolArray&) = delete;
  ~PoolArray() { world().pool->deallocate(ptr_); }
  T* get() const { return ptr_; }
  std::size_t count() const { return count_; }
  // Copies and poison go through the world's stream: the collectives run there (a
  // non-blocking stream), and the legacy stream's cudaMemset/cudaMemcpy are not ordered with it.
  void upload(const std::vector<T>& host) { copy_sync(ptr_, host.data(), host.size() * sizeof(T)); }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    copy_sync(host.data(), ptr_, count_ * sizeof(T));
    return host;
  }
  void poison() { poison_on_stream(ptr_, count_ * sizeof(T)); }

 private:
  T* ptr_;
  std::size_t count_;
};

}  // namespace symmcomm::test
