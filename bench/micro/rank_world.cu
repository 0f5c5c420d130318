// N real NCCL ranks on one GPU in this process, and the gated timer (rank_world.hpp).

#include "micro/rank_world.hpp"

#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <thread>

#include "micro/device_memory.hpp"
#include "micro/lsa_ranks.hpp"
#include "support/shared_gpu.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/codecs.hpp"
#include "symmcomm/runtime.hpp"

namespace symmcomm::bench {
namespace {

// test::keep_nccl_stack_at_init before main(), before any benchmark's first NCCL call.
bool const kStackAtInit = [] {
  test::keep_nccl_stack_at_init();
  return true;
}();

}  // namespace

void progress(int n, const std::string& what) {
  static auto const t0 = std::chrono::steady_clock::now();
  double const s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "ranks bench [%7.1f s] %d ranks: %s\n", s, n, what.c_str());
}

void wait_or_die(cudaEvent_t e, int n, int rank, const char* what) {
  constexpr double kWaitS = 60.0;
  auto const until = std::chrono::steady_clock::now() + std::chrono::duration<double>(kWaitS);
  for (;;) {
    cudaError_t const r = cudaEventQuery(e);
    if (r == cudaSuccess) return;
    if (r != cudaErrorNotReady) SYMMCOMM_CUDA_TRY(r);
    if (std::chrono::steady_clock::now() > until) {
      progress(n, "rank " + std::to_string(rank) + " did not finish " + what + " within " +
                      std::to_string(static_cast<int>(kWaitS)) + " s: giving up");
      std::fflush(stderr);
      std::_Exit(3);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void on_every_rank(int n, const std::function<void(int)>& f) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        SYMMCOMM_CUDA_TRY(cudaSetDevice(0));
        f(r);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

RankWorld::RankWorld(int n) : ranks(static_cast<std::size_t>(n)) {
  ncclUniqueId id;
  SYMMCOMM_NCCL_TRY(ncclGetUniqueId(&id));
  int const max_ctas = test::nccl_ctas_for_shared_gpu(n, 0);
  if (max_ctas > 0) progress(n, "NCCL kernels capped at " + std::to_string(max_ctas) + " CTAs");
  on_every_rank(n, [&](int r) {
    Rank& me = ranks[static_cast<std::size_t>(r)];
    ncclComm_t c = nullptr;
    // Each step said per rank: where a world that never becomes ready stopped.
    ncclConfig_t config = test::shared_gpu_config(max_ctas);
    SYMMCOMM_NCCL_TRY(ncclCommInitRankConfig(&c, n, id, r, &config));
    progress(n, "rank " + std::to_string(r) + ": ncclCommInitRank done; probing");
    me.comm = Communicator::own(c);
    progress(n, "rank " + std::to_string(r) + ": probed (" + me.comm.capabilities().reason + ")");
    me.pool = std::make_unique<SymmAllocator>(me.comm);
    SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&me.stream, cudaStreamNonBlocking));
    SYMMCOMM_CUDA_TRY(cudaEventCreateWithFlags(&me.done, cudaEventDefault));
  });
  SYMMCOMM_CUDA_TRY(cudaHostAlloc(&gate, sizeof(int), cudaHostAllocMapped));
  SYMMCOMM_CUDA_TRY(cudaEventCreate(&start));
}

RankWorld::~RankWorld() {
  cudaFreeHost(gate);
  cudaEventDestroy(start);
  try {
    on_every_rank(size(), [&](int r) {
      Rank& me = ranks[static_cast<std::size_t>(r)];
      SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(me.stream));
      me.pool.reset();  // windows go before the communicator
      me.comm = Communicator();
      cudaEventDestroy(me.done);
      cudaStreamDestroy(me.stream);
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ranks bench: teardown: %s\n", e.what());
  }
}

namespace {

__global__ void hold_until_set(const volatile int* gate) {
  while (*gate == 0) __nanosleep(1000);
}

// The world of the benchmark running now; one at a time (a new rank count replaces it).
std::unique_ptr<RankWorld> current_world;

// The world of n ranks, or null with `why` said.
RankWorld* world_of(int n, std::string& why) {
  why = test::why_ranks_cannot_share_a_gpu();
  if (!why.empty()) return nullptr;
  if (current_world && current_world->size() != n) {
    progress(current_world->size(), "tearing down");
    current_world.reset();
  }
  if (!current_world) {
    progress(n, "creating communicators, pools and device communicators");
    // A world that never becomes ready (a rank stuck in NCCL's initialisation) must not hang
    // the run: after kWorldTimeoutS the process says so and exits (the per-rank progress lines
    // above say which step each rank reached).
    constexpr int kWorldTimeoutS = 120;
    std::atomic<bool> ready{false};
    std::thread watchdog([&ready, n] {
      for (int waited = 0; waited < kWorldTimeoutS * 10; ++waited) {
        if (ready.load()) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      progress(
          n, "the world was not ready within " + std::to_string(kWorldTimeoutS) + " s: giving up");
      std::fflush(stderr);
      std::_Exit(3);
    });
    try {
      current_world = std::make_unique<RankWorld>(n);
    } catch (...) {
      ready = true;
      watchdog.join();
      throw;
    }
    ready = true;
    watchdog.join();
    progress(n, "ready");
  }
  const Capabilities& caps = current_world->ranks[0].comm.capabilities();
  if (!caps.symmetric_memory || caps.lsa_team_size != n) {
    why = "no LSA team of " + std::to_string(n) + " ranks: " + caps.reason;
    return nullptr;
  }
  return current_world.get();
}

}  // namespace

RankWorld* world_or_skip(benchmark::State& state) {
  std::string why;
  RankWorld* w = world_of(static_cast<int>(state.range(0)), why);
  if (w == nullptr) state.SkipWithError(why.c_str());
  return w;
}

void time_gated(benchmark::State& state, RankWorld& w, const std::function<void()>& enqueue_all,
                int calls) {
  for (int i = 0; i < 3; ++i) enqueue_all();  // warm-up
  for (int r = 0; r < w.size(); ++r) {
    Rank& me = w.ranks[static_cast<std::size_t>(r)];
    SYMMCOMM_CUDA_TRY(cudaEventRecord(me.done, me.stream));
    wait_or_die(me.done, w.size(), r, "its warm-up calls");
  }
  progress(w.size(), "warmed up; timing");
  cudaStream_t const s0 = w.ranks[0].stream;
  int* gate_on_device = nullptr;
  SYMMCOMM_CUDA_TRY(cudaHostGetDevicePointer(reinterpret_cast<void**>(&gate_on_device), w.gate, 0));
  for (auto _ : state) {
    *static_cast<volatile int*>(w.gate) = 0;
    hold_until_set<<<1, 1, 0, s0>>>(gate_on_device);
    SYMMCOMM_CUDA_TRY(cudaGetLastError());
    SYMMCOMM_CUDA_TRY(cudaEventRecord(w.start, s0));
    for (Rank& me : w.ranks) SYMMCOMM_CUDA_TRY(cudaStreamWaitEvent(me.stream, w.start, 0));
    enqueue_all();
    for (Rank& me : w.ranks) SYMMCOMM_CUDA_TRY(cudaEventRecord(me.done, me.stream));
    *static_cast<volatile int*>(w.gate) = 1;
    float slowest = 0.0f;
    for (int r = 0; r < w.size(); ++r) {
      const Rank& me = w.ranks[static_cast<std::size_t>(r)];
      wait_or_die(me.done, w.size(), r, "a timed call");
      float ms = 0.0f;
      SYMMCOMM_CUDA_TRY(cudaEventElapsedTime(&ms, w.start, me.done));
      slowest = std::max(slowest, ms);
    }
    state.SetIterationTime(static_cast<double>(slowest) / 1e3 / calls);
  }
}

void time_graphs_gated(benchmark::State& state, RankWorld& w, std::vector<cudaGraph_t>& graphs,
                       int calls) {
  std::vector<cudaGraphExec_t> execs;
  for (cudaGraph_t g : graphs) {
    cudaGraphExec_t e = nullptr;
    SYMMCOMM_CUDA_TRY(cudaGraphInstantiate(&e, g, 0));
    SYMMCOMM_CUDA_TRY(cudaGraphDestroy(g));
    execs.push_back(e);
  }
  graphs.clear();
  time_gated(
      state, w,
      [&] {
        for (std::size_t r = 0; r < execs.size(); ++r) {
          SYMMCOMM_CUDA_TRY(cudaGraphLaunch(execs[r], w.ranks[r].stream));
        }
      },
      calls);
  for (Rank& me : w.ranks) SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(me.stream));
  for (cudaGraphExec_t e : execs) SYMMCOMM_CUDA_TRY(cudaGraphExecDestroy(e));
}

void time_ranks(benchmark::State& state, RankWorld& w, const std::function<void(int)>& launch) {
  time_gated(
      state, w,
      [&] {
        for (int r = 0; r < w.size(); ++r) launch(r);
      },
      1);
}

std::vector<std::unique_ptr<PoolNvfp4>> quantized_per_rank(RankWorld& w, std::size_t count) {
  std::vector<std::unique_ptr<PoolNvfp4>> t(w.ranks.size());
  on_every_rank(w.size(), [&](int r) {
    t[static_cast<std::size_t>(r)] =
        std::make_unique<PoolNvfp4>(*w.ranks[static_cast<std::size_t>(r)].pool, count);
  });
  std::size_t const shift = 4096;
  DeviceMemory src((count + shift * w.ranks.size()) * 2);
  fill_bf16(src, count + shift * w.ranks.size());
  for (std::size_t r = 0; r < t.size(); ++r) {
    quantize_nvfp4(src.as<bf16>() + r * shift, t[r]->view, ScaleMode::Compute, nullptr);
  }
  SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
  return t;
}

void free_on_ranks(RankWorld& w, std::vector<std::unique_ptr<PoolNvfp4>>& t) {
  on_every_rank(w.size(), [&](int r) { t[static_cast<std::size_t>(r)].reset(); });
}

RankBuffers::~RankBuffers() {
  on_every_rank(w_.size(), [&](int r) {
    for (auto [p, in_pool] : owned_[static_cast<std::size_t>(r)]) {
      if (in_pool) {
        w_.ranks[static_cast<std::size_t>(r)].pool->deallocate(p);
      } else {
        cudaFree(p);
      }
    }
  });
}

std::vector<std::uint8_t*> RankBuffers::get(std::size_t bytes, bool in_pool) {
  std::vector<std::uint8_t*> out(w_.ranks.size());
  on_every_rank(w_.size(), [&](int r) {
    auto const i = static_cast<std::size_t>(r);
    std::size_t const n = std::max<std::size_t>(bytes, 16);
    void* p = nullptr;
    if (in_pool) {
      p = w_.ranks[i].pool->allocate(n);
    } else {
      SYMMCOMM_CUDA_TRY(cudaMalloc(&p, n));
    }
    SYMMCOMM_CUDA_TRY(cudaMemsetAsync(p, 0x11, n, w_.ranks[i].stream));
    SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(w_.ranks[i].stream));
    owned_[i].emplace_back(p, in_pool);
    out[i] = static_cast<std::uint8_t*>(p);
  });
  return out;
}

void release_rank_worlds() {
  if (current_world) progress(current_world->size(), "tearing down");
  current_world.reset();
}

}  // namespace symmcomm::bench
