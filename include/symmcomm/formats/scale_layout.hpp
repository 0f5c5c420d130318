#pragma once
/// @file scale_layout.hpp
/// @brief Where an NVFP4 block scale lives in the swizzled layout NVFP4 GEMMs read (cuBLASLt's
/// "1D block scaling factors layout" for 16-element blocks, as used by CUTLASS's sm100
/// block-scaled kernels, TensorRT-LLM and FlashInfer), and a host conversion from symmcomm's
/// linear layout.
///
/// A 2-D tensor of `rows` x `cols` elements (rows = tokens, cols a multiple of 16) has a
/// [rows, cols / 16] matrix of e4m3 block scales. Linear layout (symmcomm's default): row-major,
/// scale (r, c) at r * (cols / 16) + c. Swizzled layout:
/// - the scale matrix is padded to a multiple of 128 rows and of 4 scale columns (padding bytes
///   are 0), then cut into 128 x 4 tiles of 512 bytes, stored tile-row by tile-row;
/// - inside a tile, scale (i, j) (i < 128, j < 4) is at byte (i % 32) * 16 + (i / 32) * 4 + j.
///
/// These helpers are host/device functions; they define the layout once for kernels and tests.

#include <cstddef>
#include <cstdint>

#include "symmcomm/formats/host_device.hpp"

namespace symmcomm {

/// @brief Layout of an NVFP4 tensor's block scales (Nvfp4View::scale_layout).
enum class ScaleLayout : std::uint8_t {
  Linear,         ///< symmcomm's own: element i's block scale at byte i / 16
  Swizzled128x4,  ///< the 128 x 4 tiles NVFP4 GEMMs read (this file), rows of row_elements
};

/// @brief Rows per tile of the swizzled scale layout.
inline constexpr std::size_t kScaleTileRows = 128;
/// @brief Scale columns per tile of the swizzled scale layout.
inline constexpr std::size_t kScaleTileCols = 4;

/// @brief `x` rounded up to a multiple of `m` (m > 0).
SYMMCOMM_HD constexpr std::size_t round_up_to(std::size_t x, std::size_t m) {
  return (x + m - 1) / m * m;
}

/// @brief Bytes of the swizzled scales of a [rows, scale_cols] scale matrix, padding included.
SYMMCOMM_HD constexpr std::size_t swizzled_scale_bytes(std::size_t rows, std::size_t scale_cols) {
  return round_up_to(rows, kScaleTileRows) * round_up_to(scale_cols, kScaleTileCols);
}

/// @brief Byte offset of scale (row, col) in the swizzled layout of a matrix with `scale_cols`
/// scale columns (row may be any row below the padded row count).
SYMMCOMM_HD constexpr std::size_t swizzled_scale_offset(std::size_t row, std::size_t col,
                                                        std::size_t scale_cols) {
  std::size_t const tiles_per_row = round_up_to(scale_cols, kScaleTileCols) / kScaleTileCols;
  std::size_t const tile = (row / kScaleTileRows) * tiles_per_row + col / kScaleTileCols;
  std::size_t const i = row % kScaleTileRows;
  std::size_t const j = col % kScaleTileCols;
  return tile * (kScaleTileRows * kScaleTileCols) + (i % 32) * 16 + (i / 32) * 4 + j;
}

/// @brief The inverse of swizzled_scale_offset: the (row, col) of the scale stored at byte
/// `offset` of the swizzled layout (a padding byte where row >= rows or col >= scale_cols).
struct ScalePosition {
  std::size_t row = 0;  ///< the scale's row (a padding byte where >= the rows)
  std::size_t col = 0;  ///< the scale's column (a padding byte where >= scale_cols)
};
/// @brief Where the byte at `offset` of the swizzled layout of `scale_cols` scale columns
/// belongs (ScalePosition).
SYMMCOMM_HD constexpr ScalePosition swizzled_scale_position(std::size_t offset,
                                                            std::size_t scale_cols) {
  std::size_t const tiles_per_row = round_up_to(scale_cols, kScaleTileCols) / kScaleTileCols;
  std::size_t const tile = offset / (kScaleTileRows * kScaleTileCols);
  std::size_t const within = offset % (kScaleTileRows * kScaleTileCols);
  std::size_t const i = within / 16 + 32 * ((within % 16) / 4);
  return ScalePosition{(tile / tiles_per_row) * kScaleTileRows + i,
                       (tile % tiles_per_row) * kScaleTileCols + within % 4};
}

/// @brief Host conversion: the linear [rows, scale_cols] scales at `linear` into the swizzled
/// layout at `swizzled` (swizzled_scale_bytes(rows, scale_cols) bytes, padding set to 0).
inline void swizzle_scales_host(const std::uint8_t* linear, std::size_t rows,
                                std::size_t scale_cols, std::uint8_t* swizzled) {
  std::size_t const total = swizzled_scale_bytes(rows, scale_cols);
  for (std::size_t b = 0; b < total; ++b) swizzled[b] = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < scale_cols; ++c) {
      swizzled[swizzled_scale_offset(r, c, scale_cols)] = linear[r * scale_cols + c];
    }
  }
}

}  // namespace symmcomm
