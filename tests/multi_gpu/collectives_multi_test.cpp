// Collectives across real ranks: one process, one communicator per GPU, one thread per rank.
// Buffers come from a SymmAllocator per rank (symmetric windows) or from cudaMalloc (plain).

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "support/gpu_test.hpp"
#include "support/reference.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/comm/group.hpp"
#include "symmcomm/detail/cuda_utils.hpp"
#include "symmcomm/memory/symm_allocator.hpp"

namespace {

using namespace symmcomm;
using symmcomm::test::HostNvfp4;

// Runs body(rank) on one thread per rank with that rank's device current.
void per_rank(const std::vector<Communicator>& comms, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(comms.size());
  for (std::size_t r = 0; r < comms.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        detail::DeviceGuard guard(comms[r].device());
        body(static_cast<int>(r));
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  return v;
}

TEST(MultiGpuCollectives, Nvfp4AllGatherAndBf16ReduceScatterOnPoolBuffers) {
  SYMMCOMM_REQUIRE_GPUS(2);
  auto comms = create_local_communicators();
  int const n = static_cast<int>(comms.size());
  std::size_t const count = 7168 * 16;  // per rank
  std::vector<std::unique_ptr<SymmAllocator>> pools;
  {
    Group group;
    for (auto& c : comms)
      pools.push_back(std::make_unique<SymmAllocator>(c, PoolOptions{256 << 20}));
  }
  std::vector<HostNvfp4> inputs;
  for (int r = 0; r < n; ++r)
    inputs.push_back(HostNvfp4::quantize(random_floats(count, 10 + static_cast<std::uint32_t>(r))));
  std::vector<Plan> ag_plans(comms.size()), rs_plans(comms.size());
  std::vector<std::vector<std::uint8_t>> gathered(comms.size());
  std::vector<std::vector<std::uint16_t>> reduced(comms.size());
  per_rank(comms, [&](int r) {
    auto& pool = *pools[static_cast<std::size_t>(r)];
    const auto& in = inputs[static_cast<std::size_t>(r)];
    auto* send_data = static_cast<std::uint8_t*>(pool.allocate(count / 2));
    auto* send_scales = static_cast<std::uint8_t*>(pool.allocate(count / 16));
    auto* send_global = static_cast<float*>(pool.allocate(4));
    auto* recv_data = static_cast<std::uint8_t*>(pool.allocate(count / 2 * n));
    auto* recv_scales = static_cast<std::uint8_t*>(pool.allocate(count / 16 * n));
    auto* recv_global = static_cast<float*>(pool.allocate(4 * n));
    SYMMCOMM_CUDA_TRY(cudaMemcpy(send_data, in.data.data(), count / 2, cudaMemcpyHostToDevice));
    SYMMCOMM_CUDA_TRY(
        cudaMemcpy(send_scales, in.scales.data(), count / 16, cudaMemcpyHostToDevice));
    SYMMCOMM_CUDA_TRY(cudaMemcpy(send_global, &in.global_scale, 4, cudaMemcpyHostToDevice));
    ag_plans[static_cast<std::size_t>(r)] = all_gather(
        comms[static_cast<std::size_t>(r)], Nvfp4View{send_data, send_scales, send_global, count},
        Nvfp4View{recv_data, recv_scales, recv_global, count * n}, nullptr);
    gathered[static_cast<std::size_t>(r)].resize(count / 2 * n);
    SYMMCOMM_CUDA_TRY(cudaMemcpy(gathered[static_cast<std::size_t>(r)].data(), recv_data,
                                 count / 2 * n, cudaMemcpyDeviceToHost));
    // BF16 reduce-scatter of ones * (rank + 1): each element sums to n(n+1)/2.
    auto* rs_send = static_cast<std::uint16_t*>(pool.allocate(count * 2 * n));
    auto* rs_recv = static_cast<std::uint16_t*>(pool.allocate(count * 2));
    std::vector<std::uint16_t> ones(count * n, float_to_bf16_bits(static_cast<float>(r + 1)));
    SYMMCOMM_CUDA_TRY(cudaMemcpy(rs_send, ones.data(), ones.size() * 2, cudaMemcpyHostToDevice));
    rs_plans[static_cast<std::size_t>(r)] = reduce_scatter(
        comms[static_cast<std::size_t>(r)], Bf16Span{reinterpret_cast<bf16*>(rs_send), count * n},
        Bf16Span{reinterpret_cast<bf16*>(rs_recv), count}, nullptr);
    reduced[static_cast<std::size_t>(r)].resize(count);
    SYMMCOMM_CUDA_TRY(cudaMemcpy(reduced[static_cast<std::size_t>(r)].data(), rs_recv, count * 2,
                                 cudaMemcpyDeviceToHost));
  });
  for (int r = 0; r < n; ++r) {
    std::cout << "rank " << r << " all_gather: " << ag_plans[static_cast<std::size_t>(r)].reason()
              << "\nrank " << r
              << " reduce_scatter: " << rs_plans[static_cast<std::size_t>(r)].reason() << "\n";
    for (int k = 0; k < n; ++k) {
      ASSERT_TRUE(std::equal(inputs[static_cast<std::size_t>(k)].data.begin(),
                             inputs[static_cast<std::size_t>(k)].data.end(),
                             gathered[static_cast<std::size_t>(r)].begin() +
                                 static_cast<std::ptrdiff_t>(k * count / 2)));
    }
    float const expect = static_cast<float>(n * (n + 1) / 2);
    for (auto v : reduced[static_cast<std::size_t>(r)]) ASSERT_EQ(bf16_bits_to_float(v), expect);
    if (comms[static_cast<std::size_t>(r)].capabilities().symmetric_memory) {
      EXPECT_EQ(ag_plans[static_cast<std::size_t>(r)].path, Path::NcclSymmetric);
      EXPECT_EQ(rs_plans[static_cast<std::size_t>(r)].path, Path::NcclSymmetric);
    }
  }
  Group group;
  pools.clear();
}

TEST(MultiGpuCollectives, Nvfp4ReduceScatterMatchesReference) {
  SYMMCOMM_REQUIRE_GPUS(2);
  auto comms = create_local_communicators();
  int const n = static_cast<int>(comms.size());
  std::size_t const shard = 16 * 4096;
  std::vector<HostNvfp4> inputs;
  for (int r = 0; r < n; ++r)
    inputs.push_back(
        HostNvfp4::quantize(random_floats(shard * n, 50 + static_cast<std::uint32_t>(r))));
  std::vector<std::vector<float>> outs(comms.size());
  per_rank(comms, [&](int r) {
    const auto& in = inputs[static_cast<std::size_t>(r)];
    test::DeviceArray<std::uint8_t> data(shard * n / 2), scales(shard * n / 16);
    test::DeviceArray<float> global(1), out(shard);
    data.upload(in.data);
    scales.upload(in.scales);
    global.upload({in.global_scale});
    out.poison(0xFF);
    reduce_scatter(comms[static_cast<std::size_t>(r)],
                   Nvfp4View{data.get(), scales.get(), global.get(), shard * n},
                   Fp32Span{out.get(), shard}, nullptr);
    SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
    outs[static_cast<std::size_t>(r)] = out.download();
  });
  for (int r = 0; r < n; ++r) {
    auto const exact = test::exact_sum(inputs, static_cast<std::size_t>(r) * shard, shard);
    EXPECT_LT(test::relative_error(outs[static_cast<std::size_t>(r)], exact), 1e-6) << "rank " << r;
  }
}

}  // namespace
