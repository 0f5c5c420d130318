#pragma once
// N real NCCL ranks of one communicator on this process's one GPU (NCCL >= 2.30,
// NCCL_MULTI_RANK_GPU_ENABLE=1), each driven by its own host thread while anything collective
// runs (init, windows, teardown), and a gated timer for their calls: the shared ground of
// lsa_ranks_bench.cu (bandwidth) and latency_ranks_bench.cu (decode sizes).

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/ordered_copy.hpp"
#include "symmcomm/comm/communicator.hpp"
#include "symmcomm/formats/views.hpp"
#include "symmcomm/memory/symm_allocator.hpp"

namespace symmcomm::bench {

/// Progress on stderr (a phase of N ranks sharing a GPU can take seconds: say where it is).
void progress(int n, const std::string& what);

/// Waits for `e` at most 60 s; past that, a rank's kernel (or a launch the device still holds)
/// never finished: says which and ends the process (a kernel spinning in an LSA barrier cannot
/// be cancelled, and waiting longer would only hang the run).
void wait_or_die(cudaEvent_t e, int n, int rank, const char* what);

/// Runs f(rank) on n threads at once (each on device 0) and rethrows the first failure.
void on_every_rank(int n, const std::function<void(int)>& f);

struct Rank {
  Communicator comm;
  std::unique_ptr<SymmAllocator> pool;
  cudaStream_t stream = nullptr;
  cudaEvent_t done = nullptr;
};

/// N ranks of one communicator on the one GPU.
struct RankWorld {
  explicit RankWorld(int n);
  ~RankWorld();
  RankWorld(const RankWorld&) = delete;
  RankWorld& operator=(const RankWorld&) = delete;
  int size() const { return static_cast<int>(ranks.size()); }

  std::vector<Rank> ranks;
  int* gate = nullptr;  // host-mapped: the device holds every rank's launches until it is set
  cudaEvent_t start = nullptr;
};

/// The world of state.range(0) ranks (kept between benchmarks of the same count), or null
/// having skipped the benchmark with the reason (NCCL too old, the mode not enabled, no LSA
/// team spanning the ranks).
RankWorld* world_or_skip(benchmark::State& state);

/// Times `enqueue_all` (which enqueues `calls` calls on every rank's stream) per benchmark
/// iteration: every stream waits for one event recorded behind a kernel that holds the device
/// until the host has enqueued everything, so host-side launch cost does not count; the
/// iteration's time is the slowest rank's, divided by `calls`. Three warm-up rounds first.
void time_gated(benchmark::State& state, RankWorld& w, const std::function<void()>& enqueue_all,
                int calls);

/// Instantiates every rank's captured graph (destroying the graphs), then time_gated of one
/// launch of each per iteration (each replaying `calls` calls), then destroys them.
void time_graphs_gated(benchmark::State& state, RankWorld& w, std::vector<cudaGraph_t>& graphs,
                       int calls);

/// time_gated of one `launch(rank)` per rank.
void time_ranks(benchmark::State& state, RankWorld& w, const std::function<void(int)>& launch);

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

/// Every rank's NVFP4 tensor of `count` elements in its pool, rank r quantized from the test
/// data shifted by r * 4096 elements (so ranks differ).
std::vector<std::unique_ptr<PoolNvfp4>> quantized_per_rank(RankWorld& w, std::size_t count);

/// One allocation per rank (each on its rank's thread: a pool's growth is collective), from the
/// rank's pool (a window) or cudaMalloc, filled with 0x11; all freed with the object.
class RankBuffers {
 public:
  explicit RankBuffers(RankWorld& w) : w_(w), owned_(w.ranks.size()) {}
  RankBuffers(const RankBuffers&) = delete;
  RankBuffers& operator=(const RankBuffers&) = delete;
  ~RankBuffers();
  /// `bytes` on every rank; each rank's pointer.
  std::vector<std::uint8_t*> get(std::size_t bytes, bool in_pool);

 private:
  RankWorld& w_;
  std::vector<std::vector<std::pair<void*, bool>>> owned_;
};

/// Frees pool tensors on their ranks' threads.
void free_on_ranks(RankWorld& w, std::vector<std::unique_ptr<PoolNvfp4>>& t);

}  // namespace symmcomm::bench
