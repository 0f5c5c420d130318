// symmcomm's LSA kernels (the code Path::LsaKernel runs over NCCL windows) through the loopback
// peer policy: N virtual ranks on one GPU, N in {2, 3, 4, 8}, random inputs, against CPU
// references. Every output is checked twice, after poisoning it with two different byte
// values, so an element the kernel never wrote cannot pass by matching the poison; guard bytes
// past each output prove nothing is written beyond it.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/lsa.hpp"
#include "support/gpu_test.hpp"
#include "support/guarded.hpp"
#include "support/reference.hpp"
#include "support/tensors.hpp"
#include "symmcomm/collectives/local_reduce.hpp"
#include "symmcomm/formats/codecs.hpp"
#include "symmcomm/testing/loopback.hpp"

namespace {

using namespace symmcomm;
using namespace symmcomm::test;

// Counts per virtual rank: distinct, multiples of 16, some odd multiples (narrow vector paths).
std::vector<std::size_t> variable_counts(int ranks, std::size_t base) {
  std::vector<std::size_t> c;
  for (int r = 0; r < ranks; ++r) c.push_back(base + 16 * static_cast<std::size_t>(3 * r + 1));
  return c;
}

std::size_t sum(const std::vector<std::size_t>& v) {
  return std::accumulate(v.begin(), v.end(), std::size_t{0});
}

// Virtual ranks, and whether the kernels launch with programmatic dependent launch (each
// virtual rank's kernel may then start while the previous one ends; it must still see that
// rank's writes: detail::lsa::set_programmatic_launch).
class LsaLoopback : public ::testing::TestWithParam<std::tuple<int, bool>> {
 protected:
  void SetUp() override {
    SYMMCOMM_REQUIRE_GPU();
    previous_ = detail::lsa::programmatic_launch();
    detail::lsa::set_programmatic_launch(std::get<1>(GetParam()));
  }
  void TearDown() override { detail::lsa::set_programmatic_launch(previous_); }
  int ranks() const { return std::get<0>(GetParam()); }

 private:
  bool previous_ = false;
};

// ---- all-gather ---------------------------------------------------------------------------

TEST_P(LsaLoopback, Nvfp4AllGatherWithVariableCountsMovesEveryByte) {
  int const n = ranks();
  auto const counts = variable_counts(n, 16 * 1021);
  std::size_t const total = sum(counts);
  std::vector<std::unique_ptr<DeviceArray<std::uint8_t>>> sd, ss;
  std::vector<std::unique_ptr<DeviceArray<float>>> sg;
  std::vector<std::unique_ptr<Guarded>> rd, rs, rg;
  std::vector<std::uint8_t> want_data, want_scales;
  std::vector<float> want_globals;
  std::vector<Nvfp4View> send, recv;
  for (int r = 0; r < n; ++r) {
    std::size_t const c = counts[static_cast<std::size_t>(r)];
    auto const d = random_bytes(c / 2, 10 + static_cast<std::uint32_t>(r));
    auto const s = random_bytes(c / 16, 20 + static_cast<std::uint32_t>(r));
    float const g = 100.0f + static_cast<float>(r);
    sd.push_back(std::make_unique<DeviceArray<std::uint8_t>>(d.size()));
    sd.back()->upload(d);
    ss.push_back(std::make_unique<DeviceArray<std::uint8_t>>(s.size()));
    ss.back()->upload(s);
    sg.push_back(std::make_unique<DeviceArray<float>>(1));
    sg.back()->upload({g});
    want_data.insert(want_data.end(), d.begin(), d.end());
    want_scales.insert(want_scales.end(), s.begin(), s.end());
    want_globals.push_back(g);
    send.push_back(Nvfp4View{sd.back()->get(), ss.back()->get(), sg.back()->get(), c});
    rd.push_back(std::make_unique<Guarded>(total / 2));
    rs.push_back(std::make_unique<Guarded>(total / 16));
    rg.push_back(std::make_unique<Guarded>(n * sizeof(float)));
    recv.push_back(Nvfp4View{rd.back()->get(), rs.back()->get(),
                             reinterpret_cast<float*>(rg.back()->get()), total});
  }
  for (int poison : kPoisons) {
    for (int r = 0; r < n; ++r) {
      rd[r]->mem.poison(poison);
      rs[r]->mem.poison(poison);
      rg[r]->mem.poison(poison);
    }
    loopback::all_gather(send, recv, nullptr);
    SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
    for (int r = 0; r < n; ++r) {
      std::string const at = "rank " + std::to_string(r) + " poison " + std::to_string(poison);
      ASSERT_EQ(rd[r]->body(), want_data) << at;
      ASSERT_EQ(rs[r]->body(), want_scales) << at;
      auto const g = rg[r]->body();
      std::vector<float> got(static_cast<std::size_t>(n));
      std::memcpy(got.data(), g.data(), g.size());
      ASSERT_EQ(got, want_globals) << at;
      rd[r]->expect_guard_intact(poison, at + " data");
      rs[r]->expect_guard_intact(poison, at + " block scales");
      rg[r]->expect_guard_intact(poison, at + " global scales");
    }
  }
}

TEST_P(LsaLoopback, Fp8AndBf16AllGathersMoveEveryByte) {
  int const n = ranks();
  // FP8: equal counts (16-byte vectors); BF16: variable counts of 8-byte multiples.
  std::size_t const c8 = 4096 * 3;
  std::vector<std::size_t> cb;
  for (int r = 0; r < n; ++r) cb.push_back(4 * static_cast<std::size_t>(1000 + 7 * r));
  std::vector<std::unique_ptr<DeviceArray<std::uint8_t>>> s8, sb;
  std::vector<std::unique_ptr<DeviceArray<float>>> sc;
  std::vector<std::unique_ptr<Guarded>> r8, rc, rb;
  std::vector<std::uint8_t> want8, wantb;
  std::vector<float> want_scales;
  std::vector<Fp8View> send8, recv8;
  std::vector<Bf16Span> sendb, recvb;
  for (int r = 0; r < n; ++r) {
    auto const codes = random_bytes(c8, 30 + static_cast<std::uint32_t>(r));
    auto const words = random_bytes(cb[static_cast<std::size_t>(r)] * 2, 40 + r);
    s8.push_back(std::make_unique<DeviceArray<std::uint8_t>>(c8));
    s8.back()->upload(codes);
    sc.push_back(std::make_unique<DeviceArray<float>>(1));
    sc.back()->upload({0.5f + static_cast<float>(r)});
    sb.push_back(std::make_unique<DeviceArray<std::uint8_t>>(words.size()));
    sb.back()->upload(words);
    want8.insert(want8.end(), codes.begin(), codes.end());
    wantb.insert(wantb.end(), words.begin(), words.end());
    want_scales.push_back(0.5f + static_cast<float>(r));
    send8.push_back(Fp8View{s8.back()->get(), sc.back()->get(), c8, Fp8Format::E5M2});
    sendb.push_back(Bf16Span{reinterpret_cast<bf16*>(sb.back()->get()), cb[r]});
    r8.push_back(std::make_unique<Guarded>(c8 * n));
    rc.push_back(std::make_unique<Guarded>(n * sizeof(float)));
    rb.push_back(std::make_unique<Guarded>(sum(cb) * 2));
    recv8.push_back(Fp8View{r8.back()->get(), reinterpret_cast<float*>(rc.back()->get()), c8 * n,
                            Fp8Format::E5M2});
    recvb.push_back(Bf16Span{reinterpret_cast<bf16*>(rb.back()->get()), sum(cb)});
  }
  for (int poison : kPoisons) {
    for (int r = 0; r < n; ++r) {
      r8[r]->mem.poison(poison);
      rc[r]->mem.poison(poison);
      rb[r]->mem.poison(poison);
    }
    loopback::all_gather(send8, recv8, nullptr);
    loopback::all_gather(sendb, recvb, nullptr);
    SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
    for (int r = 0; r < n; ++r) {
      std::string const at = "rank " + std::to_string(r) + " poison " + std::to_string(poison);
      ASSERT_EQ(r8[r]->body(), want8) << at;
      auto const g = rc[r]->body();
      std::vector<float> got(static_cast<std::size_t>(n));
      std::memcpy(got.data(), g.data(), g.size());
      ASSERT_EQ(got, want_scales) << at;
      ASSERT_EQ(rb[r]->body(), wantb) << at;
      r8[r]->expect_guard_intact(poison, at + " fp8");
      rc[r]->expect_guard_intact(poison, at + " fp8 scales");
      rb[r]->expect_guard_intact(poison, at + " bf16");
    }
  }
}

// ---- one-shot reduce-scatter ----------------------------------------------------------------

// fp32 accumulation in rank order on the device (fused multiply-adds) vs the host: each of the
// `ranks` steps may round differently by half an ulp of the partial sum.
template <class Q>
float fma_bound(const std::vector<Q>& inputs, std::size_t i, int ranks) {
  double magnitude = 0.0;
  for (const auto& r : inputs) magnitude += std::fabs(r.value(i));
  return static_cast<float>(magnitude * ranks * 1.2e-7) + 1e-30f;
}

TEST_P(LsaLoopback, OneShotNvfp4AndFp8ReduceScatterMatchCpuAndTheFallbackKernel) {
  int const n = ranks();
  // Shards of 32-multiples (16-byte loads) for even ranks, odd multiples of 16 (8-byte loads)
  // for odd ones: both vector paths, and variable counts.
  std::vector<std::size_t> shard;
  for (int r = 0; r < n; ++r) shard.push_back(16 * (2 * 257 + static_cast<std::size_t>(r % 2)));
  std::size_t const total = sum(shard);
  std::vector<std::size_t> displ(static_cast<std::size_t>(n), 0);
  for (int r = 1; r < n; ++r) displ[r] = displ[r - 1] + shard[r - 1];

  std::vector<HostNvfp4> q;
  std::vector<HostFp8> q8;
  std::vector<std::unique_ptr<DeviceNvfp4>> dq;
  std::vector<std::unique_ptr<DeviceArray<std::uint8_t>>> d8;
  std::vector<std::unique_ptr<DeviceArray<float>>> s8;
  std::vector<Nvfp4View> send;
  std::vector<Fp8View> send8;
  for (int r = 0; r < n; ++r) {
    auto const x = random_floats(total, 500 + static_cast<std::uint32_t>(r),
                                 1.0f + 0.5f * static_cast<float>(r));
    q.push_back(HostNvfp4::quantize(x));
    dq.push_back(std::make_unique<DeviceNvfp4>(total));
    dq.back()->upload(q.back());
    send.push_back(dq.back()->view());
    q8.push_back(HostFp8::quantize(x, Fp8Format::E4M3));
    d8.push_back(std::make_unique<DeviceArray<std::uint8_t>>(total));
    d8.back()->upload(q8.back().codes);
    s8.push_back(std::make_unique<DeviceArray<float>>(1));
    s8.back()->upload({q8.back().scale});
    send8.push_back(Fp8View{d8.back()->get(), s8.back()->get(), total, Fp8Format::E4M3});
  }
  std::vector<std::unique_ptr<Guarded>> out32, out16;
  std::vector<Fp32Span> recv32;
  std::vector<Bf16Span> recv16;
  for (int r = 0; r < n; ++r) {
    out32.push_back(std::make_unique<Guarded>(shard[r] * 4));
    out16.push_back(std::make_unique<Guarded>(shard[r] * 2));
    recv32.push_back(Fp32Span{reinterpret_cast<float*>(out32.back()->get()), shard[r]});
    recv16.push_back(Bf16Span{reinterpret_cast<bf16*>(out16.back()->get()), shard[r]});
  }
  DeviceArray<float> fallback_out(total);

  for (bool nvfp4 : {true, false}) {
    for (int poison : {0xFF, 0x7F}) {  // NaN patterns in fp32 and bf16
      for (int r = 0; r < n; ++r) {
        out32[r]->mem.poison(poison);
        out16[r]->mem.poison(poison);
      }
      if (nvfp4) {
        loopback::reduce_scatter(send, recv32, nullptr);
        loopback::reduce_scatter(send, recv16, nullptr);
      } else {
        loopback::reduce_scatter(send8, recv32, nullptr);
        loopback::reduce_scatter(send8, recv16, nullptr);
      }
      SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
      for (int r = 0; r < n; ++r) {
        std::string const at = std::string(nvfp4 ? "nvfp4" : "fp8") + " rank " + std::to_string(r) +
                               " poison " + std::to_string(poison);
        auto const b32 = out32[r]->body();
        std::vector<float> got(shard[r]);
        std::memcpy(got.data(), b32.data(), b32.size());
        auto const b16 = out16[r]->body();
        std::vector<std::uint16_t> got16(shard[r]);
        std::memcpy(got16.data(), b16.data(), b16.size());
        auto const mine = nvfp4 ? reduce_like_kernel(q, displ[r], shard[r])
                                : reduce_like_kernel(q8, displ[r], shard[r]);
        auto const exact =
            nvfp4 ? exact_sum(q, displ[r], shard[r]) : exact_sum(q8, displ[r], shard[r]);
        for (std::size_t i = 0; i < shard[r]; ++i) {
          ASSERT_FALSE(std::isnan(got[i])) << at << ": element " << i << " not written";
          float const bound =
              nvfp4 ? fma_bound(q, displ[r] + i, n) : fma_bound(q8, displ[r] + i, n);
          ASSERT_NEAR(got[i], mine[i], bound) << at << " element " << i;
          // bf16 output: the same fp32 sum rounded once.
          ASSERT_EQ(got16[i], float_to_bf16_bits(got[i])) << at << " element " << i;
        }
        EXPECT_LT(relative_error(got, exact), 1e-6) << at;
        out32[r]->expect_guard_intact(poison, at + " fp32");
        out16[r]->expect_guard_intact(poison, at + " bf16");

        // The fallback's local reduction of the same shards gives the same bits.
        QuantizedShards table;
        table.ranks = n;
        for (int p = 0; p < n; ++p) {
          if (nvfp4) {
            table.data[p] = send[p].data + displ[r] / 2;
            table.block_scales[p] = send[p].block_scales + displ[r] / 16;
            table.scale[p] = send[p].global_scale;
          } else {
            table.data[p] = send8[p].data + displ[r];
            table.scale[p] = send8[p].scale;
          }
        }
        if (reinterpret_cast<std::uintptr_t>(table.data[0]) % (nvfp4 ? 8 : 16) != 0) continue;
        if (nvfp4) {
          reduce_nvfp4_shards(table, shard[r], fallback_out.get(), nullptr);
        } else {
          reduce_fp8_shards(table, shard[r], Fp8Format::E4M3, fallback_out.get(), nullptr);
        }
        auto const fb = fallback_out.download();
        for (std::size_t i = 0; i < shard[r]; ++i) {
          ASSERT_EQ(std::memcmp(&fb[i], &got[i], 4), 0)
              << at << " element " << i << ": lsa " << got[i] << " vs fallback " << fb[i];
        }
      }
    }
  }
}

// ---- fused quantize + all-gather ------------------------------------------------------------

TEST_P(LsaLoopback, FusedQuantizeAllGatherEqualsHostQuantizationOfEveryRank) {
  int const n = ranks();
  auto const counts = variable_counts(n, 16 * 2048);
  std::size_t const total = sum(counts);
  std::vector<std::unique_ptr<DeviceArray<std::uint16_t>>> in;
  std::vector<std::unique_ptr<DeviceArray<float>>> g4, s8;
  std::vector<Bf16Span> input;
  std::vector<const float*> gs, ss;
  std::vector<std::uint8_t> want_data, want_scales, want8;
  std::vector<float> want_g, want_s;
  for (int r = 0; r < n; ++r) {
    std::size_t const c = counts[r];
    auto const bits = to_bf16_bits(random_floats(c, 900 + static_cast<std::uint32_t>(r), 2.0f));
    std::vector<float> x(c);
    float amax = 0.0f;
    for (std::size_t i = 0; i < c; ++i) {
      x[i] = bf16_bits_to_float(bits[i]);
      amax = std::fmax(amax, std::fabs(x[i]));
    }
    in.push_back(std::make_unique<DeviceArray<std::uint16_t>>(c));
    in.back()->upload(bits);
    input.push_back(Bf16Span{reinterpret_cast<bf16*>(in.back()->get()), c});
    auto const hq = HostNvfp4::quantize(x, nvfp4_global_scale(amax));
    want_data.insert(want_data.end(), hq.data.begin(), hq.data.end());
    want_scales.insert(want_scales.end(), hq.scales.begin(), hq.scales.end());
    want_g.push_back(hq.global_scale);
    g4.push_back(std::make_unique<DeviceArray<float>>(1));
    g4.back()->upload({hq.global_scale});
    gs.push_back(g4.back()->get());
    auto const h8 = HostFp8::quantize(x, Fp8Format::E4M3);
    want8.insert(want8.end(), h8.codes.begin(), h8.codes.end());
    want_s.push_back(h8.scale);
    s8.push_back(std::make_unique<DeviceArray<float>>(1));
    s8.back()->upload({h8.scale});
    ss.push_back(s8.back()->get());
  }
  std::vector<std::unique_ptr<Guarded>> rd, rs, rg, r8, rc;
  std::vector<Nvfp4View> recv;
  std::vector<Fp8View> recv8;
  for (int r = 0; r < n; ++r) {
    rd.push_back(std::make_unique<Guarded>(total / 2));
    rs.push_back(std::make_unique<Guarded>(total / 16));
    rg.push_back(std::make_unique<Guarded>(n * sizeof(float)));
    recv.push_back(Nvfp4View{rd.back()->get(), rs.back()->get(),
                             reinterpret_cast<float*>(rg.back()->get()), total});
    r8.push_back(std::make_unique<Guarded>(total));
    rc.push_back(std::make_unique<Guarded>(n * sizeof(float)));
    recv8.push_back(Fp8View{r8.back()->get(), reinterpret_cast<float*>(rc.back()->get()), total});
  }
  auto floats = [&](const Guarded& g) {
    auto const b = g.body();
    std::vector<float> f(b.size() / 4);
    std::memcpy(f.data(), b.data(), b.size());
    return f;
  };
  for (int poison : kPoisons) {
    for (int r = 0; r < n; ++r) {
      for (auto* g : {rd[r].get(), rs[r].get(), rg[r].get(), r8[r].get(), rc[r].get()}) {
        g->mem.poison(poison);
      }
    }
    loopback::quantize_all_gather(input, gs, recv, nullptr);
    loopback::quantize_all_gather(input, ss, recv8, nullptr);
    SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
    for (int r = 0; r < n; ++r) {
      std::string const at = "rank " + std::to_string(r) + " poison " + std::to_string(poison);
      ASSERT_EQ(rd[r]->body(), want_data) << at;
      ASSERT_EQ(rs[r]->body(), want_scales) << at;
      ASSERT_EQ(floats(*rg[r]), want_g) << at;
      ASSERT_EQ(r8[r]->body(), want8) << at;
      ASSERT_EQ(floats(*rc[r]), want_s) << at;
      for (auto* g : {rd[r].get(), rs[r].get(), rg[r].get(), r8[r].get(), rc[r].get()}) {
        g->expect_guard_intact(poison, at);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(VirtualRanks, LsaLoopback,
                         ::testing::Combine(::testing::Values(2, 3, 4, 8), ::testing::Bool()));

// ---- argument checking ----------------------------------------------------------------------

TEST(LsaLoopbackErrors, BadArgumentsNameTheArgumentAndValue) {
  SYMMCOMM_REQUIRE_GPU();
  DeviceArray<std::uint16_t> a(64), b(64 * 9);
  std::vector<Bf16Span> nine(9, Bf16Span{reinterpret_cast<bf16*>(a.get()), 64});
  std::vector<Bf16Span> nine_recv(9, Bf16Span{reinterpret_cast<bf16*>(b.get()), 64 * 9});
  EXPECT_NE(logic_error_text([&] {
              loopback::all_gather(nine, nine_recv, nullptr);
            }).find("send holds 9 views"),
            std::string::npos);
  std::vector<Bf16Span> two(2, Bf16Span{reinterpret_cast<bf16*>(a.get()), 64});
  std::vector<Bf16Span> two_recv = {Bf16Span{reinterpret_cast<bf16*>(b.get()), 128},
                                    Bf16Span{reinterpret_cast<bf16*>(b.get()), 100}};
  EXPECT_NE(logic_error_text([&] {
              loopback::all_gather(two, two_recv, nullptr);
            }).find("recv[1].count 100"),
            std::string::npos);
  DeviceNvfp4 s(64), t(64);
  std::vector<Nvfp4View> send = {s.view(), t.view()};
  std::vector<Fp32Span> out = {Fp32Span{nullptr, 32}, Fp32Span{nullptr, 24}};
  EXPECT_NE(logic_error_text([&] {
              loopback::reduce_scatter(send, out, nullptr);
            }).find("recv[1].count 24 is not a multiple of 16"),
            std::string::npos);
  std::vector<const float*> scales = {nullptr, nullptr};
  std::vector<Bf16Span> in2 = {Bf16Span{reinterpret_cast<bf16*>(a.get()), 32},
                               Bf16Span{reinterpret_cast<bf16*>(a.get()), 32}};
  std::vector<Nvfp4View> recv2 = {t.view(), s.view()};
  EXPECT_NE(logic_error_text([&] {
              loopback::quantize_all_gather(in2, scales, recv2, nullptr);
            }).find("scale[0] is null"),
            std::string::npos);
}

}  // namespace
