// NVFP4 block scales written in the swizzled 128x4 layout NVFP4 GEMMs read
// (Nvfp4View::scale_layout): the device swizzle pass, the LSA kernels over 2/3/4/8 virtual ranks
// with uneven rows (gather and fused quantize + gather), and one-rank collectives on the paths
// their buffers take. References: scale_layout.hpp's host conversion of the linear scales.
// Outputs are poisoned twice and guarded (support/guarded.hpp).

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "support/comm_fixture.hpp"
#include "support/gpu_test.hpp"
#include "support/guarded.hpp"
#include "support/reference.hpp"
#include "support/tensors.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/comm/group.hpp"
#include "symmcomm/formats/codecs.hpp"
#include "symmcomm/formats/scale_layout.hpp"
#include "symmcomm/memory/symm_allocator.hpp"
#include "symmcomm/testing/loopback.hpp"

namespace {

using namespace symmcomm;
using namespace symmcomm::test;

// The device swizzle against the host conversion written from the documented layout, on
// row counts that do not fill whole tiles and scale-column counts that do not fill a tile row.
TEST(SwizzledScales, DeviceSwizzleMatchesTheHostLayoutForUnevenShapes) {
  SYMMCOMM_REQUIRE_GPU();
  std::mt19937 rng(7);
  for (auto const& [rows, cols] : std::vector<std::pair<std::size_t, std::size_t>>{
           {1, 1}, {127, 3}, {128, 4}, {129, 448}, {300, 7}, {1000, 448}}) {
    std::vector<std::uint8_t> linear(rows * cols);
    for (auto& b : linear) b = static_cast<std::uint8_t>(rng() % 255 + 1);  // never the padding
    std::vector<std::uint8_t> want(swizzled_scale_bytes(rows, cols));
    swizzle_scales_host(linear.data(), rows, cols, want.data());
    // shift 1: input and output off their alignment (byte loads, byte stores).
    for (std::size_t const shift : {std::size_t{0}, std::size_t{1}}) {
      DeviceArray<std::uint8_t> in(linear.size() + shift), out(want.size() + shift);
      support::upload_on(nullptr, in.get() + shift, linear);
      out.poison(0xEE);  // padding rewritten
      swizzle_nvfp4_scales(in.get() + shift, rows, cols, out.get() + shift, nullptr);
      std::vector<std::uint8_t> const got = out.download();
      EXPECT_EQ(
          std::vector<std::uint8_t>(got.begin() + static_cast<std::ptrdiff_t>(shift), got.end()),
          want)
          << rows << " x " << cols << " scales, shift " << shift;
      if (shift > 0) {
        EXPECT_EQ(got[0], 0xEE) << "wrote before the output";
      }
    }
  }
}

class SwizzledScalesLoopback : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { SYMMCOMM_REQUIRE_GPU(); }
  int ranks() const { return GetParam(); }
};

// Swizzled block scales (Nvfp4View::scale_layout): every rank's rows - a different number per
// rank, not filling whole 128-row tiles, with a scale-column count that does not fill a 4-column
// tile row - land where the documented layout (scale_layout.hpp's host conversion of the
// concatenated linear scales) puts them, padding zeroed, nothing past the buffer written; data
// and global scales as with linear scales.
TEST_P(SwizzledScalesLoopback, Nvfp4AllGatherForUnevenRows) {
  int const n = ranks();
  for (std::size_t const scale_cols : {std::size_t{7}, std::size_t{448}}) {
    std::size_t const row = scale_cols * 16;
    std::vector<std::size_t> counts;
    for (int r = 0; r < n; ++r) counts.push_back(row * static_cast<std::size_t>(37 * r + 5));
    std::size_t const total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
    std::size_t const rows = total / row;
    std::vector<std::unique_ptr<DeviceArray<std::uint8_t>>> sd, ss;
    std::vector<std::unique_ptr<DeviceArray<float>>> sg;
    std::vector<std::unique_ptr<Guarded>> rd, rs, rg;
    std::vector<std::uint8_t> want_data, linear;
    std::vector<Nvfp4View> send, recv;
    for (int r = 0; r < n; ++r) {
      std::size_t const c = counts[static_cast<std::size_t>(r)];
      auto const d = random_bytes(c / 2, 30 + static_cast<std::uint32_t>(r));
      auto s = random_bytes(c / 16, 40 + static_cast<std::uint32_t>(r));
      for (auto& b : s) b = static_cast<std::uint8_t>(b | 1);  // never a padding 0
      sd.push_back(std::make_unique<DeviceArray<std::uint8_t>>(d.size()));
      sd.back()->upload(d);
      ss.push_back(std::make_unique<DeviceArray<std::uint8_t>>(s.size()));
      ss.back()->upload(s);
      sg.push_back(std::make_unique<DeviceArray<float>>(1));
      sg.back()->upload({1.5f + static_cast<float>(r)});
      want_data.insert(want_data.end(), d.begin(), d.end());
      linear.insert(linear.end(), s.begin(), s.end());
      send.push_back(Nvfp4View{sd.back()->get(), ss.back()->get(), sg.back()->get(), c});
      rd.push_back(std::make_unique<Guarded>(total / 2));
      rs.push_back(std::make_unique<Guarded>(swizzled_scale_bytes(rows, scale_cols)));
      rg.push_back(std::make_unique<Guarded>(n * sizeof(float)));
      recv.push_back(Nvfp4View{rd.back()->get(), rs.back()->get(),
                               reinterpret_cast<float*>(rg.back()->get()), total}
                         .with_swizzled_scales(row));
    }
    std::vector<std::uint8_t> want_scales(swizzled_scale_bytes(rows, scale_cols));
    swizzle_scales_host(linear.data(), rows, scale_cols, want_scales.data());
    for (int poison : kPoisons) {
      for (int r = 0; r < n; ++r) {
        rd[r]->mem.poison(poison);
        rs[r]->mem.poison(poison);
        rg[r]->mem.poison(poison);
      }
      loopback::all_gather(send, recv, nullptr);
      SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
      for (int r = 0; r < n; ++r) {
        std::string const at = std::to_string(scale_cols) + " scale columns, rank " +
                               std::to_string(r) + " poison " + std::to_string(poison);
        ASSERT_EQ(rd[r]->body(), want_data) << at;
        ASSERT_EQ(rs[r]->body(), want_scales) << at << ": swizzled scales";
        rs[r]->expect_guard_intact(poison, at + " swizzled scales");
        rd[r]->expect_guard_intact(poison, at + " data");
      }
    }
  }
}

// The fused quantize + all-gather writing swizzled block scales: uneven rows per rank, 7 scale
// columns (a partial tile row); data as the host quantizes it, scales where the documented
// layout of the host's linear scales puts them, padding zeroed, guards intact.
TEST_P(SwizzledScalesLoopback, FusedQuantizeAllGatherForUnevenRows) {
  int const n = ranks();
  std::size_t const cols = 7, row = cols * 16;
  std::vector<std::unique_ptr<DeviceArray<std::uint16_t>>> in;
  std::vector<std::unique_ptr<DeviceArray<float>>> g4;
  std::vector<Bf16Span> input;
  std::vector<const float*> gs;
  std::vector<std::uint8_t> want_data, linear;
  std::size_t total = 0;
  for (int r = 0; r < n; ++r) {
    std::size_t const c = row * static_cast<std::size_t>(37 * r + 5);
    total += c;
    auto const bits = to_bf16_bits(random_floats(c, 700 + static_cast<std::uint32_t>(r), 2.0f));
    std::vector<float> x(c);
    for (std::size_t i = 0; i < c; ++i) x[i] = bf16_bits_to_float(bits[i]);
    in.push_back(std::make_unique<DeviceArray<std::uint16_t>>(c));
    in.back()->upload(bits);
    input.push_back(Bf16Span{reinterpret_cast<bf16*>(in.back()->get()), c});
    auto const hq = HostNvfp4::quantize(x);
    want_data.insert(want_data.end(), hq.data.begin(), hq.data.end());
    linear.insert(linear.end(), hq.scales.begin(), hq.scales.end());
    g4.push_back(std::make_unique<DeviceArray<float>>(1));
    g4.back()->upload({hq.global_scale});
    gs.push_back(g4.back()->get());
  }
  std::size_t const rows = total / row;
  std::vector<std::uint8_t> want_scales(swizzled_scale_bytes(rows, cols));
  swizzle_scales_host(linear.data(), rows, cols, want_scales.data());
  std::vector<std::unique_ptr<Guarded>> rd, rs, rg;
  std::vector<Nvfp4View> recv;
  for (int r = 0; r < n; ++r) {
    rd.push_back(std::make_unique<Guarded>(total / 2));
    rs.push_back(std::make_unique<Guarded>(want_scales.size()));
    rg.push_back(std::make_unique<Guarded>(n * sizeof(float)));
    recv.push_back(Nvfp4View{rd.back()->get(), rs.back()->get(),
                             reinterpret_cast<float*>(rg.back()->get()), total}
                       .with_swizzled_scales(row));
  }
  for (int poison : kPoisons) {
    for (int r = 0; r < n; ++r) {
      for (auto* g : {rd[r].get(), rs[r].get(), rg[r].get()}) g->mem.poison(poison);
    }
    loopback::quantize_all_gather(input, gs, recv, nullptr);
    SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
    for (int r = 0; r < n; ++r) {
      std::string const at = "rank " + std::to_string(r) + " poison " + std::to_string(poison);
      ASSERT_EQ(rd[r]->body(), want_data) << at;
      ASSERT_EQ(rs[r]->body(), want_scales) << at << ": swizzled scales";
      for (auto* g : {rd[r].get(), rs[r].get(), rg[r].get()}) g->expect_guard_intact(poison, at);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(VirtualRanks, SwizzledScalesLoopback, ::testing::Values(2, 3, 4, 8));

// Swizzled block scales at one rank on the paths plain and pool buffers take (NCCL's gather
// into the workspace then the swizzle pass; a symmetric path where the communicator has one),
// and through quantize_all_gather: the scales against the host's swizzle of the linear ones.
// Refused: a layout on a reduce-scatter, NCCL's path inside a Group (the swizzle pass would run
// before NCCL's deferred gather).
TEST(SwizzledScales, OneRankGathersOnThePathsTheyTake) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  std::size_t const cols = 7, row = cols * 16, rows = 300, n = rows * row;
  auto const bits = to_bf16_bits(random_floats(n, 41, 2.0f));
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = bf16_bits_to_float(bits[i]);
  auto const q = HostNvfp4::quantize(x);
  std::vector<std::uint8_t> want(swizzled_scale_bytes(rows, cols));
  swizzle_scales_host(q.scales.data(), rows, cols, want.data());
  DeviceNvfp4 send(n);
  send.data.upload(q.data);
  send.block_scales.upload(q.scales);
  send.global.upload({q.global_scale});
  SymmAllocator pool(comm, PoolOptions{16 << 20});
  auto* pool_data = static_cast<std::uint8_t*>(pool.allocate(n / 2));
  auto* pool_scales = static_cast<std::uint8_t*>(pool.allocate(want.size()));
  auto* pool_global = static_cast<float*>(pool.allocate(sizeof(float)));
  DeviceArray<std::uint8_t> data(n / 2), scales(want.size());
  DeviceArray<float> global(1);
  DeviceArray<std::uint16_t> in(n);
  in.upload(bits);
  ConstBf16Span const input{reinterpret_cast<const bf16*>(in.get()), n};
  for (bool in_pool : {false, true}) {
    Nvfp4View const recv = (in_pool ? Nvfp4View{pool_data, pool_scales, pool_global, n}
                                    : Nvfp4View{data.get(), scales.get(), global.get(), n})
                               .with_swizzled_scales(row);
    for (int call = 0; call < 3; ++call) {
      support::fill_on(nullptr, recv.block_scales, 0xEE, want.size());
      support::fill_on(nullptr, recv.data, 0xEE, n / 2);
      Plan const plan = call == 0   ? all_gather(comm, send.view(), recv, nullptr)
                        : call == 1 ? all_gatherv(comm, send.view(), recv, {n}, nullptr)
                                    : quantize_all_gather(comm, input, recv, nullptr, nullptr);
      SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
      std::string const at = std::string(call == 0   ? "all_gather"
                                         : call == 1 ? "all_gatherv"
                                                     : "quantize_all_gather") +
                             (in_pool ? ", pool buffers -> " : ", plain buffers -> ") +
                             to_string(plan.path);
      auto const got = support::download_on<std::uint8_t>(nullptr, recv.block_scales, want.size());
      auto const got_data = support::download_on<std::uint8_t>(nullptr, recv.data, n / 2);
      EXPECT_EQ(got, want) << at << ": swizzled block scales";
      EXPECT_EQ(got_data, q.data) << at << ": data";
      if (!in_pool) {
        EXPECT_EQ(plan.path, Path::Fallback) << at;
      }
    }
  }
  // Refused, naming why: swizzled scales anywhere but a gather's receive tensor, NCCL's path
  // inside a Group, a row length that is not whole blocks.
  DeviceArray<float> out(n);
  Nvfp4View const plain =
      Nvfp4View{data.get(), scales.get(), global.get(), n}.with_swizzled_scales(row);
  std::string m = logic_error_text([&] {
    reduce_scatter(comm, plain, Fp32Span{out.get(), n}, nullptr);
  });
  EXPECT_NE(m.find("send has swizzled block scales"), std::string::npos) << m;
  {
    Group group;
    m = logic_error_text([&] { all_gather(comm, send.view(), plain, nullptr); });
  }
  EXPECT_NE(m.find("cannot run inside a symmcomm::Group"), std::string::npos) << m;
  m = logic_error_text(
      [&] { all_gather(comm, send.view(), plain.with_swizzled_scales(100), nullptr); });
  EXPECT_NE(m.find("recv.row_elements 100 is not a positive multiple of 16"), std::string::npos)
      << m;
  pool.deallocate(pool_global);
  pool.deallocate(pool_scales);
  pool.deallocate(pool_data);
}

}  // namespace
