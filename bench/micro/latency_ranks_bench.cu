// Decode-size latency, side by side, over N real NCCL ranks sharing this process's one GPU
// (NCCL >= 2.30, NCCL_MULTI_RANK_GPU_ENABLE=1; skipped otherwise, saying why): per call, for
// 1 KiB to 4 MiB per rank, at 2, 4 and 8 ranks, eager launches and CUDA graphs (20 calls per
// rank captured, replayed: launch cost disappears there, barrier cost remains).
//
// BM_LatencyAllGather, variant (third argument):
//   0  symmcomm's NVFP4 all-gather on the lsa-kernel path (data + block scales + global scale,
//      one launch), c elements per rank with c/2 + c/16 bytes ~ the size;
//   1  the same bytes (c/2 + c/16 + 4 per rank, one tensor) through NCCL's symmetric all-gather
//      on the same kind of windows (symmcomm forced to nccl-symmetric, so the path is checked);
//   2  the same bytes through plain NCCL on cudaMalloc buffers;
//   3  variant 0 with the LSA kernels launched with programmatic dependent launch
//      (detail::lsa::set_programmatic_launch), so a kernel's launch overlaps the previous one's
//      end: the fixed cost PDL removes, beside the plain launch in the same run;
//   4  variant 0 with the small-message kernel off (detail::lsa::set_ll_gather(false)): the
//      barrier kernel every size took before it, the "before" of the same run (up to 64 KiB;
//      larger calls take the barrier kernel either way).
// BM_LatencyReduceScatter, variant:
//   0  symmcomm's NVFP4 reduce-scatter into bf16 (lsa-kernel: the push-model kernel up to its
//      decode limit, 64 KiB of output here, the pull kernel above), shard = size / 2 elements;
//   1  NCCL's symmetric bf16 reduce-scatter of the same element count (the reference);
//   2  plain NCCL bf16 reduce-scatter on cudaMalloc buffers;
//   3  variant 0 launched with programmatic dependent launch (as above);
//   4  variant 0 with the push kernel off: the pull kernel with its two barriers, the "before"
//      of the same run (up to 64 KiB);
//   5  symmcomm's push-model BF16 reduce-scatter (lsa::ll_reduce_scatter, forced lsa-kernel:
//      no barrier, the small gather's scratch), the same element count as variant 1 (up to
//      64 KiB);
//   6  variant 0 with the push kernel's receive work filling CTAs in order
//      (lsa::set_ll_receive(InOrder)) instead of dealt to CTAs in turn: the "before" of that
//      mapping, same run (up to 64 KiB);
//   7  variant 5 with its receive work dealt to CTAs in turn (lsa::set_ll_receive(Spread)):
//      whether the BF16 kernel gains from it too (up to 64 KiB).
// BM_LatencyLsaBarriers: the synchronisation every LSA kernel pays, alone (the opening and the
// closing barrier, one CTA, no data: barriers_only, latency_probes.hpp), eager and graph, beside
// which the all-gather's variant 0 at 1 KiB shows what the data adds and variant 1 what NCCL's
// whole call costs: the split of our fixed cost. Every rank's calls are enqueued behind a gate
// (rank_world.hpp: host launch cost is not timed); the time is the slowest rank's for 20
// back-to-back calls, divided by 20. Results are compared with the other tiers' checks
// (tests/multi_rank): this benchmark times only.

#include <benchmark/benchmark.h>
#include <nccl.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "collectives/call_prerequisites.hpp"
#include "comm/comm_state.hpp"
#include "kernels/lsa.hpp"
#include "kernels/lsa_ll.hpp"
#include "micro/latency_probes.hpp"
#include "micro/rank_world.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/comm/group.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/memory/provenance.hpp"

namespace symmcomm::bench {
namespace {

constexpr int kCalls = 20;       // calls per rank per timed iteration (and per captured graph)
constexpr int kIterations = 25;  // timed iterations per repetition (kCalls calls each)

// A process-wide launch setting of the LSA kernels switched for one case, restored after:
// programmatic dependent launch (variant 3 turns it on), the small-message all-gather kernel
// (kernels/lsa_ll.hpp; variant 4 turns it off).
class ScopedSetting {
 public:
  ScopedSetting(bool (*get)() noexcept, void (*set)(bool) noexcept, bool on)
      : set_(set), previous_(get()) {
    set_(on);
  }
  ~ScopedSetting() { set_(previous_); }
  ScopedSetting(const ScopedSetting&) = delete;
  ScopedSetting& operator=(const ScopedSetting&) = delete;

 private:
  void (*set_)(bool) noexcept;
  bool previous_;
};

ScopedSetting programmatic_launch(bool on) {
  return {detail::lsa::programmatic_launch, detail::lsa::set_programmatic_launch, on};
}
ScopedSetting small_message_kernel(bool on) {
  return {detail::lsa::ll_gather_enabled, detail::lsa::set_ll_gather, on};
}

// The push reduce-scatters' receive mapping for one case (variants 6 and 7), restored after.
class ScopedReceive {
 public:
  explicit ScopedReceive(detail::lsa::LlReceive mapping) : previous_(detail::lsa::ll_receive()) {
    detail::lsa::set_ll_receive(mapping);
  }
  ~ScopedReceive() { detail::lsa::set_ll_receive(previous_); }
  ScopedReceive(const ScopedReceive&) = delete;
  ScopedReceive& operator=(const ScopedReceive&) = delete;

 private:
  detail::lsa::LlReceive previous_;
};

detail::lsa::LlReceive receive_of(int variant) {
  using detail::lsa::LlReceive;
  return variant == 6 ? LlReceive::InOrder
                      : (variant == 7 ? LlReceive::Spread : LlReceive::KernelDefault);
}

Options forced(PathChoice p) {
  Options o;
  o.path = p;
  return o;
}

// Times `call(rank)` (variant 0: each rank's launch on its own; else NCCL calls, so one group
// over the ranks per round: one thread drives them all), eager or as one captured graph per
// rank of kCalls calls. Reports the path the calls took and per-call microseconds.
void time_variant(benchmark::State& state, RankWorld& w, bool nccl_calls, bool graph,
                  const std::function<Path(int)>& call, Path expected, const char* name) {
  Path taken = expected;
  auto const round = [&] {
    if (nccl_calls) {
      Group g;
      for (int r = 0; r < w.size(); ++r) taken = call(r);
    } else {
      for (int r = 0; r < w.size(); ++r) taken = call(r);
    }
  };
  auto const eager = [&] {
    for (int k = 0; k < kCalls; ++k) round();
  };
  if (!graph) {
    time_gated(state, w, eager, kCalls);
  } else {
    round();  // anything lazily set up happens outside the capture
    for (Rank& me : w.ranks) SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(me.stream));
    for (Rank& me : w.ranks) {
      SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(me.stream, cudaStreamCaptureModeThreadLocal));
    }
    eager();
    // Every capture ends before any graph is instantiated (instantiation is not allowed on a
    // thread that still captures a stream).
    std::vector<cudaGraph_t> graphs;
    for (Rank& me : w.ranks) {
      graphs.emplace_back();
      SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(me.stream, &graphs.back()));
    }
    time_graphs_gated(state, w, graphs, kCalls);
  }
  state.SetLabel(std::to_string(w.size()) + " ranks, " + name + (graph ? ", graph" : ", eager"));
  if (taken != expected) {
    state.SkipWithError(
        (std::string("took ") + to_string(taken) + ", not " + to_string(expected)).c_str());
  }
}

const char* variant_name(int variant) {
  static const char* const kNames[] = {"symmcomm lsa-kernel",
                                       "NCCL symmetric",
                                       "plain NCCL",
                                       "symmcomm lsa-kernel + PDL",
                                       "symmcomm barrier kernel",
                                       "symmcomm push bf16",
                                       "symmcomm lsa-kernel, in-order receive",
                                       "symmcomm push bf16, spread receive"};
  return kNames[std::min(std::max(variant, 0), 7)];
}

// One case's arguments (ranks, bytes, variant, graph: latency_args), its world and rank count.
struct LatencyCase {
  RankWorld* w = nullptr;  // null: skipped, the reason given
  std::size_t bytes = 0;
  int variant = 0;
  bool graph = false;
  std::size_t n = 0;
  explicit LatencyCase(benchmark::State& state)
      : w(world_or_skip(state)),
        bytes(static_cast<std::size_t>(state.range(1))),
        variant(static_cast<int>(state.range(2))),
        graph(state.range(3) != 0),
        n(w != nullptr ? static_cast<std::size_t>(w->size()) : 0) {}
};

void BM_LatencyAllGather(benchmark::State& state) {
  LatencyCase const lc(state);
  if (lc.w == nullptr) return;
  RankWorld* const w = lc.w;
  std::size_t const n = lc.n;
  std::size_t const c =
      std::max<std::size_t>(lc.bytes * 16 / 9 / 16 * 16, 16);  // elements per rank
  std::size_t const part = c / 2 + c / 16 + sizeof(float);
  RankBuffers b(*w);
  auto const pdl = programmatic_launch(lc.variant == 3);
  auto const small = small_message_kernel(lc.variant != 4);
  if (lc.variant == 0 || lc.variant == 3 || lc.variant == 4) {
    auto const data = b.get(c / 2, true), scales = b.get(c / 16, true), global = b.get(4, true);
    auto const rdata = b.get(c / 2 * n, true), rscales = b.get(c / 16 * n, true),
               rglobal = b.get(4 * n, true);
    time_variant(
        state, *w, false, lc.graph,
        [&](int r) {
          auto const i = static_cast<std::size_t>(r);
          Nvfp4View const send{data[i], scales[i], reinterpret_cast<float*>(global[i]), c};
          Nvfp4View const recv{rdata[i], rscales[i], reinterpret_cast<float*>(rglobal[i]), c * n};
          return all_gather(w->ranks[i].comm, send, recv, w->ranks[i].stream,
                            forced(PathChoice::LsaKernel))
              .path;
        },
        Path::LsaKernel, variant_name(lc.variant));
  } else {
    bool const windows = lc.variant == 1;
    auto const send = b.get(part, windows), recv = b.get(part * n, windows);
    time_variant(
        state, *w, true, lc.graph,
        [&](int r) {
          auto const i = static_cast<std::size_t>(r);
          if (windows) {
            return all_gather(w->ranks[i].comm,
                              std::vector<GatherItem>{GatherItem{send[i], recv[i], part, "bytes"}},
                              w->ranks[i].stream, forced(PathChoice::NcclSymmetric))
                .path;
          }
          SYMMCOMM_NCCL_TRY(ncclAllGather(send[i], recv[i], part, ncclUint8, w->ranks[i].comm.get(),
                                          w->ranks[i].stream));
          return Path::Fallback;
        },
        windows ? Path::NcclSymmetric : Path::Fallback, variant_name(lc.variant));
  }
  state.counters["bytes_per_rank"] = static_cast<double>(part);
}

void BM_LatencyReduceScatter(benchmark::State& state) {
  LatencyCase const lc(state);
  if (lc.w == nullptr) return;
  RankWorld* const w = lc.w;
  std::size_t const n = lc.n;
  std::size_t const shard = std::max<std::size_t>(lc.bytes / 2 / 16 * 16, 16);  // bf16 elements out
  std::size_t const total = shard * n;
  RankBuffers b(*w);
  auto const pdl = programmatic_launch(lc.variant == 3);
  auto const push = small_message_kernel(lc.variant != 4);
  ScopedReceive const receive(receive_of(lc.variant));
  if (lc.variant == 5 || lc.variant == 7) {
    auto const in = b.get(total * 2, true), out = b.get(shard * 2, true);
    time_variant(
        state, *w, false, lc.graph,
        [&](int r) {
          auto const i = static_cast<std::size_t>(r);
          return reduce_scatter(w->ranks[i].comm, Bf16Span{reinterpret_cast<bf16*>(in[i]), total},
                                Bf16Span{reinterpret_cast<bf16*>(out[i]), shard},
                                w->ranks[i].stream, forced(PathChoice::LsaKernel))
              .path;
        },
        Path::LsaKernel, variant_name(lc.variant));
  } else if (lc.variant == 0 || lc.variant == 3 || lc.variant == 4 || lc.variant == 6) {
    auto const data = b.get(total / 2, true), scales = b.get(total / 16, true);
    auto const global = b.get(4, true), out = b.get(shard * 2, true);
    // A global scale of 1 and small block scales: any finite data will do for timing.
    on_every_rank(w->size(), [&](int r) {
      float const one = 1.0f;
      support::upload_value_on(w->ranks[static_cast<std::size_t>(r)].stream,
                               global[static_cast<std::size_t>(r)], one);
    });
    time_variant(
        state, *w, false, lc.graph,
        [&](int r) {
          auto const i = static_cast<std::size_t>(r);
          Nvfp4View const send{data[i], scales[i], reinterpret_cast<float*>(global[i]), total};
          return reduce_scatter(w->ranks[i].comm, send,
                                Bf16Span{reinterpret_cast<bf16*>(out[i]), shard},
                                w->ranks[i].stream, forced(PathChoice::LsaKernel))
              .path;
        },
        Path::LsaKernel, variant_name(lc.variant));
  } else {
    bool const windows = lc.variant == 1;
    auto const in = b.get(total * 2, windows), out = b.get(shard * 2, windows);
    time_variant(
        state, *w, true, lc.graph,
        [&](int r) {
          auto const i = static_cast<std::size_t>(r);
          if (windows) {
            return reduce_scatter(w->ranks[i].comm, Bf16Span{reinterpret_cast<bf16*>(in[i]), total},
                                  Bf16Span{reinterpret_cast<bf16*>(out[i]), shard},
                                  w->ranks[i].stream, forced(PathChoice::NcclSymmetric))
                .path;
          }
          SYMMCOMM_NCCL_TRY(ncclReduceScatter(in[i], out[i], shard, ncclBfloat16, ncclSum,
                                              w->ranks[i].comm.get(), w->ranks[i].stream));
          return Path::Fallback;
        },
        windows ? Path::NcclSymmetric : Path::Fallback, variant_name(lc.variant));
  }
  state.counters["shard_bytes"] = static_cast<double>(shard * 2);
}

void BM_LatencyLsaBarriers(benchmark::State& state) {
  RankWorld* const w = world_or_skip(state);
  if (w == nullptr) return;
  bool const graph = state.range(1) != 0;
  auto const pdl = programmatic_launch(false);
  time_variant(
      state, *w, false, graph,
      [&](int r) {
        Rank& me = w->ranks[static_cast<std::size_t>(r)];
        barriers_only(detail::lsa_peers(*detail::state_of(me.comm)), me.stream);
        return Path::LsaKernel;
      },
      Path::LsaKernel, "symmcomm LSA barriers only");
}

__global__ void empty_kernel() {}

// The floor under every call of the sweep, in the same run: variant 0, an empty kernel per rank
// (a graph's empty kernel node); variant 1, one round of a one-flag ping-pong between ranks 0
// and 1 through their windows (flag_ping_pong, latency_probes.hpp: one signal each way; the other
// ranks launch the same kernel and leave).
void BM_LatencyFloor(benchmark::State& state) {
  RankWorld* const w = world_or_skip(state);
  if (w == nullptr) return;
  int const variant = static_cast<int>(state.range(1));
  bool const graph = state.range(2) != 0;
  auto const pdl = programmatic_launch(false);
  RankBuffers b(*w);
  auto const flags = b.get(2 * sizeof(std::uint32_t), true);
  on_every_rank(w->size(), [&](int r) {
    Rank& me = w->ranks[static_cast<std::size_t>(r)];
    support::fill_on(me.stream, flags[static_cast<std::size_t>(r)], 0, 2 * sizeof(std::uint32_t));
    SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(me.stream));
  });
  std::vector<detail::lsa::Peers> peers;
  std::vector<detail::lsa::SymRef> refs;
  for (std::size_t r = 0; r < w->ranks.size(); ++r) {
    const auto& state_r = *detail::state_of(w->ranks[r].comm);
    Provenance const p = provenance_of(w->ranks[r].comm, flags[r], 2 * sizeof(std::uint32_t));
    SYMMCOMM_EXPECTS(p.symmetric(), "the ping-pong flags are not in a window");
    peers.push_back(detail::lsa_peers(state_r));
    peers.back().window[0] = p.window;
    refs.push_back(detail::lsa::SymRef{0, p.offset});
  }
  time_variant(
      state, *w, false, graph,
      [&](int r) {
        auto const i = static_cast<std::size_t>(r);
        if (variant == 0) {
          empty_kernel<<<1, 1, 0, w->ranks[i].stream>>>();
          SYMMCOMM_CUDA_TRY(cudaGetLastError());
        } else {
          flag_ping_pong(peers[i], refs[i], w->ranks[i].stream);
        }
        return Path::LsaKernel;
      },
      Path::LsaKernel, variant == 0 ? "empty kernel" : "one-flag ping-pong, ranks 0 and 1");
}

// Args: ranks, bytes per rank (1 KiB to 4 MiB, x4), variant, graph; up to 64 KiB also the
// `small` variants (the all-gather's 4, the barrier kernel; the reduce-scatter's 4, the pull
// kernel, 5, the push-model BF16 kernel, and 6 and 7, the push kernels' other receive mapping).
void latency_args(benchmark::internal::Benchmark* b, std::initializer_list<int> small) {
  for (int n : {2, 4, 8}) {
    for (std::int64_t bytes = 1 << 10; bytes <= (4 << 20); bytes *= 4) {
      for (int graph : {0, 1}) {
        for (int variant : {0, 1, 2, 3}) b->Args({n, bytes, variant, graph});
        if (bytes <= (64 << 10)) {
          for (int variant : small) b->Args({n, bytes, variant, graph});
        }
      }
    }
  }
  // A fixed iteration count: Google Benchmark's own search for one re-runs the whole case (the
  // ranks' buffers, warm-up, a graph's capture) several times, which made a case cost seconds
  // and a sweep longer than a device session.
  b->ArgNames({"ranks", "bytes", "variant", "graph"})
      ->Iterations(kIterations)
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_LatencyAllGather)->Apply([](auto* b) { latency_args(b, {4}); });
BENCHMARK(BM_LatencyReduceScatter)->Apply([](auto* b) { latency_args(b, {4, 5, 6, 7}); });
BENCHMARK(BM_LatencyFloor)
    ->ArgsProduct({{2, 4, 8}, {0, 1}, {0, 1}})
    ->ArgNames({"ranks", "variant", "graph"})
    ->Iterations(kIterations)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LatencyLsaBarriers)
    ->ArgsProduct({{2, 4, 8}, {0, 1}})
    ->ArgNames({"ranks", "graph"})
    ->Iterations(kIterations)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace symmcomm::bench
