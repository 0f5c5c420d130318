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

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "micro/device_memory.hpp"
#include "micro/device_timer.hpp"
#include "micro/mix_ceiling.hpp"
#include "micro/rank_world.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/testing/loopback.hpp"

namespace symmcomm::bench {
namespace {

constexpr std::size_t kTotalElems = std::size_t{1} << 28;  // as lsa_loopback_bench.cpp

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
}  // namespace symmcomm::bench
