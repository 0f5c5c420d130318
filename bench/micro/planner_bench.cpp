// Host overhead of planning one collective call: provenance lookups of every buffer plus the
// planner, as all_gather(Nvfp4View...) does it (one registry lock for the call's buffers) (6
// buffers: data, block scales and global scale, sent and received), with 1000 live allocations in
// the pool. Target: <= 100 ns per call.

#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "collectives/planner.hpp"
#include "memory/provenance_internal.hpp"
#include "symmcomm/comm/communicator.hpp"
#include "symmcomm/memory/provenance.hpp"
#include "symmcomm/memory/symm_allocator.hpp"

namespace symmcomm::bench {
namespace {

Communicator& planner_comm() {
  static std::unique_ptr<Communicator> c = [] {
    auto comms = create_local_communicators({0});
    return std::make_unique<Communicator>(std::move(comms.at(0)));
  }();
  return *c;
}

// kPart: what one iteration runs. Both: lookups then planner (a call's planning overhead);
// Lookups: the batch lookup only; Planner: plan_collective only, on the provenance looked up
// once before the loop. The three side by side say where the time goes.
enum class PlanPart { Both, Lookups, Planner };

template <PlanPart kPart>
void BM_PlanNvfp4AllGather(benchmark::State& state) {
  Communicator& comm = planner_comm();
  SymmAllocator pool(comm, PoolOptions{256 << 20});
  std::vector<void*> live;
  for (int i = 0; i < 1000; ++i) live.push_back(pool.allocate(16384));
  std::size_t const n = 7168 * 128;
  void* const ptrs[6] = {pool.allocate(n / 2), pool.allocate(n / 16), pool.allocate(4),
                         pool.allocate(n / 2), pool.allocate(n / 16), pool.allocate(4)};
  std::size_t const bytes[6] = {n / 2, n / 16, 4, n / 2, n / 16, 4};
  const char* const names[6] = {"send.data", "send.block_scales", "send.global_scale",
                                "recv.data", "recv.block_scales", "recv.global_scale"};
  PlanRequest request;
  request.operation = Operation::AllGather;
  request.send_type = request.recv_type = DataType::Nvfp4;
  request.capabilities = &comm.capabilities();
  request.comm_size = comm.size();
  request.bytes_per_rank = n / 2 + n / 16 + 4;
  request.buffers.resize(6);
  auto& registry = ProvenanceRegistry::global();
  ProvenanceRegistry::Query queries[6];
  // What the executors do (collectives/planned_call.cpp): name the buffers, then one batch lookup
  // under one lock writing straight into them, then the planner.
  auto const lookups = [&] {
    for (int b = 0; b < 6; ++b) {
      PlannedBuffer& pb = request.buffers[static_cast<std::size_t>(b)];
      pb.name = names[b];
      pb.ptr = ptrs[b];
      pb.bytes = bytes[b];
      pb.peer_accessed = b >= 3;
      queries[b] = {ptrs[b], bytes[b]};
    }
    detail::ProvenanceAccess::lookup_strided(registry, queries, 6, comm.id(),
                                             &request.buffers[0].provenance, sizeof(PlannedBuffer));
  };
  lookups();
  for (auto _ : state) {
    if constexpr (kPart != PlanPart::Planner) lookups();
    if constexpr (kPart != PlanPart::Lookups) {
      Plan plan = plan_collective(request);
      benchmark::DoNotOptimize(plan);
    } else {
      benchmark::DoNotOptimize(request.buffers.data());
    }
  }
  state.SetLabel(comm.capabilities().symmetric_memory ? "symmetric buffers"
                                                      : "no symmetric support (fallback)");
  for (void* p : ptrs) pool.deallocate(p);
  for (void* p : live) pool.deallocate(p);
}

BENCHMARK(BM_PlanNvfp4AllGather<PlanPart::Both>);
BENCHMARK(BM_PlanNvfp4AllGather<PlanPart::Lookups>);
BENCHMARK(BM_PlanNvfp4AllGather<PlanPart::Planner>);

}  // namespace
}  // namespace symmcomm::bench
