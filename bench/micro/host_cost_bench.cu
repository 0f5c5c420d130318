// Host cost of one eager call: the host time from a collective's entry to its return, beside
// the host time of launching an empty kernel on the same kind of stream in the same run (the
// launch every call pays at least). Their difference is symmcomm's own host work per call: the
// descriptor, validation, provenance look-ups, the plan and the kernel argument.
//
// BM_HostCostNvfp4AllGather/ranks/bytes/path: symmcomm's NVFP4 all-gather of `bytes` of packed
// data per rank (data + block scales + global scale) on pool buffers, one rank or 2 ranks
// sharing the GPU (NCCL >= 2.30, NCCL_MULTI_RANK_GPU_ENABLE=1); path 0 is Auto's choice, path 1
// forces symmcomm's LSA kernel (Auto takes NCCL's symmetric kernel at 1 MiB, whose host work is
// NCCL's). The label names the path the calls took. Every rank's thread times its own calls;
// the figure is rank 0's. Each iteration also times kCalls empty kernel launches on the same
// thread and stream, just before or just after the calls (in turn), while the other ranks do the
// same: counters own_us (the median over iterations of calls minus launches, per call) and
// empty_us (the launches' median). Paired within an iteration, the difference is free of the
// drift between separately run cases (clock, cache, the driver's state), which is as large as
// the difference itself.
// BM_HostCostEmptyKernel/threads: one empty kernel launch, from one thread or from two at once
// (the 2-rank calls' baseline: two threads launching into one context contend for it).
// BM_HostCostStep/step: one CUDA call that symmcomm's LSA path makes per call, alone, so that
// the difference above splits by cause: 0 cudaEventRecord (the communicator's launch order),
// 1 cudaStreamGetCaptureInfo (whether the call is being captured), 2 cudaLaunchKernelEx of an
// empty kernel with a 256-byte __grid_constant__ argument (the shape of symmcomm's launches).
// Each iteration times kCalls calls back to back and reports the time per call; the stream is
// drained after each iteration, outside the timing, so the launch queue never fills. The
// iteration count is fixed (kIterations): the reported time is 1/kCalls of an iteration's, so
// Google Benchmark's own search for a count would run each case kCalls times longer than its
// minimum time.

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "micro/one_rank.hpp"
#include "micro/rank_world.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/comm/communicator.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/memory/symm_allocator.hpp"

namespace symmcomm::bench {
namespace {

constexpr int kCalls = 50;
constexpr int kIterations = 200;

__global__ void empty_kernel() {}

using Clock = std::chrono::steady_clock;

double seconds_per_call(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double>(end - start).count() / kCalls;
}

// kCalls empty kernel launches on `s`, timed; returns seconds per launch.
double time_empty_launches(cudaStream_t s) {
  auto const start = Clock::now();
  for (int k = 0; k < kCalls; ++k) empty_kernel<<<1, 1, 0, s>>>();
  auto const end = Clock::now();
  SYMMCOMM_CUDA_TRY(cudaGetLastError());
  SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(s));
  return seconds_per_call(start, end);
}

// threads:1 launches from the benchmark's thread, as the one-rank calls run; threads:2 from two
// threads at once, each on its own stream, as the ranks sharing the GPU call (their launches
// contend for the same CUDA context): thread 0's time, the figure the 2-rank calls compare with.
void BM_HostCostEmptyKernel(benchmark::State& state) {
  int const threads = static_cast<int>(state.range(0));
  std::vector<cudaStream_t> s(static_cast<std::size_t>(threads), nullptr);
  for (cudaStream_t& x : s) {
    if (cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking) != cudaSuccess) {
      state.SkipWithError("no usable GPU");
      return;
    }
  }
  std::vector<double> per_call(s.size());
  for (auto _ : state) {
    if (threads == 1) {
      per_call[0] = time_empty_launches(s[0]);
    } else {
      on_every_rank(threads, [&](int t) {
        per_call[static_cast<std::size_t>(t)] = time_empty_launches(s[static_cast<std::size_t>(t)]);
      });
    }
    state.SetIterationTime(per_call[0]);
  }
  state.SetLabel(threads == 1
                     ? std::string("empty kernel launch")
                     : "empty kernel launch, " + std::to_string(threads) + " threads at once");
  for (cudaStream_t x : s) SYMMCOMM_CUDA_TRY(cudaStreamDestroy(x));
}

// An argument the size of symmcomm's small-kernel arguments.
struct Args256 {
  unsigned char bytes[256];
};
__global__ void empty_kernel_with_args(const __grid_constant__ Args256 a) {
  (void)a;
}

// One step of the LSA path's host work, kCalls times (see the top of this file).
void BM_HostCostStep(benchmark::State& state) {
  int const step = static_cast<int>(state.range(0));
  cudaStream_t s = nullptr;
  cudaEvent_t event = nullptr;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
    state.SkipWithError("no usable GPU");
    return;
  }
  SYMMCOMM_CUDA_TRY(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  Args256 args{};
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(1);
  config.blockDim = dim3(32);
  config.stream = s;
  const char* const labels[] = {"cudaEventRecord", "cudaStreamGetCaptureInfo",
                                "cudaLaunchKernelEx, 256-byte argument"};
  for (auto _ : state) {
    auto const start = Clock::now();
    for (int k = 0; k < kCalls; ++k) {
      if (step == 0) {
        SYMMCOMM_CUDA_TRY(cudaEventRecord(event, s));
      } else if (step == 1) {
        cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
        unsigned long long id = 0;
        SYMMCOMM_CUDA_TRY(cudaStreamGetCaptureInfo(s, &status, &id));
      } else {
        SYMMCOMM_CUDA_TRY(cudaLaunchKernelEx(&config, empty_kernel_with_args, args));
      }
    }
    auto const end = Clock::now();
    state.SetIterationTime(seconds_per_call(start, end));
    SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(s));
  }
  state.SetLabel(labels[step]);
  SYMMCOMM_CUDA_TRY(cudaEventDestroy(event));
  SYMMCOMM_CUDA_TRY(cudaStreamDestroy(s));
}

// Rank-local tensors of one call: `count` elements from this rank, `ranks` x count gathered.
struct GatherTensors {
  std::unique_ptr<PoolNvfp4> send, recv;
};

// One iteration of one rank: seconds per call of kCalls all-gathers and of kCalls empty launches.
struct Paired {
  double call = 0.0, empty = 0.0;
};

// kCalls all-gathers on one rank, timed on its own thread, and kCalls empty launches on the same
// stream before them (`empty_first`) or after them.
Paired time_gathers(Communicator& comm, cudaStream_t s, const GatherTensors& t,
                    const Options& options, bool empty_first, std::vector<std::string>& path) {
  Paired p;
  if (empty_first) p.empty = time_empty_launches(s);
  auto const start = Clock::now();
  Plan plan;
  for (int k = 0; k < kCalls; ++k) plan = all_gather(comm, t.send->view, t.recv->view, s, options);
  auto const end = Clock::now();
  path[static_cast<std::size_t>(comm.rank())] = to_string(plan.path);
  SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(s));
  p.call = seconds_per_call(start, end);
  if (!empty_first) p.empty = time_empty_launches(s);
  return p;
}

double median_us(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::size_t const n = v.size();
  return n == 0 ? 0.0 : 0.5e6 * (v[(n - 1) / 2] + v[n / 2]);
}

void BM_HostCostNvfp4AllGather(benchmark::State& state) {
  int const ranks = static_cast<int>(state.range(0));
  std::size_t const count = static_cast<std::size_t>(state.range(1)) * 2;  // packed bytes x 2
  Options options;
  options.path = state.range(2) == 0 ? PathChoice::Auto : PathChoice::LsaKernel;
  std::vector<std::string> path(static_cast<std::size_t>(ranks));
  std::vector<double> own, empty;  // rank 0's, per iteration
  auto const keep = [&](const Paired& p) {
    state.SetIterationTime(p.call);
    own.push_back(p.call - p.empty);
    empty.push_back(p.empty);
  };
  bool empty_first = false;
  if (ranks == 1) {
    OneRank& o = one_rank();
    GatherTensors t{std::make_unique<PoolNvfp4>(*o.pool, count),
                    std::make_unique<PoolNvfp4>(*o.pool, count)};
    for (auto _ : state) {
      empty_first = !empty_first;
      keep(time_gathers(o.comm, o.stream, t, options, empty_first, path));
    }
  } else {
    RankWorld* const w = world_or_skip(state);
    if (w == nullptr) return;
    std::vector<GatherTensors> t(static_cast<std::size_t>(ranks));
    on_every_rank(ranks, [&](int r) {
      Rank& me = w->ranks[static_cast<std::size_t>(r)];
      t[static_cast<std::size_t>(r)] = GatherTensors{
          std::make_unique<PoolNvfp4>(*me.pool, count),
          std::make_unique<PoolNvfp4>(*me.pool, count * static_cast<std::size_t>(ranks),
                                      static_cast<std::size_t>(ranks))};
    });
    std::vector<Paired> per_rank(static_cast<std::size_t>(ranks));
    for (auto _ : state) {
      empty_first = !empty_first;
      on_every_rank(ranks, [&](int r) {
        Rank& me = w->ranks[static_cast<std::size_t>(r)];
        per_rank[static_cast<std::size_t>(r)] = time_gathers(
            me.comm, me.stream, t[static_cast<std::size_t>(r)], options, empty_first, path);
      });
      keep(per_rank[0]);
    }
    on_every_rank(ranks, [&](int r) { t[static_cast<std::size_t>(r)] = GatherTensors{}; });
  }
  state.counters["own_us"] = median_us(own);
  state.counters["empty_us"] = median_us(empty);
  state.SetLabel(std::to_string(ranks) + (ranks == 1 ? " rank, " : " ranks sharing the GPU, ") +
                 path[0]);
}

}  // namespace

BENCHMARK(BM_HostCostEmptyKernel)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->Iterations(kIterations)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HostCostStep)
    ->DenseRange(0, 2)
    ->ArgName("step")
    ->Iterations(kIterations)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HostCostNvfp4AllGather)
    ->ArgsProduct({{1, 2}, {1 << 10, 1 << 20}, {0, 1}})
    ->ArgNames({"ranks", "bytes", "path"})
    ->Iterations(kIterations)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace symmcomm::bench
