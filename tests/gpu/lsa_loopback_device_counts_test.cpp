// The one-launch device-count gather and BF16 reduce-scatter (lsa::device_counts_gather,
// lsa::device_counts_reduce: device_counts.hpp's LSA path) through the loopback peer policy:
// virtual ranks on one GPU against the host, with and without PDL.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/lsa.hpp"
#include "support/gpu_test.hpp"
#include "support/guarded.hpp"
#include "support/reference.hpp"
#include "support/tensors.hpp"
#include "symmcomm/formats/codecs.hpp"
#include "symmcomm/testing/loopback.hpp"
#include "testing/src/lsa_loopback.hpp"

namespace symmcomm::test {
namespace {

// Counts of virtual ranks as a test gives them (`raw`), clamped to 0..capacity, their prefix
// and total - what the kernels must write and use.
struct HostCounts {
  std::vector<std::int32_t> raw, clamped, prefix;
  std::int32_t total = 0;
  // Rank 0: 0 rows, rank 1: capacity, rank 2: `above` past it (clamped, overflow), the others
  // (r x step) mod capacity.
  static HostCounts edge_cases(int n, std::size_t capacity, int above, std::size_t step) {
    std::vector<std::int32_t> raw;
    auto const cap = static_cast<std::int32_t>(capacity);
    for (std::size_t r = 0; r < static_cast<std::size_t>(n); ++r) {
      raw.push_back(r == 0   ? 0
                    : r == 1 ? cap
                    : r == 2 ? cap + above
                             : static_cast<std::int32_t>((r * step) % capacity));
    }
    return HostCounts(std::move(raw), capacity);
  }
  HostCounts(std::vector<std::int32_t> given, std::size_t capacity) : raw(std::move(given)) {
    for (std::int32_t c : raw) {
      clamped.push_back(std::min<std::int32_t>(std::max<std::int32_t>(c, 0),
                                               static_cast<std::int32_t>(capacity)));
      prefix.push_back(total);
      total += clamped.back();
    }
  }
};

// Every virtual rank's count arrays on the device: its count (uploaded), the counts array and
// prefix the kernel writes, the overflow flag (0 first).
struct CountArrays {
  std::vector<std::unique_ptr<DeviceArray<std::int32_t>>> count, counts, offsets, overflow;
  explicit CountArrays(const std::vector<std::int32_t>& raw) {
    std::size_t const n = raw.size();
    for (std::size_t r = 0; r < n; ++r) {
      count.push_back(std::make_unique<DeviceArray<std::int32_t>>(1));
      counts.push_back(std::make_unique<DeviceArray<std::int32_t>>(n));
      offsets.push_back(std::make_unique<DeviceArray<std::int32_t>>(n));
      overflow.push_back(std::make_unique<DeviceArray<std::int32_t>>(1));
      count[r]->upload({raw[r]});
      overflow[r]->upload({0});
    }
  }
  // Rank r's arrays after a call with `h`'s counts: every raw count, the clamped prefix, the flag.
  void expect(std::size_t r, const HostCounts& h, bool over) const {
    EXPECT_EQ(counts[r]->download(), h.raw);
    EXPECT_EQ(offsets[r]->download(), h.prefix);
    EXPECT_EQ(overflow[r]->download()[0], over ? 1 : 0);
  }
};

// The one-launch device-count gather (lsa::device_counts_gather) over virtual ranks: every rank's
// count launched first (phase 1), then every rank's rows (phase 2), as loopback runs them. One
// NVFP4-shaped call (data rows, block-scale rows linear or swizzled, one float per rank) checked
// against the host: the counts array as written, the prefix, the overflow flag, the compact rows,
// the swizzled matrix with its padding rows and columns 0, and the floats.
void device_counts_gather_matches_the_host(int n, bool swizzled, bool pdl) {
  SCOPED_TRACE(std::to_string(n) + " ranks" + (swizzled ? ", swizzled" : "") +
               (pdl ? ", PDL" : ""));
  bool const previous = detail::lsa::programmatic_launch();
  detail::lsa::set_programmatic_launch(pdl);
  std::size_t const capacity = 37, row = 96;  // elements per row: 48 data bytes, 6 scales
  std::size_t const data_bytes = row / 2, cols = row / 16;
  auto const un = static_cast<std::size_t>(n);
  HostCounts const h = HostCounts::edge_cases(n, capacity, 5, 11);
  CountArrays const arrays(h.raw);
  const std::vector<std::int32_t>& clamped = h.clamped;
  std::int32_t const total = h.total;
  bool const over = n > 2;
  std::size_t const scale_bytes =
      swizzled ? swizzled_scale_bytes(un * capacity, cols) : un * capacity * cols;
  std::vector<std::unique_ptr<DeviceArray<std::uint8_t>>> send_data, send_scales, recv_data,
      recv_scales;
  std::vector<std::unique_ptr<DeviceArray<float>>> send_global, recv_global;
  std::vector<std::vector<std::uint8_t>> host_data(un), host_scales(un);
  for (std::size_t r = 0; r < un; ++r) {
    host_data[r].resize(capacity * data_bytes);
    host_scales[r].resize(capacity * cols);
    for (std::size_t i = 0; i < host_data[r].size(); ++i) {
      host_data[r][i] = static_cast<std::uint8_t>(r * 31 + i * 7 + 1);
    }
    for (std::size_t i = 0; i < host_scales[r].size(); ++i) {
      host_scales[r][i] = static_cast<std::uint8_t>(r * 17 + i * 3 + 2);
    }
    send_data.push_back(std::make_unique<DeviceArray<std::uint8_t>>(capacity * data_bytes));
    send_scales.push_back(std::make_unique<DeviceArray<std::uint8_t>>(capacity * cols));
    send_global.push_back(std::make_unique<DeviceArray<float>>(1));
    recv_data.push_back(std::make_unique<DeviceArray<std::uint8_t>>(un * capacity * data_bytes));
    recv_scales.push_back(std::make_unique<DeviceArray<std::uint8_t>>(scale_bytes));
    recv_global.push_back(std::make_unique<DeviceArray<float>>(un));
    send_data[r]->upload(host_data[r]);
    send_scales[r]->upload(host_scales[r]);
    send_global[r]->upload({0.5f + static_cast<float>(r)});
  }
  for (int phase : {1, 2}) {
    for (int r = 0; r < n; ++r) {
      auto const i = static_cast<std::size_t>(r);
      detail::lsa::LoopbackPeers peers(r, n);
      for (std::size_t q = 0; q < un; ++q) {
        peers.base[0][q] = recv_data[q]->get();
        peers.base[1][q] = recv_scales[q]->get();
        peers.base[2][q] = arrays.counts[q]->get();
        peers.base[3][q] = recv_global[q]->get();
      }
      detail::lsa::DeviceCountsGatherArgs a;
      a.part[0] = {send_data[i]->get(), detail::lsa::SymRef{0, 0}, data_bytes, false};
      a.part[1] = {send_scales[i]->get(), detail::lsa::SymRef{1, 0}, cols, swizzled};
      a.parts = 2;
      a.count = arrays.count[i]->get();
      a.counts = detail::lsa::SymRef{2, 0};
      a.offsets = arrays.offsets[i]->get();
      a.overflow = arrays.overflow[i]->get();
      a.capacity = capacity;
      a.scale_src = send_global[i]->get();
      a.scale_dst = detail::lsa::SymRef{3, 0};
      a.phase = phase;
      a.grid_bytes = capacity * (data_bytes + cols);
      detail::lsa::device_counts_gather(peers, a, nullptr);
    }
  }
  SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
  detail::lsa::set_programmatic_launch(previous);
  // The host's compact rows.
  std::vector<std::uint8_t> want_data, want_scales;
  for (std::size_t r = 0; r < un; ++r) {
    auto const rows = static_cast<std::size_t>(clamped[r]);
    want_data.insert(want_data.end(), host_data[r].begin(),
                     host_data[r].begin() + static_cast<std::ptrdiff_t>(rows * data_bytes));
    want_scales.insert(want_scales.end(), host_scales[r].begin(),
                       host_scales[r].begin() + static_cast<std::ptrdiff_t>(rows * cols));
  }
  std::vector<std::uint8_t> want_swizzled(swizzled ? scale_bytes : 0);
  if (swizzled) {
    // Rows past the total are 0 up to the matrix's padded end (as the compaction leaves them).
    swizzle_scales_host(want_scales.data(), static_cast<std::size_t>(total), cols,
                        want_swizzled.data());
  }
  for (std::size_t r = 0; r < un; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    arrays.expect(r, h, over);
    auto const got_data = recv_data[r]->download();
    ASSERT_TRUE(std::equal(want_data.begin(), want_data.end(), got_data.begin()));
    auto const got_scales = recv_scales[r]->download();
    if (swizzled) {
      EXPECT_EQ(got_scales, want_swizzled);
    } else {
      ASSERT_TRUE(std::equal(want_scales.begin(), want_scales.end(), got_scales.begin()));
    }
    auto const floats = recv_global[r]->download();
    for (std::size_t q = 0; q < un; ++q) EXPECT_EQ(floats[q], 0.5f + static_cast<float>(q));
  }
}

TEST(LsaLoopbackDeviceCounts, DeviceCountGatherInOneLaunchMatchesTheHost) {
  SYMMCOMM_REQUIRE_GPU();
  for (int n : {2, 3, 4, 8}) {
    for (bool swizzled : {false, true}) {
      for (bool pdl : {false, true}) device_counts_gather_matches_the_host(n, swizzled, pdl);
    }
  }
}

// The one-launch BF16 device-count reduce-scatter (lsa::device_counts_reduce) over virtual ranks:
// counts first (phase 1), then sums (phase 2). Against the host: the counts array, the prefix,
// the overflow flag, this rank's rows summed in fp32 in rank order and rounded once (bit for
// bit), and out's rows past the count 0. `row` elements per row: a multiple of 8 takes 16-byte
// items, another row size the element path.
void device_counts_reduce_matches_the_host(int n, std::size_t row, bool pdl) {
  SCOPED_TRACE(std::to_string(n) + " ranks, rows of " + std::to_string(row) + (pdl ? ", PDL" : ""));
  bool const previous = detail::lsa::programmatic_launch();
  detail::lsa::set_programmatic_launch(pdl);
  std::size_t const capacity = 7;
  auto const un = static_cast<std::size_t>(n);
  std::size_t const room = un * capacity * row;  // each rank's send
  HostCounts const h = HostCounts::edge_cases(n, capacity, 3, 5);
  CountArrays const arrays(h.raw);
  const std::vector<std::int32_t>& clamped = h.clamped;
  const std::vector<std::int32_t>& prefix = h.prefix;
  std::vector<std::vector<std::uint16_t>> host(un);
  std::vector<std::unique_ptr<DeviceArray<std::uint16_t>>> send, out;
  for (std::size_t r = 0; r < un; ++r) {
    host[r] = to_bf16_bits(random_floats(room, 900 + static_cast<std::uint32_t>(r), 3.0f));
    send.push_back(std::make_unique<DeviceArray<std::uint16_t>>(room));
    out.push_back(std::make_unique<DeviceArray<std::uint16_t>>(capacity * row));
    send[r]->upload(host[r]);
    out[r]->upload(std::vector<std::uint16_t>(capacity * row, 0xABAB));
  }
  for (int phase : {1, 2}) {
    for (int r = 0; r < n; ++r) {
      auto const i = static_cast<std::size_t>(r);
      detail::lsa::LoopbackPeers peers(r, n);
      for (std::size_t q = 0; q < un; ++q) {
        peers.base[0][q] = arrays.counts[q]->get();
        peers.base[1][q] = send[q]->get();
      }
      detail::lsa::DeviceCountsReduceArgs a;
      a.count = arrays.count[i]->get();
      a.counts = detail::lsa::SymRef{0, 0};
      a.offsets = arrays.offsets[i]->get();
      a.overflow = arrays.overflow[i]->get();
      a.capacity = capacity;
      a.send = detail::lsa::SymRef{1, 0};
      a.row_elements = row;
      a.out = reinterpret_cast<bf16*>(out[i]->get());
      a.phase = phase;
      a.grid_bytes = capacity * row * sizeof(bf16);
      detail::lsa::device_counts_reduce(peers, a, nullptr);
    }
  }
  SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
  detail::lsa::set_programmatic_launch(previous);
  for (std::size_t r = 0; r < un; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    arrays.expect(r, h, true);  // rank 2's count is above capacity
    std::vector<std::uint16_t> want(capacity * row, 0);
    auto const first = static_cast<std::size_t>(prefix[r]) * row;
    for (std::size_t e = 0; e < static_cast<std::size_t>(clamped[r]) * row; ++e) {
      float acc = 0.0f;
      for (std::size_t q = 0; q < un; ++q) acc += bf16_bits_to_float(host[q][first + e]);
      want[e] = float_to_bf16_bits(acc);
    }
    EXPECT_EQ(out[r]->download(), want);
  }
}

TEST(LsaLoopbackDeviceCounts, DeviceCountBf16ReduceScatterInOneLaunchMatchesTheHost) {
  SYMMCOMM_REQUIRE_GPU();
  for (int n : {3, 4, 8}) {
    for (std::size_t row : {std::size_t{64}, std::size_t{12}}) {
      for (bool pdl : {false, true}) device_counts_reduce_matches_the_host(n, row, pdl);
    }
  }
}

// The one-launch NVFP4 -> BF16 device-count reduce-scatter over virtual ranks, as above: this
// rank's rows dequantized with each rank's block and global scales, summed in fp32 in rank order,
// rounded once; against the host's fp32 rank-order sum (within the device's fused multiply-adds
// and one bf16 rounding), out's rows past the count 0.
void device_counts_nvfp4_reduce_matches_the_host(int n, std::size_t row) {
  SCOPED_TRACE(std::to_string(n) + " ranks, nvfp4 rows of " + std::to_string(row));
  std::size_t const capacity = 7;
  auto const un = static_cast<std::size_t>(n);
  std::size_t const room = un * capacity * row;
  HostCounts const h = HostCounts::edge_cases(n, capacity, 3, 5);
  CountArrays const arrays(h.raw);
  std::vector<HostNvfp4> host;
  std::vector<std::unique_ptr<DeviceArray<std::uint8_t>>> data, scales;
  std::vector<std::unique_ptr<DeviceArray<float>>> global;
  std::vector<std::unique_ptr<DeviceArray<std::uint16_t>>> out;
  for (std::size_t r = 0; r < un; ++r) {
    host.push_back(HostNvfp4::quantize(
        random_floats(room, 950 + static_cast<std::uint32_t>(r), 1.0f + static_cast<float>(r))));
    data.push_back(std::make_unique<DeviceArray<std::uint8_t>>(room / 2));
    scales.push_back(std::make_unique<DeviceArray<std::uint8_t>>(room / 16));
    global.push_back(std::make_unique<DeviceArray<float>>(1));
    out.push_back(std::make_unique<DeviceArray<std::uint16_t>>(capacity * row));
    data[r]->upload(host[r].data);
    scales[r]->upload(host[r].scales);
    global[r]->upload({host[r].global_scale});
    out[r]->upload(std::vector<std::uint16_t>(capacity * row, 0xABAB));
  }
  for (int phase : {1, 2}) {
    for (int r = 0; r < n; ++r) {
      auto const i = static_cast<std::size_t>(r);
      detail::lsa::LoopbackPeers peers(r, n);
      for (std::size_t q = 0; q < un; ++q) {
        peers.base[0][q] = arrays.counts[q]->get();
        peers.base[1][q] = data[q]->get();
        peers.base[2][q] = scales[q]->get();
        peers.base[3][q] = global[q]->get();
      }
      detail::lsa::DeviceCountsReduceArgs a;
      a.type = DataType::Nvfp4;
      a.count = arrays.count[i]->get();
      a.counts = detail::lsa::SymRef{0, 0};
      a.offsets = arrays.offsets[i]->get();
      a.overflow = arrays.overflow[i]->get();
      a.capacity = capacity;
      a.send = detail::lsa::SymRef{1, 0};
      a.block_scales = detail::lsa::SymRef{2, 0};
      a.scale = detail::lsa::SymRef{3, 0};
      a.row_elements = row;
      a.out = reinterpret_cast<bf16*>(out[i]->get());
      a.phase = phase;
      a.grid_bytes = capacity * (row / 2 + row / 16);
      detail::lsa::device_counts_reduce(peers, a, nullptr);
    }
  }
  SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
  for (std::size_t r = 0; r < un; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    arrays.expect(r, h, true);
    auto const first = static_cast<std::size_t>(h.prefix[r]) * row;
    std::size_t const mine = static_cast<std::size_t>(h.clamped[r]) * row;
    std::vector<float> const want = reduce_like_kernel(host, first, mine);
    auto const got = out[r]->download();
    std::size_t bad = 0;
    for (std::size_t e = 0; e < mine; ++e) {
      // The device's fused multiply-adds (half an ulp a step) and one bf16 rounding.
      double const tol = static_cast<double>(fma_bound(host, first + e)) +
                         std::fabs(static_cast<double>(want[e])) / 256.0;
      if (!(std::fabs(static_cast<double>(bf16_bits_to_float(got[e])) - want[e]) <= tol)) ++bad;
    }
    EXPECT_EQ(bad, 0u) << "elements off the host's rank-order sum";
    for (std::size_t e = mine; e < got.size(); ++e) {
      ASSERT_EQ(got[e], 0u) << "element " << e << " past this rank's count is not 0";
    }
  }
}

TEST(LsaLoopbackDeviceCounts, DeviceCountNvfp4ReduceScatterInOneLaunchMatchesTheHost) {
  SYMMCOMM_REQUIRE_GPU();
  for (int n : {3, 4, 8}) {
    for (std::size_t row : {std::size_t{64}, std::size_t{16}}) {
      device_counts_nvfp4_reduce_matches_the_host(n, row);
    }
  }
}

}  // namespace
}  // namespace symmcomm::test
