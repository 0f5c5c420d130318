// The C ABI on a GPU: a one-rank communicator from a unique id, the pool, provenance, codecs,
// collectives and the PyTorch allocator entry points.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "support/gpu_test.hpp"
#include "support/reference.hpp"
#include "symmcomm/c_api.h"
#include "symmcomm/formats/bf16.hpp"
#include "symmcomm/formats/scale_layout.hpp"

namespace {

using symmcomm::test::DeviceArray;

#define ASSERT_OK(call) ASSERT_EQ((call), SYMMCOMM_SUCCESS) << symmcomm_last_error()

TEST(CApiGpu, PoolCollectivesAndTorchAllocator) {
  SYMMCOMM_REQUIRE_GPU();
  std::vector<char> id(symmcomm_unique_id_bytes());
  ASSERT_OK(symmcomm_get_unique_id(id.data()));
  symmcomm_comm_t comm = nullptr;
  ASSERT_OK(symmcomm_comm_init(1, id.data(), 0, 0, &comm));
  int rank = -1, size = -1, device = -1, symmetric = -1;
  ASSERT_OK(symmcomm_comm_info(comm, &rank, &size, &device, &symmetric));
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(size, 1);
  EXPECT_EQ(device, 0);

  symmcomm_pool_t pool = nullptr;
  ASSERT_OK(symmcomm_pool_create(comm, 8 << 20, 0, 0, &pool));
  std::size_t const n = 16 * 1024;
  void *src = nullptr, *data = nullptr, *scales = nullptr, *global = nullptr;
  ASSERT_OK(symmcomm_pool_allocate(pool, n * 2, 0, nullptr, &src));
  ASSERT_OK(symmcomm_pool_allocate(pool, n / 2, 0, nullptr, &data));
  ASSERT_OK(symmcomm_pool_allocate(pool, n / 16, 0, nullptr, &scales));
  ASSERT_OK(symmcomm_pool_allocate(pool, 4, 0, nullptr, &global));
  int sym = -1;
  std::size_t offset = 1;
  ASSERT_OK(symmcomm_provenance(comm, data, n / 2, &sym, &offset));
  EXPECT_EQ(sym, 1);
  DeviceArray<std::uint8_t> plain(64);
  ASSERT_OK(symmcomm_provenance(comm, plain.get(), 64, &sym, nullptr));
  EXPECT_EQ(sym, 0);

  std::vector<std::uint16_t> host(n);
  for (std::size_t i = 0; i < n; ++i) {
    host[i] = symmcomm::float_to_bf16_bits(static_cast<float>(i % 61) - 30.0f);
  }
  symmcomm::support::upload_on(nullptr, src, host);
  symmcomm_tensor_t const x = symmcomm_tensor_bf16(src, n);
  symmcomm_tensor_t const q = symmcomm_tensor_nvfp4(data, scales, static_cast<float*>(global), n);
  ASSERT_OK(symmcomm_quantize(&x, &q, 1, nullptr));
  DeviceArray<std::uint8_t> gdata(n / 2), gscales(n / 16);
  DeviceArray<float> gglobal(1);
  symmcomm_tensor_t const g = symmcomm_tensor_nvfp4(gdata.get(), gscales.get(), gglobal.get(), n);
  symmcomm_plan_t plan = SYMMCOMM_PLAN_INIT;
  ASSERT_OK(symmcomm_all_gather(comm, &q, &g, nullptr, nullptr, &plan));
  // The receive side is plain device memory: no symmetric path can take it, whatever the
  // communicator supports (NCCL needs the peer-accessed side in a window on every version).
  EXPECT_EQ(plan.path, SYMMCOMM_TOOK_FALLBACK) << "symmetric support: " << symmetric;
  // Why: the plain buffers where the communicator has symmetric support (NCCL 2.30 at one
  // rank), else the communicator itself (NCCL 2.28 at one rank).
  EXPECT_EQ(plan.reason, symmetric != 0 ? SYMMCOMM_REASON_BUFFER_NOT_SYMMETRIC
                                        : SYMMCOMM_REASON_NO_SYMMETRIC_SUPPORT);
  // The reason's text, produced when asked: its length first, then the text (and truncated).
  std::size_t needed = 0;
  ASSERT_OK(symmcomm_plan_describe(&plan, nullptr, 0, &needed));
  std::vector<char> text(needed);
  ASSERT_OK(symmcomm_plan_describe(&plan, text.data(), text.size(), nullptr));
  EXPECT_EQ(std::strlen(text.data()) + 1, needed);
  EXPECT_EQ(std::string(text.data()).rfind("fallback", 0), 0u) << text.data();
  if (symmetric != 0) {
    EXPECT_NE(std::string(text.data()).find("recv.data"), std::string::npos) << text.data();
  }
  char shortened[9];
  ASSERT_OK(symmcomm_plan_describe(&plan, shortened, sizeof shortened, nullptr));
  EXPECT_EQ(std::string(shortened), std::string(text.data()).substr(0, 8));
  DeviceArray<std::uint16_t> back(n), summed(n);
  symmcomm_tensor_t const back_t = symmcomm_tensor_bf16(back.get(), n);
  symmcomm_tensor_t const summed_t = symmcomm_tensor_bf16(summed.get(), n);
  ASSERT_OK(symmcomm_dequantize(&g, &back_t, nullptr));
  ASSERT_OK(symmcomm_reduce_scatter(comm, &q, &summed_t, nullptr, nullptr, &plan));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // One rank: the gathered tensor is the tensor, and its "sum" is its dequantization (the
  // reduction multiplies by s * (1/g) instead of s / g: equal up to a bf16 ulp).
  auto const a = back.download();
  auto const b = summed.download();
  // Exactly what the host computes: quantization with the computed global scale (data, block
  // scales, scale), gathered unchanged, and its dequantization.
  std::vector<float> as_float(n);
  for (std::size_t i = 0; i < n; ++i) as_float[i] = symmcomm::bf16_bits_to_float(host[i]);
  auto const want = symmcomm::test::HostNvfp4::quantize(as_float);
  EXPECT_EQ(gdata.download(), want.data);
  EXPECT_EQ(gscales.download(), want.scales);
  EXPECT_EQ(gglobal.download()[0], want.global_scale);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_LE(std::abs(static_cast<int>(a[i]) - static_cast<int>(b[i])), 1) << i;
    ASSERT_EQ(a[i], symmcomm::float_to_bf16_bits(static_cast<float>(want.value(i)))) << i;
  }
  // all_gatherv with one rank's count: the same bytes as the all-gather; counts NULL refused.
  {
    DeviceArray<std::uint8_t> vdata(n / 2), vscales(n / 16);
    DeviceArray<float> vglobal(1);
    symmcomm_tensor_t const v = symmcomm_tensor_nvfp4(vdata.get(), vscales.get(), vglobal.get(), n);
    std::size_t const counts[1] = {n};
    ASSERT_OK(symmcomm_all_gatherv(comm, &q, &v, counts, nullptr, nullptr, &plan));
    DeviceArray<std::uint16_t> vb(n), rsv(n);
    symmcomm_tensor_t const vb_t = symmcomm_tensor_bf16(vb.get(), n);
    ASSERT_OK(symmcomm_all_gatherv(comm, &x, &vb_t, counts, nullptr, nullptr, &plan));
    // reduce_scatterv from C: one rank's shard of an NVFP4 sum is the dequantized tensor.
    symmcomm_tensor_t const rsv_t = symmcomm_tensor_bf16(rsv.get(), n);
    ASSERT_OK(symmcomm_reduce_scatterv(comm, &q, &rsv_t, counts, nullptr, nullptr, &plan));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(vdata.download(), want.data);
    EXPECT_EQ(vscales.download(), want.scales);
    EXPECT_EQ(vglobal.download()[0], want.global_scale);
    EXPECT_EQ(vb.download(), host);
    auto const by_v = rsv.download(), by_rs = summed.download();
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_LE(std::abs(static_cast<int>(by_v[i]) - static_cast<int>(by_rs[i])), 1) << i;
    }
    EXPECT_EQ(symmcomm_all_gatherv(comm, &q, &v, nullptr, nullptr, nullptr, &plan),
              SYMMCOMM_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(symmcomm_last_error()).find("counts is NULL"), std::string::npos);
  }
  // Swizzled block scales, rows of 64 elements: the gathered scales land where the host's
  // swizzle puts them.
  {
    std::size_t const row = 64, rows = n / row;
    std::size_t const sw_bytes = symmcomm::swizzled_scale_bytes(rows, row / 16);
    DeviceArray<std::uint8_t> sdata(n / 2), sscales(sw_bytes);
    DeviceArray<float> sglobal(1);
    symmcomm_tensor_t const s =
        symmcomm_tensor_nvfp4_swizzled(sdata.get(), sscales.get(), sglobal.get(), n, row);
    ASSERT_OK(symmcomm_all_gather(comm, &q, &s, nullptr, nullptr, &plan));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<std::uint8_t> expected(sw_bytes);
    symmcomm::swizzle_scales_host(want.scales.data(), rows, row / 16, expected.data());
    EXPECT_EQ(sscales.download(), expected);
    EXPECT_EQ(sdata.download(), want.data);
  }
  // FP8 through the same entry points: quantize, gather, reduce into fp32, dequantize.
  {
    DeviceArray<std::uint8_t> f(n), fg(n);
    DeviceArray<float> fs(1), fgs(1), sum32(n);
    DeviceArray<std::uint16_t> fb(n);
    symmcomm_tensor_t const f8 = symmcomm_tensor_fp8(SYMMCOMM_DTYPE_FP8_E4M3, f.get(), fs.get(), n);
    symmcomm_tensor_t const g8 =
        symmcomm_tensor_fp8(SYMMCOMM_DTYPE_FP8_E4M3, fg.get(), fgs.get(), n);
    symmcomm_tensor_t const s32 = symmcomm_tensor_fp32(sum32.get(), n);
    symmcomm_tensor_t const fb_t = symmcomm_tensor_bf16(fb.get(), n);
    ASSERT_OK(symmcomm_quantize(&x, &f8, 1, nullptr));
    ASSERT_OK(symmcomm_all_gather(comm, &f8, &g8, nullptr, nullptr, &plan));
    ASSERT_OK(symmcomm_reduce_scatter(comm, &f8, &s32, nullptr, nullptr, &plan));
    ASSERT_OK(symmcomm_dequantize(&g8, &fb_t, nullptr));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(fg.download(), f.download());
    auto const sums = sum32.download();
    auto const deq = fb.download();
    for (std::size_t i = 0; i < n; ++i) {
      // The reduction multiplies by its scale as the dequantization does, or within a bf16 ulp.
      ASSERT_LE(std::abs(static_cast<int>(symmcomm::float_to_bf16_bits(sums[i])) -
                         static_cast<int>(deq[i])),
                1)
          << i;
    }
    // A gather between FP8 formats is refused by name.
    symmcomm_tensor_t const e5 =
        symmcomm_tensor_fp8(SYMMCOMM_DTYPE_FP8_E5M2, fg.get(), fgs.get(), n);
    EXPECT_EQ(symmcomm_all_gather(comm, &f8, &e5, nullptr, nullptr, &plan),
              SYMMCOMM_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(symmcomm_last_error()).find("send is fp8e4m3, recv fp8e5m2"),
              std::string::npos)
        << symmcomm_last_error();
  }
  // Forcing a path the buffers cannot take is an error with its reason.
  symmcomm_options_t forced = SYMMCOMM_OPTIONS_INIT;
  forced.path = SYMMCOMM_PATH_LSA_KERNEL;
  EXPECT_EQ(symmcomm_all_gather(comm, &q, &g, &forced, nullptr, &plan),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(symmcomm_last_error()).find("lsa-kernel"), std::string::npos);

  // BF16 reduce-scatter through the ABI.
  DeviceArray<std::uint16_t> rs(n);
  symmcomm_tensor_t const rs_t = symmcomm_tensor_bf16(rs.get(), n);
  ASSERT_OK(symmcomm_reduce_scatter(comm, &x, &rs_t, nullptr, nullptr, &plan));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(rs.download(), host);

  // The PyTorch allocator entry points allocate from the pool: provenance says symmetric.
  ASSERT_OK(symmcomm_torch_set_pool(pool));
  void* t = symmcomm_torch_alloc(1 << 20, 0, nullptr);
  ASSERT_NE(t, nullptr) << symmcomm_last_error();
  ASSERT_OK(symmcomm_provenance(comm, t, 1 << 20, &sym, nullptr));
  EXPECT_EQ(sym, 1);
  EXPECT_EQ(symmcomm_torch_alloc(std::size_t{1} << 40, 0, nullptr), nullptr);  // no growth: OOM
  EXPECT_NE(std::string(symmcomm_last_error()).find("allow_growth"), std::string::npos);
  symmcomm_torch_free(t, 1 << 20, 0, nullptr);
  std::size_t live = 99;
  ASSERT_OK(symmcomm_pool_stats(pool, nullptr, nullptr, nullptr, &live));
  EXPECT_EQ(live, 4u);
  EXPECT_EQ(symmcomm_pool_free(pool, plain.get()), SYMMCOMM_ERROR_INVALID_ARGUMENT);
  ASSERT_OK(symmcomm_verify(comm, nullptr));
  for (void* p : {src, data, scales, global}) ASSERT_OK(symmcomm_pool_free(pool, p));
  ASSERT_OK(symmcomm_pool_destroy(pool));
  EXPECT_EQ(symmcomm_torch_alloc(64, 0, nullptr), nullptr);  // the pool was unset on destroy
  ASSERT_OK(symmcomm_comm_release(comm));
}

}  // namespace
