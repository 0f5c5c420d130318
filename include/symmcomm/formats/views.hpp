#pragma once
/// @file views.hpp
/// @brief Non-owning, trivially copyable views of device tensors in symmcomm's formats, and
/// validation helpers that throw LogicError naming the argument and the offending value.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "symmcomm/formats/bf16.hpp"
#include "symmcomm/formats/scale_layout.hpp"
#include "symmcomm/formats/traits.hpp"

namespace symmcomm {

/// @brief Bytes of the block scales of `count` NVFP4 elements in `layout` (Swizzled128x4: rows
/// of `row_elements`, padding included; 0 when row_elements is not a positive multiple of 16).
constexpr std::size_t nvfp4_scale_bytes(std::size_t count, ScaleLayout layout,
                                        std::size_t row_elements) noexcept {
  if (layout == ScaleLayout::Linear) return count / kNvfp4BlockSize;
  if (row_elements == 0 || row_elements % kNvfp4BlockSize != 0) return 0;
  return swizzled_scale_bytes(count / row_elements, row_elements / kNvfp4BlockSize);
}

/// @brief A read-only NVFP4 tensor (what the send side of a collective takes): as Nvfp4View with
/// const pointers. Every Nvfp4View converts to it.
struct ConstNvfp4View {
  const std::uint8_t* data = nullptr;              ///< packed e2m1 codes, count / 2 bytes
  const std::uint8_t* block_scales = nullptr;      ///< e4m3 block scales (scale_bytes() bytes)
  const float* global_scale = nullptr;             ///< the fp32 global scale
  std::size_t count = 0;                           ///< elements, a multiple of kNvfp4BlockSize
  ScaleLayout scale_layout = ScaleLayout::Linear;  ///< as Nvfp4View::scale_layout
  std::size_t row_elements = 0;                    ///< as Nvfp4View::row_elements

  /// @brief Bytes of packed data.
  constexpr std::size_t data_bytes() const noexcept { return count / 2; }
  /// @brief As Nvfp4View::scale_bytes.
  constexpr std::size_t scale_bytes() const noexcept {
    return nvfp4_scale_bytes(count, scale_layout, row_elements);
  }
  /// @brief DataType::Nvfp4.
  constexpr DataType dtype() const noexcept { return DataType::Nvfp4; }
  /// @brief As Nvfp4View::slice.
  ConstNvfp4View slice(std::size_t first, std::size_t n) const;
  /// @brief As Nvfp4View::rank_part.
  ConstNvfp4View rank_part(std::size_t rank, std::size_t ranks) const;
};

/// @brief A read-only FP8 tensor (send sides): as Fp8View with const pointers.
struct ConstFp8View {
  const std::uint8_t* data = nullptr;  ///< one-byte codes, count of them
  const float* scale = nullptr;        ///< the fp32 dequantization scale
  std::size_t count = 0;               ///< elements (= bytes)
  Fp8Format format = Fp8Format::E4M3;  ///< the codes' encoding

  /// @brief Bytes of codes (= count).
  constexpr std::size_t data_bytes() const noexcept { return count; }
  /// @brief The element format of `format`.
  constexpr DataType dtype() const noexcept { return fp8_type(format); }
};

/// @brief An NVFP4 tensor: packed e2m1 data (count/2 bytes), e4m3 block scales and a pointer to
/// the fp32 global scale, all in device memory. The block scales are linear (count/16 bytes,
/// element i's at byte i / 16) unless scale_layout says Swizzled128x4: then the tensor is rows
/// of `row_elements` elements (a multiple of 16, count whole rows) and its scales are in the
/// 128 x 4 tiles NVFP4 GEMMs read (scale_layout.hpp; scale_bytes() bytes, padding included,
/// 4-byte aligned). Swizzled scales are what an NVFP4 gather can write into its receive
/// tensor (all_gather, all_gatherv, quantize_all_gather); every other use takes linear ones.
struct Nvfp4View {
  std::uint8_t* data = nullptr;          ///< packed e2m1 codes, count / 2 bytes
  std::uint8_t* block_scales = nullptr;  ///< e4m3 block scales (scale_bytes() bytes)
  float* global_scale = nullptr;         ///< the fp32 global scale (a gathered tensor: per rank)
  std::size_t count = 0;                 ///< elements, a multiple of kNvfp4BlockSize
  ScaleLayout scale_layout = ScaleLayout::Linear;  ///< layout of block_scales
  std::size_t row_elements = 0;                    ///< elements per row, with Swizzled128x4

  /// @brief Bytes of packed data.
  constexpr std::size_t data_bytes() const noexcept { return count / 2; }
  /// @brief Bytes of block scales (swizzled: padding included; 0 for an unusable row length).
  constexpr std::size_t scale_bytes() const noexcept {
    return nvfp4_scale_bytes(count, scale_layout, row_elements);
  }
  /// @brief The same tensor with its block scales in the swizzled 128 x 4 layout of rows of
  /// `row` elements (checked where it is used: validate(), the gathers).
  constexpr Nvfp4View with_swizzled_scales(std::size_t row) const noexcept {
    return Nvfp4View{data, block_scales, global_scale, count, ScaleLayout::Swizzled128x4, row};
  }
  /// @brief The element format (as Fp8View::dtype()).
  constexpr DataType dtype() const noexcept { return DataType::Nvfp4; }
  /// @brief Elements [first, first + n) as a view sharing this tensor's global scale.
  /// @throws LogicError unless `first` and `n` are multiples of the block size (a slice inside
  /// a block would pair data with another block's scale) and the range lies inside the view.
  Nvfp4View slice(std::size_t first, std::size_t n) const;
  /// @brief Rank `rank`'s part of a tensor gathered from `ranks` ranks with equal counts (as
  /// all_gather fills it): its data and block scales, and its own global scale
  /// (global_scale + rank). Dequantize a gathered tensor part by part: a view applies its one
  /// global scale to all of it. @throws LogicError unless rank < ranks and the count splits
  /// into `ranks` parts of whole blocks.
  Nvfp4View rank_part(std::size_t rank, std::size_t ranks) const;
  /// @brief The same tensor, read-only (send sides take it).
  constexpr operator ConstNvfp4View() const noexcept {
    return ConstNvfp4View{data, block_scales, global_scale, count, scale_layout, row_elements};
  }
};

/// @brief An FP8 tensor: codes, a pointer to its fp32 dequantization scale, count and format.
struct Fp8View {
  std::uint8_t* data = nullptr;        ///< one-byte codes, count of them
  float* scale = nullptr;              ///< the fp32 dequantization scale (gathered: per rank)
  std::size_t count = 0;               ///< elements (= bytes)
  Fp8Format format = Fp8Format::E4M3;  ///< the codes' encoding

  /// @brief Bytes of codes (= count).
  constexpr std::size_t data_bytes() const noexcept { return count; }
  /// @brief The element format of `format`.
  constexpr DataType dtype() const noexcept { return fp8_type(format); }
  /// @brief Rank `rank`'s part of a tensor gathered from `ranks` ranks with equal counts: its
  /// codes and its own scale (scale + rank). @throws LogicError unless rank < ranks and the
  /// count splits into `ranks` equal parts.
  Fp8View rank_part(std::size_t rank, std::size_t ranks) const;
  /// @brief The same tensor, read-only (send sides take it).
  constexpr operator ConstFp8View() const noexcept {
    return ConstFp8View{data, scale, count, format};
  }
};

/// @brief A contiguous typed range of device memory. Span<T> converts to Span<const T>.
template <class T>
struct Span {
  T* data = nullptr;      ///< device pointer to the first element
  std::size_t count = 0;  ///< elements
  /// @brief Bytes of the range.
  constexpr std::size_t data_bytes() const noexcept { return count * sizeof(T); }
  /// @brief Elements [first, first + n) (unchecked: the caller keeps it inside the range).
  constexpr Span slice(std::size_t first, std::size_t n) const noexcept {
    return Span{data + first, n};
  }
  /// @brief The same range, read-only.
  template <class U, std::enable_if_t<std::is_same_v<U, T> && !std::is_const_v<U>, int> = 0>
  constexpr operator Span<const U>() const noexcept {
    return Span<const U>{data, count};
  }
};
/// @brief BF16 tensor view.
using Bf16Span = Span<bf16>;
/// @brief FP32 tensor view.
using Fp32Span = Span<float>;
/// @brief Read-only BF16 tensor view (send sides and inputs; a `const bf16*` fits it).
using ConstBf16Span = Span<const bf16>;
/// @brief Read-only FP32 tensor view.
using ConstFp32Span = Span<const float>;

// Views are values: copied into kernels' parameters and across threads, never owning.
static_assert(std::is_trivially_copyable_v<Nvfp4View> && std::is_trivially_copyable_v<Fp8View> &&
              std::is_trivially_copyable_v<Bf16Span> && std::is_trivially_copyable_v<Fp32Span> &&
              std::is_trivially_copyable_v<ConstNvfp4View> &&
              std::is_trivially_copyable_v<ConstFp8View> &&
              std::is_trivially_copyable_v<ConstBf16Span>);

/// @brief Alignment symmcomm's kernels need for vectorised data access (16-byte loads).
inline constexpr std::size_t kVectorAlignment = 16;

/// @brief Throws LogicError unless `view` (named `name` in the message) is well formed: count a
/// multiple of 16; data, block scales and global scale non-null when count > 0; data aligned to
/// `data_alignment` bytes; block scales linear (swizzled ones are for a gather's receive tensor
/// only: validate_gather_recv).
void validate(const ConstNvfp4View& view, std::string_view name,
              std::size_t data_alignment = kVectorAlignment);
/// @brief As validate(), for the receive tensor of an NVFP4 gather, which may hold swizzled
/// block scales: then row_elements a positive multiple of 16, count whole rows, block scales
/// 4-byte aligned.
void validate_gather_recv(const ConstNvfp4View& view, std::string_view name,
                          std::size_t data_alignment = kVectorAlignment);
/// @brief Throws LogicError unless `view` is well formed (non-null data and scale when count > 0,
/// aligned data).
void validate(const ConstFp8View& view, std::string_view name,
              std::size_t data_alignment = kVectorAlignment);
/// @brief Throws LogicError unless `span` is well formed (non-null data when count > 0, aligned).
void validate(const ConstBf16Span& span, std::string_view name,
              std::size_t data_alignment = kVectorAlignment);
/// @brief As above for fp32.
void validate(const ConstFp32Span& span, std::string_view name,
              std::size_t data_alignment = kVectorAlignment);

}  // namespace symmcomm
