// symmcomm's production LSA kernels (LsaPolicy: NCCL windows reached through
// ncclGetLsaPointer, NCCL's LSA barriers, the 8-peer NVFP4 reduce with 2 peers' loads in
// flight) over N real NCCL ranks sharing this process's one GPU: every rank a communicator of
// its own, driven by its own host thread while anything collective runs (init, windows,
// teardown). Needs NCCL >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1; skipped otherwise, saying
// why.
//
// Reported beside the loopback variants (lsa_loopback_bench.cpp) with the same byte counts and
// the same total work: here the N ranks' kernels run at once, each on the SMs its share allows
// (Capabilities::lsa_sm_share: the grids are capped so that all N are resident together), where
// loopback runs N whole-GPU launches one after another with no barriers. One iteration is
// every rank's call; it is timed from an event the ranks' streams all wait for (recorded once
// every launch is enqueued) to the last rank's end. After timing, every rank's output is
// compared bit for bit with loopback's on the same inputs (the kernels sum in rank order, so
// they must agree exactly); a difference fails the benchmark.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "micro/device_memory.hpp"
#include "micro/device_timer.hpp"
#include "micro/lsa_ranks.hpp"
#include "micro/mix_ceiling.hpp"
#include "support/ordered_copy.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/loopback.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/comm/communicator.hpp"
#include "symmcomm/formats/codecs.hpp"
#include "symmcomm/memory/symm_allocator.hpp"
#include "symmcomm/runtime.hpp"

namespace symmcomm::bench {
namespace {

constexpr std::size_t kTotalElems = std::size_t{1} << 28;  // as lsa_loopback_bench.cpp

// Progress on stderr (a phase of N ranks sharing a GPU can take seconds: say where it is).
void progress(int n, const std::string& what) {
  static auto const t0 = std::chrono::steady_clock::now();
  double const s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "lsa_ranks_bench [%7.1f s] %d ranks: %s\n", s, n, what.c_str());
}

// Waits for `e` at most kWaitS seconds; past that, a rank's kernel (or a launch the device
// still holds) never finished: says which and ends the process (a kernel spinning in an LSA
// barrier cannot be cancelled, and waiting longer would only hang the run).
constexpr double kWaitS = 60.0;
void wait_or_die(cudaEvent_t e, int n, int rank, const char* what) {
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

// Runs f(rank) on n threads at once (each on device 0) and rethrows the first failure.
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

struct Rank {
  Communicator comm;
  std::unique_ptr<SymmAllocator> pool;
  cudaStream_t stream = nullptr;
  cudaEvent_t done = nullptr;
};

// N ranks of one communicator on the one GPU.
struct RankWorld {
  explicit RankWorld(int n) : ranks(static_cast<std::size_t>(n)) {
    ncclUniqueId id;
    SYMMCOMM_NCCL_TRY(ncclGetUniqueId(&id));
    on_every_rank(n, [&](int r) {
      Rank& me = ranks[static_cast<std::size_t>(r)];
      ncclComm_t c = nullptr;
      SYMMCOMM_NCCL_TRY(ncclCommInitRank(&c, n, id, r));
      me.comm = Communicator::own(c);
      me.pool = std::make_unique<SymmAllocator>(me.comm);
      SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&me.stream, cudaStreamNonBlocking));
      SYMMCOMM_CUDA_TRY(cudaEventCreateWithFlags(&me.done, cudaEventDefault));
    });
    SYMMCOMM_CUDA_TRY(cudaHostAlloc(&gate, sizeof(int), cudaHostAllocMapped));
    SYMMCOMM_CUDA_TRY(cudaEventCreate(&start));
  }
  ~RankWorld() {
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
      std::fprintf(stderr, "lsa_ranks_bench: teardown: %s\n", e.what());
    }
  }
  int size() const { return static_cast<int>(ranks.size()); }

  std::vector<Rank> ranks;
  int* gate = nullptr;  // host-mapped: the device holds every rank's launches until it is set
  cudaEvent_t start = nullptr;
};

__global__ void hold_until_set(const volatile int* gate) {
  while (*gate == 0) __nanosleep(1000);
}

// Why N ranks cannot share the GPU here ("" when they can try).
std::string why_ranks_cannot_share() {
  NcclVersion const v = nccl_runtime_version();
  if (v.major < 2 || (v.major == 2 && v.minor < 30)) {
    return "NCCL " + std::to_string(v.major) + "." + std::to_string(v.minor) + "." +
           std::to_string(v.patch) +
           " cannot put several ranks on one GPU (NCCL_MULTI_RANK_GPU_ENABLE needs 2.30)";
  }
  const char* enabled = std::getenv("NCCL_MULTI_RANK_GPU_ENABLE");
  if (enabled == nullptr || std::strcmp(enabled, "1") != 0) {
    return "set NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL >= 2.30) to run N ranks on one GPU";
  }
  return "";
}

// The world of the benchmark running now; one at a time (a new rank count replaces it).
std::unique_ptr<RankWorld> current_world;

// The world of n ranks, or null with `why` said.
RankWorld* world_of(int n, std::string& why) {
  why = why_ranks_cannot_share();
  if (!why.empty()) return nullptr;
  if (current_world && current_world->size() != n) {
    progress(current_world->size(), "tearing down");
    current_world.reset();
  }
  if (!current_world) {
    progress(n, "creating communicators, pools and device communicators");
    current_world = std::make_unique<RankWorld>(n);
    progress(n, "ready");
  }
  const Capabilities& caps = current_world->ranks[0].comm.capabilities();
  if (!caps.symmetric_memory || caps.lsa_team_size != n) {
    why = "no LSA team of " + std::to_string(n) + " ranks: " + caps.reason;
    return nullptr;
  }
  return current_world.get();
}

// Times one iteration of `launch(rank)` on every rank's stream, gated so that the clock starts
// once all launches are enqueued (host thread start-up does not count).
void time_ranks(benchmark::State& state, RankWorld& w, const std::function<void(int)>& launch) {
  for (int i = 0; i < 3; ++i) {  // warm-up
    for (int r = 0; r < w.size(); ++r) {
      launch(r);
      SYMMCOMM_CUDA_TRY(cudaEventRecord(w.ranks[static_cast<std::size_t>(r)].done,
                                        w.ranks[static_cast<std::size_t>(r)].stream));
    }
  }
  for (int r = 0; r < w.size(); ++r) {
    wait_or_die(w.ranks[static_cast<std::size_t>(r)].done, w.size(), r, "its warm-up calls");
  }
  progress(w.size(), "warmed up; timing");
  cudaStream_t const s0 = w.ranks[0].stream;
  for (auto _ : state) {
    *static_cast<volatile int*>(w.gate) = 0;
    int* gate_on_device = nullptr;
    SYMMCOMM_CUDA_TRY(
        cudaHostGetDevicePointer(reinterpret_cast<void**>(&gate_on_device), w.gate, 0));
    hold_until_set<<<1, 1, 0, s0>>>(gate_on_device);
    SYMMCOMM_CUDA_TRY(cudaEventRecord(w.start, s0));
    for (int r = 0; r < w.size(); ++r) {
      Rank& me = w.ranks[static_cast<std::size_t>(r)];
      SYMMCOMM_CUDA_TRY(cudaStreamWaitEvent(me.stream, w.start, 0));
      launch(r);
      SYMMCOMM_CUDA_TRY(cudaEventRecord(me.done, me.stream));
    }
    *static_cast<volatile int*>(w.gate) = 1;
    float slowest = 0.0f;
    for (int r = 0; r < w.size(); ++r) {
      const Rank& me = w.ranks[static_cast<std::size_t>(r)];
      wait_or_die(me.done, w.size(), r, "a timed call");
      float ms = 0.0f;
      SYMMCOMM_CUDA_TRY(cudaEventElapsedTime(&ms, w.start, me.done));
      slowest = std::max(slowest, ms);
    }
    state.SetIterationTime(static_cast<double>(slowest) / 1e3);
  }
}

// Bytes of `count` device elements of two outputs that differ (compared on the host).
template <class T>
std::size_t differing(const T* a, const T* b, std::size_t count) {
  std::vector<T> ha(count), hb(count);
  support::copy_on(nullptr, ha.data(), a, count * sizeof(T));
  support::copy_on(nullptr, hb.data(), b, count * sizeof(T));
  std::size_t n = 0;
  for (std::size_t i = 0; i < count; ++i) n += std::memcmp(&ha[i], &hb[i], sizeof(T)) != 0;
  return n;
}

// An NVFP4 tensor of `count` elements and `scales` global scales (a gather's receive buffer
// holds one per rank) in a rank's pool (allocated on the rank's thread: a pool's growth is
// collective).
struct PoolNvfp4 {
  PoolNvfp4(SymmAllocator& pool, std::size_t count, std::size_t scales = 1)
      : pool_(&pool),
        view{static_cast<std::uint8_t*>(pool.allocate(count / 2)),
             static_cast<std::uint8_t*>(pool.allocate(count / 16)),
             static_cast<float*>(pool.allocate(scales * sizeof(float))), count} {}
  ~PoolNvfp4() {
    pool_->deallocate(view.data);
    pool_->deallocate(view.block_scales);
    pool_->deallocate(view.global_scale);
  }
  PoolNvfp4(const PoolNvfp4&) = delete;
  PoolNvfp4& operator=(const PoolNvfp4&) = delete;
  SymmAllocator* pool_;
  Nvfp4View view;
};

// Every rank's NVFP4 tensor of `count` elements, rank r quantized from the test data shifted by
// r * 4096 elements (so ranks differ).
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

// Frees pool tensors on their ranks' threads (deallocation is local; kept on the rank's thread
// like everything else that touches its pool).
void free_on_ranks(RankWorld& w, std::vector<std::unique_ptr<PoolNvfp4>>& t) {
  on_every_rank(w.size(), [&](int r) { t[static_cast<std::size_t>(r)].reset(); });
}

// The world of state.range(0) ranks, or null having skipped the benchmark with the reason.
RankWorld* world_or_skip(benchmark::State& state) {
  std::string why;
  RankWorld* w = world_of(static_cast<int>(state.range(0)), why);
  if (w == nullptr) state.SkipWithError(why.c_str());
  return w;
}

// Counters, label and the verdict every BM_Ranks* ends with: the path taken and the outputs
// that differ from the reference (`what` names them).
void report_ranks(benchmark::State& state, const RankWorld& w, Path taken, std::size_t wrong,
                  const char* what) {
  state.counters["wrong"] = static_cast<double>(wrong);
  state.counters["sm_share"] = w.ranks[0].comm.capabilities().lsa_sm_share;
  state.SetLabel(std::to_string(w.size()) + " NCCL ranks, " + to_string(taken));
  if (taken != Path::LsaKernel) state.SkipWithError("the call did not take the LSA kernel");
  if (wrong != 0) state.SkipWithError((std::to_string(wrong) + " " + what).c_str());
}

Options lsa_kernel() {
  Options o;
  o.path = PathChoice::LsaKernel;
  return o;
}

// One-shot NVFP4 reduce-scatter into bf16 over N real ranks (production LsaPolicy kernel).
void BM_RanksReduceScatterNvfp4(benchmark::State& state) {
  RankWorld* w = world_or_skip(state);
  if (w == nullptr) return;
  int const n = w->size();
  std::size_t const shard = kTotalElems / static_cast<std::size_t>(n);
  auto send = quantized_per_rank(*w, kTotalElems);
  std::vector<std::unique_ptr<DeviceMemory>> out, want;
  std::vector<Nvfp4View> send_views;
  std::vector<Bf16Span> want_spans;
  for (int r = 0; r < n; ++r) {
    out.push_back(std::make_unique<DeviceMemory>(shard * 2));
    want.push_back(std::make_unique<DeviceMemory>(shard * 2));
    send_views.push_back(send[static_cast<std::size_t>(r)]->view);
    want_spans.push_back(Bf16Span{want.back()->as<bf16>(), shard});
  }
  Path taken = Path::LsaKernel;
  time_ranks(state, *w, [&](int r) {
    auto const i = static_cast<std::size_t>(r);
    taken = reduce_scatter(w->ranks[i].comm, send[i]->view, Bf16Span{out[i]->as<bf16>(), shard},
                           w->ranks[i].stream, lsa_kernel())
                .path;
  });
  progress(n, "timed; comparing every rank's output with loopback's");
  loopback::reduce_scatter(send_views, want_spans, nullptr);
  SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
  std::size_t wrong = 0;
  for (int r = 0; r < n; ++r) {
    auto const i = static_cast<std::size_t>(r);
    wrong += differing(out[i]->as<std::uint16_t>(), want[i]->as<std::uint16_t>(), shard);
  }
  free_on_ranks(*w, send);
  double const read = static_cast<double>(n) * static_cast<double>(shard / 2 + shard / 16);
  report_bandwidth(state, n * (read + static_cast<double>(shard * 2)));
  report_mix(state, n * (read + static_cast<double>(shard * 2)),
             Mix{8, 1, 32, 0, n, 1, kTotalElems / 16});  // as BM_LoopbackReduceScatterNvfp4
  report_ranks(state, *w, taken, wrong, "bf16 outputs differ from loopback's");
}

// NVFP4 all-gather (data + block scales + global scales) over N real ranks: every rank pushes
// its part to all N (production LsaPolicy gather kernel).
void BM_RanksAllGatherNvfp4(benchmark::State& state) {
  RankWorld* w = world_or_skip(state);
  if (w == nullptr) return;
  int const n = w->size();
  std::size_t const per_rank = kTotalElems / static_cast<std::size_t>(n);
  auto send = quantized_per_rank(*w, per_rank);
  std::vector<std::unique_ptr<PoolNvfp4>> recv(static_cast<std::size_t>(n));
  on_every_rank(n, [&](int r) {
    recv[static_cast<std::size_t>(r)] = std::make_unique<PoolNvfp4>(
        *w->ranks[static_cast<std::size_t>(r)].pool, kTotalElems, static_cast<std::size_t>(n));
  });
  Path taken = Path::LsaKernel;
  time_ranks(state, *w, [&](int r) {
    auto const i = static_cast<std::size_t>(r);
    taken =
        all_gather(w->ranks[i].comm, send[i]->view, recv[i]->view, w->ranks[i].stream, lsa_kernel())
            .path;
  });
  progress(n, "timed; comparing every rank's receive buffer");
  // Every rank's receive buffer equals rank 0's, and rank 0's holds each rank's part in order.
  std::size_t wrong = 0;
  for (int r = 0; r < n; ++r) {
    auto const i = static_cast<std::size_t>(r);
    const Nvfp4View& got = recv[i]->view;
    const Nvfp4View& mine = send[i]->view;
    wrong += differing(got.data, recv[0]->view.data, kTotalElems / 2);
    wrong += differing(got.block_scales, recv[0]->view.block_scales, kTotalElems / 16);
    wrong += differing(got.global_scale, recv[0]->view.global_scale, static_cast<std::size_t>(n));
    wrong += differing(recv[0]->view.global_scale + i, mine.global_scale, 1);
    wrong += differing(recv[0]->view.data + i * (per_rank / 2), mine.data, per_rank / 2);
    wrong += differing(recv[0]->view.block_scales + i * (per_rank / 16), mine.block_scales,
                       per_rank / 16);
  }
  on_every_rank(n, [&](int r) { recv[static_cast<std::size_t>(r)].reset(); });
  free_on_ranks(*w, send);
  double const part = static_cast<double>(per_rank / 2 + per_rank / 16 + sizeof(float));
  report_bandwidth(state, n * part * (1.0 + n));
  report_mix(state, n * part * (1.0 + n),
             Mix{8, 1, 8, 1, 1, n, kTotalElems / 16});  // as BM_LoopbackAllGatherNvfp4
  report_ranks(state, *w, taken, wrong, "gathered bytes differ");
}

void rank_counts(benchmark::internal::Benchmark* b) {
  b->Arg(2)->Arg(4)->Arg(8)->UseManualTime()->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_RanksReduceScatterNvfp4)->Apply(rank_counts);
BENCHMARK(BM_RanksAllGatherNvfp4)->Apply(rank_counts);

}  // namespace

void release_rank_worlds() {
  if (current_world) progress(current_world->size(), "tearing down");
  current_world.reset();
}

}  // namespace symmcomm::bench
