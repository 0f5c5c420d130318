// swizzle_nvfp4_scales (symmcomm/formats/codecs.hpp): linear NVFP4 block scales into the
// 128 x 4 tiled layout NVFP4 GEMMs read (symmcomm/formats/scale_layout.hpp), one 16-byte chunk
// per thread.

#include <cstdint>

#include "core/cuda_utils.hpp"
#include "core/kernel_preload.hpp"
#include "core/launch.cuh"
#include "formats/scale_swizzle.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/codecs.hpp"
#include "symmcomm/formats/scale_layout.hpp"

namespace symmcomm {
namespace detail {
namespace {

// One thread per 16-byte chunk of the swizzled layout (formats/scale_swizzle.hpp), so a warp
// stores a whole 512-byte tile; `kWide`: the output is 16-byte aligned and each chunk is one
// store (one thread per output byte, with byte stores and a byte load per thread, was several
// times slower).
template <bool kWide>
__global__ void swizzle_scales_kernel(const std::uint8_t* __restrict__ linear, std::size_t rows,
                                      std::size_t scale_cols, std::size_t chunks,
                                      std::uint8_t* __restrict__ swizzled) {
  bool const word_loads = scale_cols % 4 == 0 && reinterpret_cast<std::uintptr_t>(linear) % 4 == 0;
  std::size_t const stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t u = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; u < chunks;
       u += stride) {
    SwizzleChunk const c = swizzle_chunk(u, scale_cols, 0);
    std::uint32_t word[4];
    matrix_chunk_words(linear, rows, scale_cols, c, word_loads, word);
    if constexpr (kWide) {
      *reinterpret_cast<uint4*>(swizzled + c.offset) =
          make_uint4(word[0], word[1], word[2], word[3]);
    } else {
      for (int k = 0; k < 4; ++k) {
        for (int j = 0; j < 4; ++j) {
          swizzled[c.offset + static_cast<std::size_t>(4 * k + j)] =
              static_cast<std::uint8_t>(word[k] >> (8 * j));
        }
      }
    }
  }
}

// Loaded with the rest of this module when a communicator is made (core/kernel_preload.hpp).
[[maybe_unused]] const bool kModuleRegistered = register_kernel_module(
    reinterpret_cast<const void*>(&swizzle_scales_kernel<true>), "formats/scale_swizzle.cu");

}  // namespace
}  // namespace detail

void swizzle_nvfp4_scales(const std::uint8_t* linear, std::size_t rows, std::size_t scale_cols,
                          std::uint8_t* swizzled, cudaStream_t stream) {
  std::size_t const in = rows * scale_cols;
  std::size_t const out = swizzled_scale_bytes(rows, scale_cols);
  SYMMCOMM_EXPECTS(in == 0 || linear != nullptr,
                   "swizzle_nvfp4_scales: linear is null but holds " << in << " scales");
  SYMMCOMM_EXPECTS(out == 0 || swizzled != nullptr,
                   "swizzle_nvfp4_scales: swizzled is null but needs " << out << " bytes");
  auto const a = reinterpret_cast<std::uintptr_t>(linear);
  auto const b = reinterpret_cast<std::uintptr_t>(swizzled);
  SYMMCOMM_EXPECTS(in == 0 || out == 0 || a + in <= b || b + out <= a,
                   "swizzle_nvfp4_scales: linear ["
                       << static_cast<const void*>(linear) << ", +" << in << ") overlaps swizzled ["
                       << static_cast<const void*>(swizzled) << ", +" << out << ")");
  if (out == 0) return;
  detail::require_cuda_device("swizzle_nvfp4_scales");   // after the argument checks
  std::size_t const chunks = out / detail::kChunkBytes;  // out is a multiple of 512
  if (b % 16 == 0) {
    detail::swizzle_scales_kernel<true>
        <<<detail::grid_for(chunks), detail::kThreadsPerCta, 0, stream>>>(linear, rows, scale_cols,
                                                                          chunks, swizzled);
  } else {
    detail::swizzle_scales_kernel<false>
        <<<detail::grid_for(chunks), detail::kThreadsPerCta, 0, stream>>>(linear, rows, scale_cols,
                                                                          chunks, swizzled);
  }
  SYMMCOMM_CHECK_LAUNCH();
}

}  // namespace symmcomm
