// The device-count gather's compaction (compact.hpp).

#include "compact.hpp"

#include <algorithm>

#include "core/kernel_preload.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/scale_layout.hpp"

namespace symmcomm::detail::compact {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxGrid = 1024;

__global__ void __launch_bounds__(kThreads) compact_kernel(const __grid_constant__ Args a) {
  __shared__ std::int32_t count[kMaxRanks];
  __shared__ std::int32_t offset[kMaxRanks];
  if (threadIdx.x == 0) {
    std::int32_t sum = 0;
    bool over = false;
    auto const cap = static_cast<std::int32_t>(a.capacity);
    for (int q = 0; q < a.ranks; ++q) {
      std::int32_t c = a.counts[q];
      if (c < 0 || c > cap) {
        over = true;
        c = c < 0 ? 0 : cap;
      }
      count[q] = c;
      offset[q] = sum;
      sum += c;
    }
    if (blockIdx.x == 0) {
      for (int q = 0; q < a.ranks; ++q) a.offsets[q] = offset[q];
      if (over && a.overflow != nullptr) *a.overflow = 1;
    }
  }
  __syncthreads();
  std::size_t const rows = static_cast<std::size_t>(a.ranks) * a.capacity;
  for (std::size_t row = blockIdx.x; row < rows; row += gridDim.x) {
    auto const q = static_cast<int>(row / a.capacity);
    auto const r = static_cast<std::int32_t>(row % a.capacity);
    if (r >= count[q]) continue;
    std::size_t const compact = static_cast<std::size_t>(offset[q]) + static_cast<std::size_t>(r);
    std::size_t const from = a.expand ? compact : row;
    std::size_t const to = a.expand ? row : compact;
    for (int p = 0; p < a.parts; ++p) {
      const Part& part = a.part[p];
      const std::uint8_t* src = part.src + from * part.row_bytes;
      if (part.swizzled) {
        // Padding columns (to a multiple of 4) are written as 0.
        for (std::size_t c = threadIdx.x; c < round_up_to(part.row_bytes, kScaleTileCols);
             c += blockDim.x) {
          part.dst[swizzled_scale_offset(to, c, part.row_bytes)] =
              c < part.row_bytes ? src[c] : std::uint8_t{0};
        }
        continue;
      }
      std::uint8_t* dst = part.dst + to * part.row_bytes;
      bool const wide = ((reinterpret_cast<std::uintptr_t>(src) |
                          reinterpret_cast<std::uintptr_t>(dst) | part.row_bytes) &
                         15u) == 0;
      if (wide) {
        auto const* s = reinterpret_cast<const uint4*>(src);
        auto* d = reinterpret_cast<uint4*>(dst);
        for (std::size_t i = threadIdx.x; i < part.row_bytes / 16; i += blockDim.x) d[i] = s[i];
      } else {
        for (std::size_t i = threadIdx.x; i < part.row_bytes; i += blockDim.x) dst[i] = src[i];
      }
    }
  }
  // Swizzled scales: the rows past the total count, to the matrix's padded end, are 0.
  std::size_t const total =
      static_cast<std::size_t>(offset[a.ranks - 1]) + static_cast<std::size_t>(count[a.ranks - 1]);
  std::size_t const padded = round_up_to(rows, kScaleTileRows);
  for (int p = 0; p < a.parts; ++p) {
    const Part& part = a.part[p];
    if (!part.swizzled) continue;
    for (std::size_t row = total + blockIdx.x; row < padded; row += gridDim.x) {
      for (std::size_t c = threadIdx.x; c < round_up_to(part.row_bytes, kScaleTileCols);
           c += blockDim.x) {
        part.dst[swizzled_scale_offset(row, c, part.row_bytes)] = 0;
      }
    }
  }
}

// Loaded with the rest of this module when a communicator is made (core/kernel_preload.hpp).
[[maybe_unused]] const bool kModuleRegistered =
    register_kernel_module(reinterpret_cast<const void*>(&compact_kernel), "kernels/compact.cu");

}  // namespace

void compact_rows(const Args& a, cudaStream_t stream) {
  SYMMCOMM_EXPECTS(a.ranks >= 1 && a.ranks <= kMaxRanks,
                   "compact: " << a.ranks << " ranks, outside 1.." << kMaxRanks);
  SYMMCOMM_EXPECTS(a.parts >= 1 && a.parts <= kMaxParts, "compact: " << a.parts << " parts");
  SYMMCOMM_EXPECTS(a.counts != nullptr && a.offsets != nullptr, "compact: counts or offsets null");
  for (int p = 0; p < a.parts; ++p) {
    SYMMCOMM_EXPECTS(!(a.expand && a.part[p].swizzled),
                     "compact: part " << p << " is swizzled; only gathers write swizzled scales");
  }
  std::size_t const rows = static_cast<std::size_t>(a.ranks) * a.capacity;
  auto const grid =
      static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(rows, kMaxGrid)));
  compact_kernel<<<grid, kThreads, 0, stream>>>(a);
  SYMMCOMM_CHECK_LAUNCH();
}

}  // namespace symmcomm::detail::compact
