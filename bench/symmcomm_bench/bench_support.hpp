#pragma once
// Private helpers of symmcomm-bench's runners: barriers across threads and processes, per-rank
// threads, buffer ownership, event timing, fills.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "config.hpp"
#include "core/cuda_utils.hpp"
#include "runner.hpp"
#include "support/ordered_copy.hpp"
#include "symmcomm/collectives/options.hpp"
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
inline long long global_sum(const Ranks& ranks, long long local) {
#if defined(SYMMCOMM_WITH_MPI)
  if (ranks.mpi) MPI_Allreduce(MPI_IN_PLACE, &local, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
#else
  (void)ranks;
#endif
  return local;
}

// Runs body(r) for every rank of this process, one thread each, rethrowing the first error.
// With several ranks in the process a rank that fails leaves the others waiting for it (in a
// collective or the host barrier) for ever: its error is printed and the process ends.
inline void parallel(Ranks& ranks, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(ranks.comms.size());
  int const local = ranks.local();
  for (int r = 0; r < local; ++r) {
    threads.emplace_back([&, r] {
      try {
        detail::DeviceGuard guard(ranks.comms[static_cast<std::size_t>(r)].device());
        body(r);
      } catch (const std::exception& e) {
        if (local > 1) {
          std::fprintf(stderr,
                       "symmcomm-bench: rank %d of this process failed: %s\nsymmcomm-bench: "
                       "the other ranks would wait for it for ever: stopping\n",
                       r, e.what());
          std::fflush(stderr);
          std::_Exit(3);
        }
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

// Waits for `event`; with a limit (-T), gives up after it: prints what was being measured and
// ends the process (a collective that never completes cannot be torn down cleanly; under
// mpirun the launcher then stops the other ranks).
inline void wait_or_give_up(cudaEvent_t event, int timeout_s, const std::string& what) {
  if (timeout_s <= 0) {
    SYMMCOMM_CUDA_TRY(cudaEventSynchronize(event));
    return;
  }
  auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  cudaError_t state;
  while ((state = cudaEventQuery(event)) == cudaErrorNotReady) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "symmcomm-bench: -T %d: %s did not complete within %d s; stopping\n",
                   timeout_s, what.c_str(), timeout_s);
      std::fflush(stderr);
      std::_Exit(4);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  SYMMCOMM_CUDA_TRY(state);
}

// How the timed loop runs (nccl-tests' -n, -w, -G, -z, -m, -C, -T).
struct Timing {
  int warmup = 5, iters = 20, graph_launches = 0, agg_iters = 1, timeout_s = 0;
  bool blocking = false, cpu_time = false;
  static Timing of(const Config& c) {
    return Timing{c.warmup,    c.iters,    c.graph_launches, c.agg_iters,
                  c.timeout_s, c.blocking, c.cpu_time};
  }
};

// Microseconds per call of `work` on `stream`: warm-up, then `iters` iterations of `agg_iters`
// calls each, plain or captured once in a CUDA graph and replayed `graph_launches` times; device
// time between two events, or host wall-clock time from the first enqueue to completion.
inline double time_iterations(cudaStream_t stream, Barrier& barrier, const Timing& t,
                              const std::function<void()>& work, const std::string& what) {
  auto const call = [&] {
    work();
    if (t.blocking) SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(stream));
  };
  // Nobody starts this job's kernels before every rank has left the previous job's: ranks that
  // share a GPU in one process run their kernels at once, and a rank already spinning in one
  // kind of kernel (symmcomm's, a CTA on every SM) while a peer still waits for room for another
  // kind (NCCL's, large CTAs) can hold the SMs that peer needs (measured: 8 threaded ranks'
  // moe-dp never finished when the combine's warm-up overlapped peers' dispatch).
  // (The same applies within a job: its calls should all be of one kind.)
  auto const drain = [&](const char* step) {
    cudaEvent_t done;
    SYMMCOMM_CUDA_TRY(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    SYMMCOMM_CUDA_TRY(cudaEventRecord(done, stream));
    wait_or_give_up(done, t.timeout_s, what + step);
    cudaEventDestroy(done);
  };
  drain(" (the previous job)");
  barrier.wait();
  for (int i = 0; i < t.warmup; ++i) call();
  drain(" (warm-up)");
  cudaGraphExec_t exec = nullptr;
  if (t.graph_launches > 0) {
    cudaGraph_t graph = nullptr;
    SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < t.iters * t.agg_iters; ++i) work();
    SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(stream, &graph));
    SYMMCOMM_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
    SYMMCOMM_CUDA_TRY(cudaGraphDestroy(graph));
    SYMMCOMM_CUDA_TRY(cudaGraphUpload(exec, stream));
    SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(stream));
  }
  barrier.wait();
  cudaEvent_t start, stop;
  SYMMCOMM_CUDA_TRY(cudaEventCreate(&start));
  SYMMCOMM_CUDA_TRY(cudaEventCreate(&stop));
  auto const host_start = std::chrono::steady_clock::now();
  SYMMCOMM_CUDA_TRY(cudaEventRecord(start, stream));
  long long calls = 0;
  if (exec != nullptr) {
    for (int g = 0; g < t.graph_launches; ++g) SYMMCOMM_CUDA_TRY(cudaGraphLaunch(exec, stream));
    calls = static_cast<long long>(t.graph_launches) * t.iters * t.agg_iters;
  } else {
    for (int i = 0; i < t.iters * t.agg_iters; ++i) call();
    calls = static_cast<long long>(t.iters) * t.agg_iters;
  }
  SYMMCOMM_CUDA_TRY(cudaEventRecord(stop, stream));
  wait_or_give_up(stop, t.timeout_s, what);
  double const host_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - host_start)
          .count();
  float ms = 0;
  SYMMCOMM_CUDA_TRY(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (exec != nullptr) SYMMCOMM_CUDA_TRY(cudaGraphExecDestroy(exec));
  double const total_us = t.cpu_time ? host_us : static_cast<double>(ms) * 1e3;
  return total_us / static_cast<double>(calls);
}

// The ranks' times combined as -a asks: rank 0's, the mean, the minimum or the maximum (across
// this process's ranks and, under MPI, every process's).
inline double combine_times(const Ranks& ranks, const std::vector<double>& local, Average how) {
  double lo = local.front(), hi = local.front(), sum = 0.0, first = 0.0;
  for (double v : local) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  first = ranks.prints() ? local.front() : 0.0;  // world rank 0 is this process's first rank
  int count = static_cast<int>(local.size());
#if defined(SYMMCOMM_WITH_MPI)
  if (ranks.mpi) {
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &count, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  }
#endif
  switch (how) {
    case Average::Rank0:
      return first;
    case Average::Min:
      return lo;
    case Average::Max:
      return hi;
    case Average::Mean:
      break;
  }
  return sum / static_cast<double>(count);
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
  // The upload race rebuilt on purpose (CMake option SYMMCOMM_BENCH_LEGACY_UPLOAD), to
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

// A MoE layer's rows (moe.cpp, moe_a2a.cpp): one rank's dispatch and combine timed into its
// slots of `dispatch` / `combine`, then a wait for the other ranks.
inline void time_layer(const Config& c, Barrier& barrier, cudaStream_t s,
                       const std::function<void()>& run_dispatch,
                       const std::function<void()>& run_combine, const std::string& what,
                       double& dispatch_us, double& combine_us) {
  dispatch_us = time_iterations(s, barrier, Timing::of(c), run_dispatch, what + " (dispatch)");
  combine_us = time_iterations(s, barrier, Timing::of(c), run_combine, what + " (combine)");
  SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(s));
  barrier.wait();
}

// The row of one layer's timings over the ranks.
inline MoeResult moe_result(const Config& c, Ranks& ranks, int tokens, std::string path,
                            const std::vector<double>& dispatch,
                            const std::vector<double>& combine) {
  MoeResult m;
  m.tokens_per_rank = tokens;
  m.path = std::move(path);
  m.dispatch_us = combine_times(ranks, dispatch, c.average);
  m.combine_us = combine_times(ranks, combine, c.average);
  return m;
}

}  // namespace symmcomm::bench
