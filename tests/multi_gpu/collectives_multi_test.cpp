// Collectives across real ranks: one process, one communicator per GPU, one thread per rank.
// Buffers come from a SymmAllocator per rank (symmetric windows) or from cudaMalloc (plain).

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "core/cuda_utils.hpp"
#include "support/gpu_test.hpp"
#include "support/reference.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/comm/group.hpp"
#include "symmcomm/formats/codecs.hpp"
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

// A small integer in [-4, 4] for (rank, element): sums over up to 32 ranks stay exact in bf16.
float small_int(int rank, std::size_t i) {
  return static_cast<float>(static_cast<int>((i * 7 + static_cast<std::size_t>(rank) * 13) % 9) -
                            4);
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
  std::vector<std::vector<std::uint8_t>> gathered_scales(comms.size());
  std::vector<std::vector<float>> gathered_globals(comms.size());
  per_rank(comms, [&](int r) {
    auto& pool = *pools[static_cast<std::size_t>(r)];
    const auto& in = inputs[static_cast<std::size_t>(r)];
    auto* send_data = static_cast<std::uint8_t*>(pool.allocate(count / 2));
    auto* send_scales = static_cast<std::uint8_t*>(pool.allocate(count / 16));
    auto* send_global = static_cast<float*>(pool.allocate(4));
    auto* recv_data = static_cast<std::uint8_t*>(pool.allocate(count / 2 * n));
    auto* recv_scales = static_cast<std::uint8_t*>(pool.allocate(count / 16 * n));
    auto* recv_global = static_cast<float*>(pool.allocate(4 * n));
    support::copy_on(nullptr, send_data, in.data.data(), count / 2);
    support::copy_on(nullptr, send_scales, in.scales.data(), count / 16);
    support::copy_on(nullptr, send_global, &in.global_scale, 4);
    ag_plans[static_cast<std::size_t>(r)] = all_gather(
        comms[static_cast<std::size_t>(r)], Nvfp4View{send_data, send_scales, send_global, count},
        Nvfp4View{recv_data, recv_scales, recv_global, count * n}, nullptr);
    gathered[static_cast<std::size_t>(r)].resize(count / 2 * n);
    support::copy_on(nullptr, gathered[static_cast<std::size_t>(r)].data(), recv_data,
                     count / 2 * n);
    gathered_scales[static_cast<std::size_t>(r)].resize(count / 16 * n);
    support::copy_on(nullptr, gathered_scales[static_cast<std::size_t>(r)].data(), recv_scales,
                     count / 16 * n);
    gathered_globals[static_cast<std::size_t>(r)].resize(static_cast<std::size_t>(n));
    support::copy_on(nullptr, gathered_globals[static_cast<std::size_t>(r)].data(), recv_global,
                     4 * static_cast<std::size_t>(n));
    // BF16 reduce-scatter of small integers that differ per rank and element: every partial
    // sum is exact in bf16, whatever order NCCL adds in.
    auto* rs_send = static_cast<std::uint16_t*>(pool.allocate(count * 2 * n));
    auto* rs_recv = static_cast<std::uint16_t*>(pool.allocate(count * 2));
    std::vector<std::uint16_t> ints(count * static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < ints.size(); ++i) ints[i] = float_to_bf16_bits(small_int(r, i));
    support::copy_on(nullptr, rs_send, ints.data(), ints.size() * 2);
    rs_plans[static_cast<std::size_t>(r)] = reduce_scatter(
        comms[static_cast<std::size_t>(r)], Bf16Span{reinterpret_cast<bf16*>(rs_send), count * n},
        Bf16Span{reinterpret_cast<bf16*>(rs_recv), count}, nullptr);
    reduced[static_cast<std::size_t>(r)].resize(count);
    support::copy_on(nullptr, reduced[static_cast<std::size_t>(r)].data(), rs_recv, count * 2);
  });
  for (int r = 0; r < n; ++r) {
    std::cout << "rank " << r << " all_gather: " << ag_plans[static_cast<std::size_t>(r)].reason()
              << "\nrank " << r
              << " reduce_scatter: " << rs_plans[static_cast<std::size_t>(r)].reason() << "\n";
    std::size_t const me = static_cast<std::size_t>(r);
    for (int k = 0; k < n; ++k) {
      const HostNvfp4& in = inputs[static_cast<std::size_t>(k)];
      ASSERT_TRUE(std::equal(in.data.begin(), in.data.end(),
                             gathered[me].begin() + static_cast<std::ptrdiff_t>(k * count / 2)))
          << "rank " << r << ": data of rank " << k;
      ASSERT_TRUE(
          std::equal(in.scales.begin(), in.scales.end(),
                     gathered_scales[me].begin() + static_cast<std::ptrdiff_t>(k * count / 16)))
          << "rank " << r << ": block scales of rank " << k;
      ASSERT_EQ(gathered_globals[me][static_cast<std::size_t>(k)], in.global_scale)
          << "rank " << r << ": global scale of rank " << k;
    }
    for (std::size_t i = 0; i < count; ++i) {
      float want = 0.0f;
      for (int k = 0; k < n; ++k) want += small_int(k, me * count + i);
      ASSERT_EQ(bf16_bits_to_float(reduced[me][i]), want) << "rank " << r << ", element " << i;
    }
    const Capabilities& caps = comms[me].capabilities();
    if (caps.symmetric_memory) {
      // ~64 KiB per rank: below thresholds::kLsaAllGatherMaxBytesPerRank, so Auto takes
      // symmcomm's LSA gather where the LSA team spans the communicator.
      EXPECT_EQ(ag_plans[me].path, caps.lsa_covers(n) ? Path::LsaKernel : Path::NcclSymmetric);
      EXPECT_EQ(rs_plans[me].path, Path::NcclSymmetric);
    } else {
      // Pool buffers without symmetric support: the plan must say that, not another reason.
      EXPECT_EQ(ag_plans[me].why, PlanReason::NoSymmetricSupport) << ag_plans[me].reason();
      EXPECT_EQ(rs_plans[me].why, PlanReason::NoSymmetricSupport) << rs_plans[me].reason();
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

// symmcomm's own LSA kernels on real peers (forced path), three times in a row on the same
// buffers (the closing barrier must make immediate reuse safe), against the host and against
// the fallback path on the same inputs; gathered scales and global scales checked too.
TEST(MultiGpuCollectives, LsaKernelsMatchHostAndFallbackAndAllowImmediateReuse) {
  SYMMCOMM_REQUIRE_GPUS(2);
  auto comms = create_local_communicators();
  int const n = static_cast<int>(comms.size());
  if (!comms[0].capabilities().lsa_covers(n)) {
    GTEST_SKIP() << "the LSA team does not span the communicator: "
                 << comms[0].capabilities().reason;
  }
  std::size_t const count = 16 * 2048 + 16;  // per rank; odd multiple of 16 (narrow loads)
  std::vector<std::unique_ptr<SymmAllocator>> pools;
  {
    Group group;
    for (auto& c : comms)
      pools.push_back(std::make_unique<SymmAllocator>(c, PoolOptions{256 << 20}));
  }
  std::vector<std::vector<float>> x;
  std::vector<HostNvfp4> q, shards_q;
  for (int r = 0; r < n; ++r) {
    x.push_back(random_floats(count, 70 + static_cast<std::uint32_t>(r)));
    std::vector<std::uint16_t> bits(count);
    for (std::size_t i = 0; i < count; ++i) {
      bits[i] = float_to_bf16_bits(x.back()[i]);
      x.back()[i] = bf16_bits_to_float(bits[i]);
    }
    q.push_back(HostNvfp4::quantize(x.back()));
    shards_q.push_back(
        HostNvfp4::quantize(random_floats(count * n, 90 + static_cast<std::uint32_t>(r))));
  }
  std::vector<std::string> failures(comms.size());
  per_rank(comms, [&](int r) {
    std::size_t const me = static_cast<std::size_t>(r);
    const Communicator& comm = comms[me];
    auto& pool = *pools[me];
    auto alloc = [&](std::size_t bytes) {
      return static_cast<std::uint8_t*>(pool.allocate(bytes));
    };
    Options lsa;
    lsa.path = PathChoice::LsaKernel;
    Options fallback;
    fallback.path = PathChoice::Fallback;
    // Fused quantize + all-gather, then the gathered NVFP4 all-gathered again by the LSA gather.
    test::DeviceArray<std::uint16_t> input(count);
    std::vector<std::uint16_t> bits(count);
    for (std::size_t i = 0; i < count; ++i) bits[i] = float_to_bf16_bits(x[me][i]);
    input.upload(bits);
    Nvfp4View const recv{alloc(count / 2 * n), alloc(count / 16 * n),
                         reinterpret_cast<float*>(alloc(4 * n)), count * n};
    Nvfp4View const send{alloc(count / 2), alloc(count / 16), reinterpret_cast<float*>(alloc(4)),
                         count};
    Nvfp4View const recv2{alloc(count / 2 * n), alloc(count / 16 * n),
                          reinterpret_cast<float*>(alloc(4 * n)), count * n};
    support::copy_on(nullptr, send.data, q[me].data.data(), count / 2);
    support::copy_on(nullptr, send.block_scales, q[me].scales.data(), count / 16);
    support::copy_on(nullptr, send.global_scale, &q[me].global_scale, 4);
    // Quantized reduce-scatter from symmetric send buffers: LSA one-shot vs fallback.
    Nvfp4View const rs_send{alloc(count * n / 2), alloc(count * n / 16),
                            reinterpret_cast<float*>(alloc(4)), count * n};
    support::copy_on(nullptr, rs_send.data, shards_q[me].data.data(), count * n / 2);
    support::copy_on(nullptr, rs_send.block_scales, shards_q[me].scales.data(), count * n / 16);
    support::copy_on(nullptr, rs_send.global_scale, &shards_q[me].global_scale, 4);
    test::DeviceArray<float> out_lsa(count), out_fb(count);
    for (int iteration = 0; iteration < 3; ++iteration) {
      Plan const p1 = quantize_all_gather(
          comm, Bf16Span{reinterpret_cast<bf16*>(input.get()), count}, recv, nullptr, nullptr, lsa);
      Plan const p2 = all_gather(comm, send, recv2, nullptr, lsa);
      Plan const p3 = reduce_scatter(comm, rs_send, Fp32Span{out_lsa.get(), count}, nullptr, lsa);
      if (p1.path != Path::LsaKernel || p2.path != Path::LsaKernel || p3.path != Path::LsaKernel) {
        failures[me] = "a forced lsa-kernel call took another path";
      }
    }
    reduce_scatter(comm, rs_send, Fp32Span{out_fb.get(), count}, nullptr, fallback);
    SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
    std::vector<std::uint8_t> got(count / 2 * n), got2(count / 2 * n);
    support::copy_on(nullptr, got.data(), recv.data, got.size());
    support::copy_on(nullptr, got2.data(), recv2.data, got2.size());
    for (int k = 0; k < n; ++k) {
      auto const at = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(k) * count / 2);
      if (!std::equal(q[k].data.begin(), q[k].data.end(), got.begin() + at)) {
        failures[me] += " quantize_all_gather differs for rank " + std::to_string(k) + ";";
      }
      if (!std::equal(q[k].data.begin(), q[k].data.end(), got2.begin() + at)) {
        failures[me] += " all_gather differs for rank " + std::to_string(k) + ";";
      }
    }
    auto const lsa_sum = out_lsa.download();
    if (lsa_sum != out_fb.download()) failures[me] += " lsa and fallback sums differ;";
    // Both run the same reduction template: also hold the LSA sum to the host's rank-order sum.
    auto const want = test::reduce_like_kernel(shards_q, me * count, count);
    std::size_t off = 0;
    for (std::size_t i = 0; i < count; ++i) {
      double bound = 0.0;
      for (const auto& in : shards_q) bound += std::fabs(in.value(me * count + i));
      off += std::fabs(lsa_sum[i] - want[i]) <= bound * n * 1.2e-7 + 1e-30 ? 0 : 1;
    }
    if (off != 0) failures[me] += " " + std::to_string(off) + " lsa sums off the host's;";
    std::vector<std::uint8_t> scales(count / 16 * n), scales2(count / 16 * n);
    std::vector<float> globals(static_cast<std::size_t>(n)), globals2(static_cast<std::size_t>(n));
    support::copy_on(nullptr, scales.data(), recv.block_scales, scales.size());
    support::copy_on(nullptr, scales2.data(), recv2.block_scales, scales2.size());
    support::copy_on(nullptr, globals.data(), recv.global_scale, 4 * globals.size());
    support::copy_on(nullptr, globals2.data(), recv2.global_scale, 4 * globals2.size());
    for (int k = 0; k < n; ++k) {
      auto const at = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(k) * count / 16);
      if (!std::equal(q[k].scales.begin(), q[k].scales.end(), scales.begin() + at) ||
          globals[static_cast<std::size_t>(k)] != q[k].global_scale) {
        failures[me] += " quantize_all_gather scales differ for rank " + std::to_string(k) + ";";
      }
      if (!std::equal(q[k].scales.begin(), q[k].scales.end(), scales2.begin() + at) ||
          globals2[static_cast<std::size_t>(k)] != q[k].global_scale) {
        failures[me] += " all_gather scales differ for rank " + std::to_string(k) + ";";
      }
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(failures[static_cast<std::size_t>(r)], "") << "rank " << r;
  Group group;
  pools.clear();
}

}  // namespace
