// symmcomm-bench's ranks: one per GPU in this process, several sharing each GPU
// (--ranks-per-gpu, one thread each), or one per MPI process; their pools and streams.

#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "core/cuda_utils.hpp"
#include "runner.hpp"
#include "support/shared_gpu.hpp"
#include "symmcomm/comm/group.hpp"
#include "symmcomm/error.hpp"

#if defined(SYMMCOMM_WITH_MPI)
#include "symmcomm/comm/mpi.hpp"
#endif

namespace symmcomm::bench {

namespace {

// Runs fn(r) for every rank r on a thread of its own (NCCL's collective set-up and tear-down of
// ranks sharing a GPU), rethrowing the first error. A rank that never returns (another rank
// failed before a collective step) must not hang the run: after kSetupTimeoutS the process says
// so and exits.
void on_rank_threads(int n, const char* step, const std::function<void(int)>& fn) {
  constexpr int kSetupTimeoutS = 120;
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    for (int waited = 0; waited < kSetupTimeoutS * 10; ++waited) {
      if (done.load()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::fprintf(stderr,
                 "symmcomm-bench: %d ranks sharing the GPU: %s did not finish within %d s\n", n,
                 step, kSetupTimeoutS);
    std::fflush(stderr);
    std::_Exit(3);
  });
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  done = true;
  watchdog.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// `per_gpu` ranks on each of `gpus` GPUs, each set up by its own thread: communicator (NCCL's
// kernels capped so that every rank's fit on the GPU at once), pool, stream.
void make_shared_ranks(Ranks& ranks, int gpus, int per_gpu, std::size_t pool_bytes) {
  int const n = gpus * per_gpu;
  auto const size = static_cast<std::size_t>(n);
  ranks.shared = true;
  ranks.comms.resize(size);
  ranks.pools.resize(size);
  ranks.streams.assign(size, nullptr);
  ncclUniqueId id;
  SYMMCOMM_NCCL_TRY(ncclGetUniqueId(&id));
  int const max_ctas = test::nccl_ctas_for_shared_gpu(per_gpu, 0);
  on_rank_threads(n, "communicator and pool set-up", [&](int r) {
    auto const i = static_cast<std::size_t>(r);
    SYMMCOMM_CUDA_TRY(cudaSetDevice(r / per_gpu));
    ncclConfig_t config = test::shared_gpu_config(max_ctas);
    ncclComm_t c = nullptr;
    SYMMCOMM_NCCL_TRY(ncclCommInitRankConfig(&c, n, id, r, &config));
    ranks.comms[i] = Communicator::own(c);
    ranks.pools[i] = std::make_unique<SymmAllocator>(ranks.comms[i], PoolOptions{pool_bytes});
    SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&ranks.streams[i], cudaStreamNonBlocking));
  });
}

}  // namespace

Ranks make_ranks(int gpus, int ranks_per_gpu, std::size_t pool_bytes, bool mpi) {
  Ranks ranks;
  ranks.mpi = mpi;
  if (!mpi && ranks_per_gpu > 1) {
    make_shared_ranks(ranks, gpus, ranks_per_gpu, pool_bytes);
    return ranks;
  }
  if (mpi) {
#if defined(SYMMCOMM_WITH_MPI)
    ranks.comms.push_back(create_mpi_communicator(MPI_COMM_WORLD));
#else
    SYMMCOMM_FAIL("symmcomm-bench was built without MPI (-DSYMMCOMM_WITH_MPI=ON)");
#endif
  } else {
    std::vector<int> devices;
    for (int d = 0; d < gpus; ++d) devices.push_back(d);
    ranks.comms = create_local_communicators(devices);
  }
  {
    Group group;
    for (auto& c : ranks.comms)
      ranks.pools.push_back(std::make_unique<SymmAllocator>(c, PoolOptions{pool_bytes}));
  }
  for (auto& c : ranks.comms) {
    detail::DeviceGuard guard(c.device());
    cudaStream_t s;
    SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    ranks.streams.push_back(s);
  }
  return ranks;
}

void release_ranks(Ranks& ranks) {
  if (ranks.shared) {
    on_rank_threads(ranks.local(), "tear-down", [&](int r) {
      auto const i = static_cast<std::size_t>(r);
      detail::DeviceGuard guard(ranks.comms[i].device());
      SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(ranks.streams[i]));
      ranks.pools[i].reset();  // windows go before the communicator
      ranks.comms[i] = Communicator();
      cudaStreamDestroy(ranks.streams[i]);
    });
    ranks.pools.clear();
    ranks.streams.clear();
    ranks.comms.clear();
    return;
  }
  {
    Group group;
    ranks.pools.clear();
  }
  for (std::size_t r = 0; r < ranks.streams.size(); ++r) {
    detail::DeviceGuard guard(ranks.comms[r].device());
    cudaStreamDestroy(ranks.streams[r]);
  }
  ranks.streams.clear();
  ranks.comms.clear();
}

}  // namespace symmcomm::bench
