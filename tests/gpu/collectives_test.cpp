// Collectives on a real one-rank NCCL communicator (every op x format x path one rank can
// take), validation errors, and the local reduce kernel through a loopback table of N virtual
// ranks' shards on one GPU. CUDA graphs: collectives_graph_test.cpp.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "comm/comm_state.hpp"
#include "support/comm_fixture.hpp"
#include "support/reference.hpp"
#include "support/tensors.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/local_reduce.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/comm/group.hpp"
#include "symmcomm/formats/codecs.hpp"
#include "symmcomm/logging.hpp"
#include "symmcomm/memory/symm_allocator.hpp"

namespace {

using namespace symmcomm;
using symmcomm::test::DeviceArray;
using symmcomm::test::HostFp8;
using symmcomm::test::HostNvfp4;
using symmcomm::test::one_rank_comm;
using namespace symmcomm::test;

TEST(Collectives, OneRankAllGatherOfEveryFormatCopiesAndSaysWhy) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  std::size_t const n = 7168 * 4;
  auto const x = random_floats(n, 1);
  // BF16.
  DeviceArray<std::uint16_t> send(n), recv(n);
  send.upload(to_bf16_bits(x));
  Plan const plan = all_gather(comm, Bf16Span{reinterpret_cast<bf16*>(send.get()), n},
                               Bf16Span{reinterpret_cast<bf16*>(recv.get()), n}, nullptr);
  SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
  EXPECT_EQ(recv.download(), send.download());
  EXPECT_EQ(plan.path, Path::Fallback);
  // Plain cudaMalloc buffers: either no symmetric support at all, or a buffer not in a window.
  EXPECT_EQ(plan.why, comm.capabilities().symmetric_memory ? PlanReason::BufferNotSymmetric
                                                           : PlanReason::NoSymmetricSupport)
      << plan.reason();
  // NVFP4 with top-k ids as an extra tensor in the same group.
  auto const q = HostNvfp4::quantize(x);
  DeviceNvfp4 qs(n), qr(n);
  qs.upload(q);
  DeviceArray<std::int32_t> ids(64), ids_out(64);
  std::vector<std::int32_t> host_ids(64);
  for (int i = 0; i < 64; ++i) host_ids[static_cast<std::size_t>(i)] = i * 3;
  ids.upload(host_ids);
  all_gather(comm, qs.view(), qr.view(), {GatherItem{ids.get(), ids_out.get(), 256, "topk_ids"}},
             nullptr);
  SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
  EXPECT_EQ(qr.data.download(), q.data);
  EXPECT_EQ(qr.block_scales.download(), q.scales);
  EXPECT_EQ(qr.global.download()[0], q.global_scale);
  EXPECT_EQ(ids_out.download(), host_ids);
  // FP8 with its scale.
  auto const f = HostFp8::quantize(x, Fp8Format::E5M2);
  DeviceArray<std::uint8_t> fs(n), fr(n);
  DeviceArray<float> ss(1), sr(1);
  fs.upload(f.codes);
  ss.upload({f.scale});
  all_gather(comm, Fp8View{fs.get(), ss.get(), n, Fp8Format::E5M2},
             Fp8View{fr.get(), sr.get(), n, Fp8Format::E5M2}, nullptr);
  // all_gatherv with one rank.
  DeviceNvfp4 qv(n);
  all_gatherv(comm, qs.view(), qv.view(), std::vector<std::size_t>{n}, nullptr);
  SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
  EXPECT_EQ(fr.download(), f.codes);
  EXPECT_EQ(sr.download()[0], f.scale);
  EXPECT_EQ(qv.data.download(), q.data);
}

TEST(Collectives, ForcedSymmetricPathIsRefusedWithTheReason) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  DeviceArray<std::uint16_t> send(256), recv(256);
  Options options;
  options.path = PathChoice::NcclSymmetric;
  std::string const m = logic_error_text([&] {
    all_gather(comm, Bf16Span{reinterpret_cast<bf16*>(send.get()), 256},
               Bf16Span{reinterpret_cast<bf16*>(recv.get()), 256}, nullptr, options);
  });
  EXPECT_NE(m.find("Options::path = nccl-symmetric cannot be taken"), std::string::npos) << m;
  options.path = PathChoice::LsaKernel;
  EXPECT_THROW(reduce_scatter(comm, Bf16Span{reinterpret_cast<bf16*>(send.get()), 256},
                              Bf16Span{reinterpret_cast<bf16*>(recv.get()), 256}, nullptr, options),
               LogicError);
}

// quantize_all_gather on one rank: the recv holds exactly the host quantization, with a given
// or a computed scale; without symmetric support it says why it did not fuse, and forcing the
// LSA kernel is refused naming the reason.
TEST(Collectives, OneRankQuantizeAllGatherEqualsHostQuantization) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  std::size_t const n = 7168 * 2;
  auto const bits = to_bf16_bits(random_floats(n, 31, 3.0f));
  std::vector<float> x(n);
  float amax = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = bf16_bits_to_float(bits[i]);
    amax = std::fmax(amax, std::fabs(x[i]));
  }
  DeviceArray<std::uint16_t> in(n);
  in.upload(bits);
  Bf16Span const input{reinterpret_cast<bf16*>(in.get()), n};
  auto const q = HostNvfp4::quantize(x, nvfp4_global_scale(amax));
  for (bool given : {true, false}) {
    DeviceNvfp4 r(n);
    DeviceArray<float> g(1);
    g.upload({q.global_scale});
    Plan const plan =
        quantize_all_gather(comm, input, r.view(), given ? g.get() : nullptr, nullptr);
    SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
    EXPECT_EQ(r.data.download(), q.data) << (given ? "given" : "computed");
    EXPECT_EQ(r.block_scales.download(), q.scales);
    EXPECT_EQ(r.global.download()[0], q.global_scale);
    EXPECT_EQ(plan.path, Path::Fallback) << "plain buffers: " << plan.reason();
  }
  auto const f = HostFp8::quantize(x, Fp8Format::E4M3);
  DeviceArray<std::uint8_t> codes(n);
  DeviceArray<float> scale(1);
  quantize_all_gather(comm, input, Fp8View{codes.get(), scale.get(), n, Fp8Format::E4M3}, nullptr,
                      nullptr);
  SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
  EXPECT_EQ(codes.download(), f.codes);
  EXPECT_EQ(scale.download()[0], f.scale);
  {
    // Plain buffers: the LSA kernel needs the receive side in a window, whatever the support.
    DeviceNvfp4 r(n);
    Options forced;
    forced.path = PathChoice::LsaKernel;
    std::string const m = logic_error_text(
        [&] { quantize_all_gather(comm, input, r.view(), nullptr, nullptr, forced); });
    EXPECT_NE(m.find("Options::path = lsa-kernel cannot be taken"), std::string::npos) << m;
  }
  DeviceNvfp4 small(16);
  std::string const m =
      logic_error_text([&] { quantize_all_gather(comm, input, small.view(), nullptr, nullptr); });
  EXPECT_NE(m.find("recv.count 16 is not input.count 14336"), std::string::npos) << m;
}

TEST(Collectives, OneRankReduceScatterOfEveryFormat) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  std::size_t const n = 16 * 5000;
  auto const x = random_floats(n, 2);
  // BF16 and FP32: the sum over one rank is the input.
  DeviceArray<std::uint16_t> bs(n), br(n);
  bs.upload(to_bf16_bits(x));
  reduce_scatter(comm, Bf16Span{reinterpret_cast<bf16*>(bs.get()), n},
                 Bf16Span{reinterpret_cast<bf16*>(br.get()), n}, nullptr);
  DeviceArray<float> fs(n), fr(n);
  fs.upload(x);
  reduce_scatter(comm, Fp32Span{fs.get(), n}, Fp32Span{fr.get(), n}, nullptr);
  SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
  EXPECT_EQ(br.download(), bs.download());
  EXPECT_EQ(fr.download(), x);

  // NVFP4 into fp32, bf16 and NVFP4; FP8 likewise.
  auto const q = HostNvfp4::quantize(x);
  auto const ref = symmcomm::test::reduce_like_kernel(std::vector<HostNvfp4>{q}, 0, n);
  DeviceNvfp4 qs(n);
  qs.upload(q);
  DeviceArray<float> out32(n);
  DeviceArray<std::uint16_t> out16(n);
  Plan const plan = reduce_scatter(comm, qs.view(), Fp32Span{out32.get(), n}, nullptr);
  EXPECT_EQ(plan.path, Path::Fallback);
  reduce_scatter(comm, qs.view(), Bf16Span{reinterpret_cast<bf16*>(out16.get()), n}, nullptr);
  DeviceNvfp4 requant(n);
  reduce_scatter(comm, qs.view(), requant.view(), nullptr);
  SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
  auto const got32 = out32.download();
  auto const got16 = out16.download();
  // One rank: each output element is one product (code x block scale x 1/global); the device
  // may form the multiplier in another order, within one fp32 rounding. The bf16 output is the
  // same path's fp32 result rounded once.
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_LE(std::fabs(got32[i] - ref[i]), 1.2e-7f * std::fabs(ref[i])) << i;
    ASSERT_EQ(got16[i], float_to_bf16_bits(got32[i])) << i;
  }
  // Re-quantized: bit-identical to the host quantizing that fp32 result once - data, block
  // scales and global scale.
  auto const expect = HostNvfp4::quantize(got32);
  EXPECT_EQ(requant.global.download()[0], expect.global_scale);
  EXPECT_EQ(requant.block_scales.download(), expect.scales);
  EXPECT_EQ(requant.data.download(), expect.data);

  for (Fp8Format f : {Fp8Format::E4M3, Fp8Format::E5M2}) {
    auto const q8 = HostFp8::quantize(x, f);
    auto const ref8 = symmcomm::test::reduce_like_kernel(std::vector<HostFp8>{q8}, 0, n);
    DeviceArray<std::uint8_t> codes(n), requant8(n);
    DeviceArray<float> scale(1), requant_scale(1), out(n);
    codes.upload(q8.codes);
    scale.upload({q8.scale});
    Fp8View const view{codes.get(), scale.get(), n, f};
    reduce_scatter(comm, view, Fp32Span{out.get(), n}, nullptr);
    reduce_scatter(comm, view, Fp8View{requant8.get(), requant_scale.get(), n, f}, nullptr);
    SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
    auto const got = out.download();
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], ref8[i]) << i;  // one product: exact
    HostFp8 const expect8 = HostFp8::quantize(ref8, f);
    EXPECT_EQ(requant_scale.download()[0], expect8.scale);
    EXPECT_EQ(requant8.download(), expect8.codes);
  }
}

TEST(Collectives, ValidationNamesArgumentAndValue) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  DeviceArray<std::uint16_t> a(256), b(512);
  auto* pa = reinterpret_cast<bf16*>(a.get());
  auto* pb = reinterpret_cast<bf16*>(b.get());
  EXPECT_NE(logic_error_text([&] {
              all_gather(comm, Bf16Span{pa, 256}, Bf16Span{pb, 512}, nullptr);
            }).find("recv.count 512 is not send.count 256 x comm.size() 1"),
            std::string::npos);
  EXPECT_NE(logic_error_text([&] {
              reduce_scatter(comm, Bf16Span{pa, 256}, Bf16Span{pb, 512}, nullptr);
            }).find("send.count 256 is not recv.count 512"),
            std::string::npos);
  std::vector<std::uint16_t> host(256);
  std::string const host_msg = logic_error_text([&] {
    all_gather(comm, Bf16Span{reinterpret_cast<bf16*>(host.data()), 256}, Bf16Span{pb, 256},
               nullptr);
  });
  EXPECT_NE(host_msg.find("send.data"), std::string::npos) << host_msg;
  EXPECT_NE(host_msg.find("is not device memory"), std::string::npos) << host_msg;
  DeviceArray<std::uint8_t> c1(256), c2(256);
  DeviceArray<float> s1(1), s2(1);
  EXPECT_NE(logic_error_text([&] {
              all_gather(comm, Fp8View{c1.get(), s1.get(), 256, Fp8Format::E4M3},
                         Fp8View{c2.get(), s2.get(), 256, Fp8Format::E5M2}, nullptr);
            }).find("all_gather: send is fp8e4m3, recv fp8e5m2"),
            std::string::npos);
  EXPECT_NE(logic_error_text([&] {
              all_gatherv(comm, Bf16Span{pa, 256}, Bf16Span{pb, 256}, {128}, nullptr);
            }).find("send.count 256 differs from counts[0] = 128"),
            std::string::npos);
  EXPECT_NE(logic_error_text([&] {
              all_gatherv(comm, Bf16Span{pa, 256}, Bf16Span{pb, 256}, {256, 1}, nullptr);
            }).find("counts has 2 entries for 1 ranks"),
            std::string::npos);
  DeviceNvfp4 q(256), r(256);
  Nvfp4View no_scale = q.view();
  no_scale.global_scale = nullptr;
  EXPECT_NE(logic_error_text([&] {
              all_gather(comm, no_scale, r.view(), nullptr);
            }).find("send.global_scale is null"),
            std::string::npos);
  DeviceArray<float> out(256);
  Options tiny;
  DeviceArray<std::uint8_t> scratch(16);
  tiny.workspace = scratch.get();
  tiny.workspace_bytes = 16;
  EXPECT_NE(logic_error_text([&] {
              reduce_scatter(comm, q.view(), Fp32Span{out.get(), 256}, nullptr, tiny);
            }).find("Options::workspace_bytes 16 is below"),
            std::string::npos);
  EXPECT_NE(logic_error_text([&] {
              reduce_scatter(comm, q.view(), Fp32Span{out.get(), 250}, nullptr);
            }).find("send.count 256 is not recv.count 250"),
            std::string::npos);
}

// A quantized reduce-scatter mixes NCCL calls with its own kernels; inside a Group NCCL would
// enqueue its calls only at the end, after the kernels that need their results: refused.
TEST(Collectives, QuantizedReduceScatterInsideAGroupIsRefused) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  DeviceNvfp4 send(256);
  DeviceArray<float> out(256);
  std::string m;
  {
    Group group;
    m = logic_error_text([&] {
      reduce_scatter(comm, send.view(), Fp32Span{out.get(), 256}, nullptr);
    });
  }
  EXPECT_NE(m.find("cannot run inside a symmcomm::Group"), std::string::npos) << m;
}

TEST(Collectives, BufferOfAnotherCommunicatorIsExplained) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  auto others = create_local_communicators({0});
  SymmAllocator other_pool(others[0], PoolOptions{1 << 20});
  void* foreign = other_pool.allocate(512);
  SymmAllocator own_pool(comm, PoolOptions{1 << 20});
  void* send = own_pool.allocate(512);
  // The foreign buffer is the receive side: the one every symmetric path needs in a window of
  // this communicator (NCCL >= 2.29 needs no other), so it is the one the plan explains.
  Plan const plan = all_gather(comm, Bf16Span{static_cast<bf16*>(send), 256},
                               Bf16Span{static_cast<bf16*>(foreign), 256}, nullptr);
  SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
  EXPECT_EQ(plan.path, Path::Fallback);
  if (comm.capabilities().symmetric_memory) {
    EXPECT_NE(plan.reason().find("another communicator"), std::string::npos) << plan.reason();
  } else {
    EXPECT_EQ(plan.why, PlanReason::NoSymmetricSupport) << plan.reason();
  }
  own_pool.deallocate(send);
  other_pool.deallocate(foreign);
}

TEST(Collectives, StatsCountPathsAndDebugLogSaysWhy) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  std::uint64_t const before = comm.stats().count(Path::Fallback);
  std::vector<std::string> lines;
  LogSink previous = set_log_sink([&](LogLevel, const std::string& m) { lines.push_back(m); });
  LogLevel const old = log_level();
  set_log_level(LogLevel::Debug);
  DeviceArray<std::uint16_t> a(256), b(256);
  all_gather(comm, Bf16Span{reinterpret_cast<bf16*>(a.get()), 256},
             Bf16Span{reinterpret_cast<bf16*>(b.get()), 256}, nullptr);
  set_log_level(old);
  set_log_sink(previous);
  EXPECT_EQ(comm.stats().count(Path::Fallback), before + 1);
  bool found = false;
  for (const auto& l : lines)
    found = found || (l.find("all_gather bf16 count 256") != std::string::npos &&
                      l.find("fallback") != std::string::npos);
  EXPECT_TRUE(found);
}

// The local reduce kernel with N virtual ranks' shards on one GPU, against the CPU: fp64 for
// accuracy, the kernels' own arithmetic for agreement; outputs poisoned with NaN bytes.
class LoopbackReduce : public ::testing::TestWithParam<int> {};

TEST_P(LoopbackReduce, Nvfp4AndFp8ShardsMatchCpuReference) {
  SYMMCOMM_REQUIRE_GPU();
  int const ranks = GetParam();
  std::size_t const count = 16 * 4099;
  std::vector<HostNvfp4> q;
  std::vector<HostFp8> q8;
  std::vector<std::unique_ptr<DeviceNvfp4>> shards;
  std::vector<std::unique_ptr<DeviceArray<std::uint8_t>>> codes;
  std::vector<std::unique_ptr<DeviceArray<float>>> scales;
  QuantizedShards table, table8;
  table.ranks = table8.ranks = ranks;
  for (int r = 0; r < ranks; ++r) {
    auto const x =
        random_floats(count, 77 + static_cast<std::uint32_t>(r), 1.0f + static_cast<float>(r));
    q.push_back(HostNvfp4::quantize(x));
    shards.push_back(std::make_unique<DeviceNvfp4>(count));
    shards.back()->upload(q.back());
    table.data[r] = shards.back()->data.get();
    table.block_scales[r] = shards.back()->block_scales.get();
    table.scale[r] = shards.back()->global.get();
    q8.push_back(HostFp8::quantize(x, Fp8Format::E4M3));
    codes.push_back(std::make_unique<DeviceArray<std::uint8_t>>(count));
    codes.back()->upload(q8.back().codes);
    scales.push_back(std::make_unique<DeviceArray<float>>(1));
    scales.back()->upload({q8.back().scale});
    table8.data[r] = codes.back()->get();
    table8.scale[r] = scales.back()->get();
  }
  DeviceArray<float> out(count);
  out.poison(0xFF);
  reduce_nvfp4_shards(table, count, out.get(), nullptr);
  SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
  auto const got = out.download();
  auto const mine = symmcomm::test::reduce_like_kernel(q, 0, count);
  auto const exact = symmcomm::test::exact_sum(q, 0, count);
  // fp32 accumulation in rank order: the device fuses multiply-adds, the host does not, so each
  // of the `ranks` steps may round differently by half an ulp of the partial sum.
  auto bound = [&](const auto& inputs, std::size_t i) {
    double magnitude = 0.0;
    for (const auto& r : inputs) magnitude += std::fabs(r.value(i));
    return static_cast<float>(magnitude * ranks * 1.2e-7) + 1e-30f;
  };
  for (std::size_t i = 0; i < count; ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << "element " << i << " not written";
    ASSERT_NEAR(got[i], mine[i], bound(q, i)) << i;
  }
  EXPECT_LT(symmcomm::test::relative_error(got, exact), 1e-6);

  out.poison(0xFF);
  reduce_fp8_shards(table8, count, Fp8Format::E4M3, out.get(), nullptr);
  SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
  auto const got8 = out.download();
  auto const mine8 = symmcomm::test::reduce_like_kernel(q8, 0, count);
  for (std::size_t i = 0; i < count; ++i) {
    ASSERT_FALSE(std::isnan(got8[i])) << "element " << i << " not written";
    ASSERT_NEAR(got8[i], mine8[i], bound(q8, i)) << i;
  }
  EXPECT_LT(symmcomm::test::relative_error(got8, symmcomm::test::exact_sum(q8, 0, count)), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(VirtualRanks, LoopbackReduce, ::testing::Values(2, 3, 4, 8));

}  // namespace
