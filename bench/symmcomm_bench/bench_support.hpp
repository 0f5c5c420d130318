#pragma once
// Private helpers of symmcomm-bench's runners: barriers across threads and processes, per-rank
// threads, buffer ownership, event timing, fills.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "config.hpp"
#include "runner.hpp"
#include "support/ordered_copy.hpp"
#include "symmcomm/collectives/options.hpp"
#include "symmcomm/detail/cuda_utils.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/fp8.hpp"

#if defined(SYMMCOMM_WITH_MPI)
#include <mpi.h>
#endif

namespace symmcomm::bench {

// Synchronises the ranks of this process (threads) and, under MPI, the processes.
class Barrier {
 public:
  Barrier(int parties, bool mpi) : parties_(parties), mpi_(mpi) {}
  void wait() {
    wait_threads();
#if defined(SYMMCOMM_WITH_MPI)
    if (mpi_) MPI_Barrier(MPI_COMM_WORLD);  // one thread per process under MPI
#endif
  }

 private:
  void wait_threads() {
    std::unique_lock lock(mutex_);
    int const generation = generation_;
    if (++waiting_ == parties_) {
      waiting_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation != generation_; });
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  int parties_, waiting_ = 0, generation_ = 0;
  bool mpi_;
};

// Across processes under MPI (identity otherwise).
inline double global_max(const Ranks& ranks, double local) {
#if defined(SYMMCOMM_WITH_MPI)
  if (ranks.mpi) MPI_Allreduce(MPI_IN_PLACE, &local, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
#else
  (void)ranks;
#endif
  return local;
}
inline long long global_sum(const Ranks& ranks, long long local) {
#if defined(SYMMCOMM_WITH_MPI)
  if (ranks.mpi) MPI_Allreduce(MPI_IN_PLACE, &local, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
#else
  (void)ranks;
#endif
  return local;
}

inline void parallel(Ranks& ranks, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(ranks.comms.size());
  for (int r = 0; r < ranks.local(); ++r) {
    threads.emplace_back([&, r] {
      try {
        detail::DeviceGuard guard(ranks.comms[static_cast<std::size_t>(r)].device());
        body(r);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// Buffers of one rank for one measurement: from the pool (symmetric) or cudaMalloc (plain).
class Buffers {
 public:
  explicit Buffers(SymmAllocator& pool) : pool_(pool) {}
  ~Buffers() {
    for (auto [p, from_pool] : owned_) {
      if (from_pool) {
        pool_.deallocate(p);
      } else {
        cudaFree(p);
      }
    }
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  template <class T = std::uint8_t>
  T* get(std::size_t bytes, bool symmetric) {
    void* p = nullptr;
    if (symmetric) {
      p = pool_.allocate(std::max<std::size_t>(bytes, 16));
    } else {
      SYMMCOMM_CUDA_TRY(cudaMalloc(&p, std::max<std::size_t>(bytes, 16)));
    }
    owned_.emplace_back(p, symmetric);
    return static_cast<T*>(p);
  }

 private:
  SymmAllocator& pool_;
  std::vector<std::pair<void*, bool>> owned_;
};

inline double time_iterations(cudaStream_t stream, Barrier& barrier, int warmup, int iters,
                              const std::function<void()>& work) {
  for (int i = 0; i < warmup; ++i) work();
  SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(stream));
  barrier.wait();
  cudaEvent_t start, stop;
  SYMMCOMM_CUDA_TRY(cudaEventCreate(&start));
  SYMMCOMM_CUDA_TRY(cudaEventCreate(&stop));
  SYMMCOMM_CUDA_TRY(cudaEventRecord(start, stream));
  for (int i = 0; i < iters; ++i) work();
  SYMMCOMM_CUDA_TRY(cudaEventRecord(stop, stream));
  SYMMCOMM_CUDA_TRY(cudaEventSynchronize(stop));
  float ms = 0;
  SYMMCOMM_CUDA_TRY(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return static_cast<double>(ms) * 1e3 / iters;
}

inline PathChoice choice_of(BenchPath p) {
  switch (p) {
    case BenchPath::NcclSymmetric:
      return PathChoice::NcclSymmetric;
    case BenchPath::Lsa:
      return PathChoice::LsaKernel;
    case BenchPath::Fallback:
      return PathChoice::Fallback;
    default:
      return PathChoice::Auto;
  }
}

inline Fp8Format fp8_of(Dtype d) {
  return d == Dtype::Fp8E5M2 ? Fp8Format::E5M2 : Fp8Format::E4M3;
}

// Host <-> device copies of the runners, each on the rank's stream (the one its collectives
// run on, cudaStreamNonBlocking) and waited for: a pageable cudaMemcpy runs on the legacy
// stream, may return before its DMA lands and is not ordered with a non-blocking stream, so
// an in-place check could read its input before the restore landed (1 run in 6-20).
inline void fill(cudaStream_t stream, void* p, std::size_t bytes,
                 const std::vector<std::uint8_t>& pattern) {
  for (std::size_t off = 0; off < bytes; off += pattern.size()) {
    support::copy_on(stream, static_cast<char*>(p) + off, pattern.data(),
                     std::min(pattern.size(), bytes - off));
  }
}

inline void upload(cudaStream_t stream, void* dst, const std::vector<std::uint8_t>& host) {
#if defined(SYMMCOMM_BENCH_LEGACY_UPLOAD)
  // The race of issue #28 rebuilt on purpose (CMake option SYMMCOMM_BENCH_LEGACY_UPLOAD), to
  // show that `-c N` catches it; never used for figures.
  (void)stream;
  // stream-order-ok: unordered on purpose (above).
  SYMMCOMM_CUDA_TRY(cudaMemcpy(dst, host.data(), host.size(), cudaMemcpyHostToDevice));
#else
  support::upload_on(stream, dst, host);
#endif
}

inline std::vector<std::uint8_t> download(cudaStream_t stream, const void* src, std::size_t bytes) {
  return support::download_on<std::uint8_t>(stream, src, bytes);
}

template <class T>
std::vector<std::uint8_t> repeat(T value) {
  std::vector<std::uint8_t> p(1 << 16);
  for (std::size_t i = 0; i < p.size(); i += sizeof(T)) std::memcpy(&p[i], &value, sizeof(T));
  return p;
}

}  // namespace symmcomm::bench
