#pragma once
// A one-rank communicator with a pool and a stream, made once per process: the host-cost
// benchmarks' world (host_cost_bench.cu, host_cost_stages.cu). Header-only, so that
// scripts/host_cost_before.sh carries it into the tree before the call descriptor with the
// benchmark that uses it.

#include <cuda_runtime_api.h>

#include <memory>
#include <utility>

#include "symmcomm/comm/communicator.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/memory/symm_allocator.hpp"

namespace symmcomm::bench {

struct OneRank {
  Communicator comm;
  std::unique_ptr<SymmAllocator> pool;
  cudaStream_t stream = nullptr;
};

inline OneRank& one_rank() {
  static OneRank* r = [] {
    auto* o = new OneRank;
    o->comm = std::move(create_local_communicators({0}).front());
    o->pool = std::make_unique<SymmAllocator>(o->comm, PoolOptions{64u << 20});
    SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&o->stream, cudaStreamNonBlocking));
    return o;
  }();
  return *r;
}

}  // namespace symmcomm::bench
