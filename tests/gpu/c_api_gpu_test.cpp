// The C ABI on a GPU: a one-rank communicator from a unique id, the pool, provenance, codecs,
// collectives and the PyTorch allocator entry points.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "support/gpu_test.hpp"
#include "support/reference.hpp"
#include "symmcomm/c_api.h"
#include "symmcomm/formats/bf16.hpp"

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
  symmcomm_nvfp4_t const q{static_cast<std::uint8_t*>(data), static_cast<std::uint8_t*>(scales),
                           static_cast<float*>(global), n};
  ASSERT_OK(symmcomm_quantize_nvfp4(src, &q, 1, nullptr));
  DeviceArray<std::uint8_t> gdata(n / 2), gscales(n / 16);
  DeviceArray<float> gglobal(1);
  symmcomm_nvfp4_t const g{gdata.get(), gscales.get(), gglobal.get(), n};
  int taken = -1;
  ASSERT_OK(symmcomm_all_gather_nvfp4(comm, &q, &g, SYMMCOMM_PATH_AUTO, nullptr, &taken));
  // The receive side is plain device memory: no symmetric path can take it, whatever the
  // communicator supports (NCCL needs the peer-accessed side in a window on every version).
  EXPECT_EQ(taken, SYMMCOMM_TOOK_FALLBACK) << "symmetric support: " << symmetric;
  DeviceArray<std::uint16_t> back(n), summed(n);
  ASSERT_OK(symmcomm_dequantize_nvfp4(&g, back.get(), nullptr));
  ASSERT_OK(symmcomm_reduce_scatter_nvfp4_bf16(comm, &q, summed.get(), n, SYMMCOMM_PATH_AUTO,
                                               nullptr, &taken));
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
    symmcomm_nvfp4_t const v{vdata.get(), vscales.get(), vglobal.get(), n};
    std::size_t const counts[1] = {n};
    ASSERT_OK(
        symmcomm_all_gatherv_nvfp4(comm, &q, &v, counts, SYMMCOMM_PATH_AUTO, nullptr, &taken));
    DeviceArray<std::uint16_t> vb(n);
    ASSERT_OK(symmcomm_all_gatherv_bf16(comm, src, vb.get(), counts, SYMMCOMM_PATH_AUTO, nullptr,
                                        &taken));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(vdata.download(), want.data);
    EXPECT_EQ(vscales.download(), want.scales);
    EXPECT_EQ(vglobal.download()[0], want.global_scale);
    EXPECT_EQ(vb.download(), host);
    EXPECT_EQ(
        symmcomm_all_gatherv_nvfp4(comm, &q, &v, nullptr, SYMMCOMM_PATH_AUTO, nullptr, &taken),
        SYMMCOMM_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(symmcomm_last_error()).find("counts is NULL"), std::string::npos);
  }
  // Forcing a path the buffers cannot take is an error with its reason.
  EXPECT_EQ(symmcomm_all_gather_nvfp4(comm, &q, &g, SYMMCOMM_PATH_LSA_KERNEL, nullptr, &taken),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(symmcomm_last_error()).find("lsa-kernel"), std::string::npos);
  int const bogus_value = 9;  // what a C caller can pass
  symmcomm_path_t bogus_path;
  std::memcpy(&bogus_path, &bogus_value, sizeof bogus_path);
  EXPECT_EQ(symmcomm_all_gather_nvfp4(comm, &q, &g, bogus_path, nullptr, &taken),
            SYMMCOMM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(symmcomm_last_error()).find("path 9"), std::string::npos);

  // BF16 reduce-scatter through the ABI.
  DeviceArray<std::uint16_t> rs(n);
  ASSERT_OK(
      symmcomm_reduce_scatter_bf16(comm, src, rs.get(), n, SYMMCOMM_PATH_AUTO, nullptr, &taken));
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
