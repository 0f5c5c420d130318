#pragma once
// Private: the swizzled NVFP4 block-scale layout (symmcomm/formats/scale_layout.hpp) cut into
// 16-byte chunks, the unit in which kernels write it (the codec's swizzle_nvfp4_scales and the
// LSA gather's swizzle segments; host/device, so tests/unit simulates them on the CPU).
//
// Chunk (tile t, 4-column group g, lane l) is bytes [16 l, 16 l + 16) of tile (t, g): the 4
// scales of columns 4g..4g+3 of rows 128 t + l + 32 k, k = 0..3. Chunks are numbered
// lane-fastest, so a warp stores one whole 512-byte tile. (One thread per (row, group) word
// would store 4 bytes per 32-byte sector, the rows of a group lying 16 bytes apart: slower than
// gathering linearly and swizzling after.)

#include <cstddef>
#include <cstdint>

#include "symmcomm/formats/host_device.hpp"
#include "symmcomm/formats/scale_layout.hpp"

namespace symmcomm::detail {

/// Chunks per tile (lanes: rows 0..31 of a tile, each with rows +32, +64, +96) and bytes per
/// chunk.
inline constexpr std::size_t kChunkLanes = 32;
inline constexpr std::size_t kChunkBytes = 16;

/// 4-column groups per row of a matrix with `cols` scale columns.
SYMMCOMM_HD constexpr std::size_t scale_groups(std::size_t cols) {
  return round_up_to(cols, kScaleTileCols) / kScaleTileCols;
}

/// Chunk `u` counted from row tile `first_tile`: its first row (k = 0), first column and byte
/// offset in the swizzled matrix.
struct SwizzleChunk {
  std::size_t row0 = 0, col0 = 0, offset = 0;
};
SYMMCOMM_HD constexpr SwizzleChunk swizzle_chunk(std::size_t u, std::size_t cols,
                                                 std::size_t first_tile) {
  std::size_t const groups = scale_groups(cols);
  std::size_t const lane = u % kChunkLanes, tile_group = u / kChunkLanes;
  std::size_t const t = first_tile + tile_group / groups, g = tile_group % groups;
  return SwizzleChunk{t * kScaleTileRows + lane, g * kScaleTileCols,
                      (t * groups + g) * (kScaleTileRows * kScaleTileCols) + lane * kChunkBytes};
}

/// The 4 scales of columns col0..col0+3 of one linear row (`row` points at its first scale) as
/// a little-endian word, columns past `cols` as 0; one 4-byte load when `word_loads` (cols a
/// multiple of 4 and the linear scales 4-byte aligned).
SYMMCOMM_HD std::uint32_t scale_word(const std::uint8_t* row, std::size_t col0, std::size_t cols,
                                     bool word_loads) {
  if (word_loads) return *reinterpret_cast<const std::uint32_t*>(row + col0);
  std::uint32_t word = 0;
  for (std::size_t j = 0; j < kScaleTileCols; ++j) {
    if (col0 + j < cols) word |= static_cast<std::uint32_t>(row[col0 + j]) << (8 * j);
  }
  return word;
}

/// The 4 words of chunk `c` of the whole swizzled matrix of linear [rows, cols] scales
/// (swizzle_nvfp4_scales: every chunk of the padded matrix, padding rows and columns as 0).
SYMMCOMM_HD void matrix_chunk_words(const std::uint8_t* linear, std::size_t rows, std::size_t cols,
                                    const SwizzleChunk& c, bool word_loads,
                                    std::uint32_t (&word)[4]) {
  for (std::size_t k = 0; k < 4; ++k) {
    std::size_t const row = c.row0 + kChunkLanes * k;
    word[k] = row < rows ? scale_word(linear + row * cols, c.col0, cols, word_loads) : 0;
  }
}

}  // namespace symmcomm::detail
