// Memory layer host costs: pool allocate+free vs a fresh ncclMemAlloc + window registration +
// deregistration + free, and provenance lookups.

#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <vector>

#include "memory/provenance_internal.hpp"  // the registry itself is measured
#include "symmcomm/comm/communicator.hpp"
#include "symmcomm/memory/provenance.hpp"
#include "symmcomm/memory/symm_allocator.hpp"
#include "symmcomm/memory/symmetric_buffer.hpp"

namespace symmcomm::bench {
namespace {

Communicator& comm() {
  static std::unique_ptr<Communicator> c = [] {
    auto comms = create_local_communicators({0});
    return std::make_unique<Communicator>(std::move(comms.at(0)));
  }();
  return *c;
}

void BM_NcclAllocRegisterDeregisterFree(benchmark::State& state) {
  std::size_t const bytes = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    SymmetricBuffer buffer(comm(), bytes);
    benchmark::DoNotOptimize(buffer.window());
  }
}

void BM_PoolAllocateFree(benchmark::State& state) {
  std::size_t const bytes = static_cast<std::size_t>(state.range(0));
  SymmAllocator pool(comm(), PoolOptions{64 << 20});
  // Realistic state: some live allocations around the one that churns.
  std::vector<void*> live;
  for (int i = 0; i < 64; ++i) live.push_back(pool.allocate(4096));
  for (auto _ : state) {
    void* p = pool.allocate(bytes);
    benchmark::DoNotOptimize(p);
    pool.deallocate(p);
  }
  for (void* p : live) pool.deallocate(p);
}

void BM_ProvenanceLookupPool1000Live(benchmark::State& state) {
  SymmAllocator pool(comm(), PoolOptions{256 << 20});
  std::vector<void*> live;
  for (int i = 0; i < 1000; ++i) live.push_back(pool.allocate(16384));
  std::uint64_t const id = comm().id();
  std::size_t i = 0;
  for (auto _ : state) {
    Provenance p = ProvenanceRegistry::global().lookup(live[i], 16384, id);
    benchmark::DoNotOptimize(p);
    i = (i + 1) % live.size();
  }
  for (void* p : live) pool.deallocate(p);
}

// CPU only: 1000 windows in one communicator's table (the worst case: no pooling at all).
void BM_ProvenanceLookup1000Windows(benchmark::State& state) {
  ProvenanceRegistry reg;
  for (std::uintptr_t w = 0; w < 1000; ++w) {
    reg.add({0x100000000 + w * 0x200000, 0x100000, reinterpret_cast<ncclWindow_t>(w + 1), 1, w});
  }
  std::mt19937 rng(1);
  std::vector<const void*> queries(4096);
  for (auto& q : queries) {
    q = reinterpret_cast<const void*>(0x100000000 + (rng() % 1000) * 0x200000 + (rng() % 0x1000));
  }
  std::size_t i = 0;
  for (auto _ : state) {
    Provenance p = reg.lookup(queries[i], 256, 1);
    benchmark::DoNotOptimize(p);
    i = (i + 1) & 4095;
  }
}

BENCHMARK(BM_NcclAllocRegisterDeregisterFree)
    ->Arg(1 << 20)
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(200);
BENCHMARK(BM_PoolAllocateFree)->Arg(1 << 20)->Arg(4096);
BENCHMARK(BM_ProvenanceLookupPool1000Live);
BENCHMARK(BM_ProvenanceLookup1000Windows);

}  // namespace
}  // namespace symmcomm::bench
