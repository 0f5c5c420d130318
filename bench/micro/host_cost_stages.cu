// Where the host time of an eager call goes: symmcomm's NVFP4 all-gather of 1 KiB of packed data
// on a one-rank communicator (Auto: the small-message LSA kernel), each stage of its host path
// alone, kCalls times back to back, beside the whole call and an empty kernel launch in the same
// process. Stages 0-3 add up to a call that is planned (6): what the difference between that
// call and the empty launch (host_cost_bench.cu) is made of; the same call repeated (4) is
// replayed and skips stages 0 and 1 (collectives/replay.hpp).
//
// BM_HostCostStage/stage:
//   0  the entry: the communicator's checks and the call's validation (usable_state,
//      validate_call)
//   1  the parts and the plan: tensor_parts, a PlannedCall with the parts' provenance looked up,
//      and plan_collective (PlannedCall::decide)
//   2  the launch order around the kernel: PlannedCall::before_enqueue and ::record (the capture
//      query, the event record that marks the communicator's last use)
//   3  the kernel's launch alone: lsa::ll_gather with its arguments built once
//   4  the whole call: all_gather, the same call every time (replayed: collectives/replay.hpp)
//   5  an empty kernel launch (<<<1, 1>>>)
//   6  the whole call over kKeptCalls + 1 receive tensors in turn: never one of the
//      communicator's kept calls (the least recently used is replaced each time), so validated
//      and planned every time
//   7  the whole call alternating between two receive tensors (double-buffered activations):
//      both kept, so replayed
// The stream is drained after each iteration, outside the timing.

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <exception>
#include <memory>
#include <vector>

#include "collectives/executors.hpp"
#include "collectives/replay.hpp"
#include "collectives/scratch.hpp"
#include "collectives/validate_call.hpp"
#include "comm/dev_comm.hpp"
#include "kernels/lsa_ll.hpp"
#include "micro/one_rank.hpp"
#include "micro/rank_world.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm::bench {
namespace {

constexpr int kCalls = 50;
constexpr int kIterations = 200;
constexpr std::size_t kCount = 2048;  // elements: 1 KiB of packed NVFP4 data

__global__ void stage_empty_kernel() {}

// The call's tensors in the one-rank world's pool, made once: its send, and more receive
// tensors than the communicator keeps calls.
struct StageTensors {
  std::unique_ptr<PoolNvfp4> send;
  std::vector<std::unique_ptr<PoolNvfp4>> recv;
};

StageTensors& stage_tensors() {
  static StageTensors* t = [] {
    OneRank& o = one_rank();
    auto* made = new StageTensors{std::make_unique<PoolNvfp4>(*o.pool, kCount), {}};
    for (std::size_t i = 0; i <= detail::kKeptCalls; ++i) {
      made->recv.push_back(std::make_unique<PoolNvfp4>(*o.pool, kCount));
    }
    return made;
  }();
  return *t;
}

// The planning of the call's parts, as the gather executor does it.
void plan_parts(detail::PlannedCall& planned, const std::vector<detail::GatherPart>& parts,
                cudaStream_t stream) {
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const detail::GatherPart& p = parts[i];
    bytes += p.bytes[0];
    planned.part(Slot::SendPart, static_cast<int>(i), p.send_name, p.send, p.bytes[0], false);
    planned.part(Slot::RecvPart, static_cast<int>(i), p.recv_name, p.recv, p.bytes[0]);
  }
  planned.per_rank(bytes, true).staging_usable(false).lsa_kernel(true);
  planned.decide(stream);
}

// The small-message kernel's arguments for `parts` on `state` (rank 0 of 1).
detail::lsa::LlGatherArgs ll_args_of(const CommState& state,
                                     const std::vector<detail::GatherPart>& parts) {
  detail::lsa::LlGatherArgs a;
  a.rank = state.rank;
  a.size = state.size;
  a.scratch = detail::scratch_of(state).window.window;
  a.calls = detail::scratch_of(state).window.calls;
  a.abort_word = detail::device_abort_word(state);
  for (const detail::GatherPart& p : parts) {
    a.segment[a.segments++] = detail::lsa::LlSegment{p.send, p.recv, p.bytes[0], a.lines};
    a.lines += detail::lsa::ll_lines(p.bytes[0]);
  }
  return a;
}

template <class F>
double seconds_per_call(F&& f) {
  auto const start = std::chrono::steady_clock::now();
  for (int k = 0; k < kCalls; ++k) f();
  auto const end = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(end - start).count() / kCalls;
}

// Stages 4, 6 and 7: the whole call into the first receive tensor every time, into each in
// turn, or into the first two in turn.
double whole_call_seconds(int stage, OneRank& s, const StageTensors& tensors) {
  std::size_t const turn = stage == 4 ? 1 : stage == 6 ? tensors.recv.size() : 2;
  std::size_t k = 0;
  return seconds_per_call([&] {
    all_gather(s.comm, ConstNvfp4View(tensors.send->view), tensors.recv[k++ % turn]->view, s.stream,
               Options{});
  });
}

void BM_HostCostStage(benchmark::State& state) {
  int const stage = static_cast<int>(state.range(0));
  OneRank* one = nullptr;
  StageTensors* tensors = nullptr;
  try {
    one = &one_rank();
    tensors = &stage_tensors();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  OneRank& s = *one;
  CommState& cs = *detail::state_of(s.comm);
  Options const options;
  ConstNvfp4View const send = tensors->send->view;
  Nvfp4View const recv = tensors->recv[0]->view;
  detail::CollectiveCall const call =
      detail::gather_call(detail::tensor_ref(send), detail::tensor_ref(ConstNvfp4View(recv)));
  std::vector<detail::GatherPart> const parts =
      detail::tensor_parts(call.send, call.recv, 1, nullptr, nullptr);
  detail::PlannedCall around(cs, Operation::AllGather, options, "all_gather");
  plan_parts(around, parts, s.stream);
  detail::lsa::LlGatherArgs const ll = ll_args_of(cs, parts);
  const char* const labels[] = {"entry: checks and validation",
                                "parts and plan",
                                "launch order around the kernel",
                                "the kernel's launch",
                                "the whole call",
                                "empty kernel launch",
                                "the whole call, never replayed",
                                "the whole call, two receive tensors in turn"};
  for (auto _ : state) {
    double t = 0.0;
    switch (stage) {
      case 0:
        t = seconds_per_call([&] {
          detail::validate_call(call, detail::usable_state(s.comm, "all_gather").size, cs.rank);
        });
        break;
      case 1:
        t = seconds_per_call([&] {
          std::vector<detail::GatherPart> const p =
              detail::tensor_parts(call.send, call.recv, 1, nullptr, nullptr);
          detail::PlannedCall planned(cs, Operation::AllGather, options, "all_gather");
          plan_parts(planned, p, s.stream);
        });
        break;
      case 2:
        t = seconds_per_call([&] {
          around.before_enqueue(s.stream);
          around.record(s.stream, "nvfp4", kCount);
        });
        break;
      case 3:
        t = seconds_per_call([&] { detail::lsa::ll_gather(ll, cs.lsa_launch_share(), s.stream); });
        break;
      case 5:
        t = seconds_per_call([&] { stage_empty_kernel<<<1, 1, 0, s.stream>>>(); });
        SYMMCOMM_CUDA_TRY(cudaGetLastError());
        break;
      default:
        t = whole_call_seconds(stage, s, *tensors);
        break;
    }
    state.SetIterationTime(t);
    SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(s.stream));
  }
  state.SetLabel(labels[stage]);
}

}  // namespace

BENCHMARK(BM_HostCostStage)
    ->DenseRange(0, 7)
    ->ArgName("stage")
    ->Iterations(kIterations)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace symmcomm::bench
