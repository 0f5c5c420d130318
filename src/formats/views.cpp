#include "symmcomm/formats/views.hpp"

#include <cstdint>

#include "symmcomm/error.hpp"

namespace symmcomm {
namespace {
bool aligned(const void* p, std::size_t alignment) {
  return alignment <= 1 || reinterpret_cast<std::uintptr_t>(p) % alignment == 0;
}
}  // namespace

namespace {
void check_slice(std::size_t first, std::size_t n, std::size_t count, ScaleLayout layout) {
  SYMMCOMM_EXPECTS(layout == ScaleLayout::Linear,
                   "Nvfp4View::slice / rank_part of a view with swizzled block scales: a range "
                   "of rows is not a range of the tiles (gather into linear scales to split)");
  SYMMCOMM_EXPECTS(first % kNvfp4BlockSize == 0 && n % kNvfp4BlockSize == 0,
                   "Nvfp4View::slice(" << first << ", " << n
                                       << "): first and n must be multiples of the NVFP4 block "
                                          "size "
                                       << kNvfp4BlockSize);
  SYMMCOMM_EXPECTS(first <= count && n <= count - first,
                   "Nvfp4View::slice(" << first << ", " << n << ") is outside the view of " << count
                                       << " elements");
}
}  // namespace

Nvfp4View Nvfp4View::slice(std::size_t first, std::size_t n) const {
  check_slice(first, n, count, scale_layout);
  return Nvfp4View{data + first / 2, block_scales + first / kNvfp4BlockSize, global_scale, n};
}

ConstNvfp4View ConstNvfp4View::slice(std::size_t first, std::size_t n) const {
  check_slice(first, n, count, scale_layout);
  return ConstNvfp4View{data + first / 2, block_scales + first / kNvfp4BlockSize, global_scale, n};
}

namespace {
// Elements of each rank's part; checks rank < ranks and equal parts of `multiple` elements.
std::size_t part_of(const char* what, std::size_t count, std::size_t rank, std::size_t ranks,
                    std::size_t multiple) {
  SYMMCOMM_EXPECTS(ranks >= 1 && rank < ranks, what << "::rank_part(" << rank << ", " << ranks
                                                    << "): rank outside 0.."
                                                    << (ranks >= 1 ? ranks - 1 : 0));
  SYMMCOMM_EXPECTS(count % ranks == 0 && (count / ranks) % multiple == 0,
                   what << "::rank_part(" << rank << ", " << ranks << "): " << count
                        << " elements are not " << ranks << " equal parts of multiples of "
                        << multiple);
  return count / ranks;
}
}  // namespace

Nvfp4View Nvfp4View::rank_part(std::size_t rank, std::size_t ranks) const {
  std::size_t const n = part_of("Nvfp4View", count, rank, ranks, kNvfp4BlockSize);
  Nvfp4View v = slice(rank * n, n);
  v.global_scale = global_scale + rank;
  return v;
}

ConstNvfp4View ConstNvfp4View::rank_part(std::size_t rank, std::size_t ranks) const {
  std::size_t const n = part_of("Nvfp4View", count, rank, ranks, kNvfp4BlockSize);
  ConstNvfp4View v = slice(rank * n, n);
  v.global_scale = global_scale + rank;
  return v;
}

Fp8View Fp8View::rank_part(std::size_t rank, std::size_t ranks) const {
  std::size_t const n = part_of("Fp8View", count, rank, ranks, 1);
  return Fp8View{data + rank * n, scale + rank, n, format};
}

void validate(const ConstNvfp4View& view, std::string_view name, std::size_t data_alignment) {
  SYMMCOMM_EXPECTS(view.scale_layout == ScaleLayout::Linear && view.row_elements == 0,
                   name << " has swizzled block scales (row_elements " << view.row_elements
                        << "): only the receive tensor of an NVFP4 gather (all_gather, "
                           "all_gatherv, quantize_all_gather) takes them");
  validate_gather_recv(view, name, data_alignment);
}

void validate_gather_recv(const ConstNvfp4View& view, std::string_view name,
                          std::size_t data_alignment) {
  SYMMCOMM_EXPECTS(
      view.scale_layout == ScaleLayout::Linear || view.scale_layout == ScaleLayout::Swizzled128x4,
      name << ".scale_layout " << static_cast<int>(view.scale_layout) << " is not a layout");
  if (view.scale_layout == ScaleLayout::Swizzled128x4) {
    std::size_t const row = view.row_elements;
    SYMMCOMM_EXPECTS(row > 0 && row % kNvfp4BlockSize == 0,
                     name << ".row_elements " << row << " is not a positive multiple of "
                          << kNvfp4BlockSize
                          << " (swizzled scales need whole 16-element blocks per row)");
    SYMMCOMM_EXPECTS(view.count % row == 0, name << ".count " << view.count
                                                 << " is not whole rows of row_elements " << row);
    SYMMCOMM_EXPECTS(aligned(view.block_scales, 4),
                     name << ".block_scales " << static_cast<const void*>(view.block_scales)
                          << " is not 4-byte aligned (swizzled scales are written 4 at a time)");
  } else {
    SYMMCOMM_EXPECTS(view.row_elements == 0, name << ".row_elements " << view.row_elements
                                                  << " is set but scale_layout is Linear");
  }
  SYMMCOMM_EXPECTS(view.count % kNvfp4BlockSize == 0,
                   name << ".count " << view.count << " is not a multiple of the NVFP4 block size "
                        << kNvfp4BlockSize);
  if (view.count == 0) return;
  SYMMCOMM_EXPECTS(view.data != nullptr, name << ".data is null (count " << view.count << ")");
  SYMMCOMM_EXPECTS(view.block_scales != nullptr,
                   name << ".block_scales is null (count " << view.count << ")");
  SYMMCOMM_EXPECTS(view.global_scale != nullptr,
                   name << ".global_scale is null: NVFP4 needs its per-tensor fp32 global scale");
  SYMMCOMM_EXPECTS(aligned(view.data, data_alignment),
                   name << ".data " << static_cast<const void*>(view.data) << " is not "
                        << data_alignment << "-byte aligned");
}

void validate(const ConstFp8View& view, std::string_view name, std::size_t data_alignment) {
  SYMMCOMM_EXPECTS(view.format == Fp8Format::E4M3 || view.format == Fp8Format::E5M2,
                   name << ".format " << static_cast<int>(view.format) << " is not E4M3 or E5M2");
  if (view.count == 0) return;
  SYMMCOMM_EXPECTS(view.data != nullptr, name << ".data is null (count " << view.count << ")");
  SYMMCOMM_EXPECTS(view.scale != nullptr,
                   name << ".scale is null: FP8 tensors need their per-tensor fp32 scale");
  SYMMCOMM_EXPECTS(aligned(view.data, data_alignment),
                   name << ".data " << static_cast<const void*>(view.data) << " is not "
                        << data_alignment << "-byte aligned");
}

template <class T>
static void validate_span(const Span<T>& span, std::string_view name, std::size_t alignment) {
  if (span.count == 0) return;
  SYMMCOMM_EXPECTS(span.data != nullptr, name << ".data is null (count " << span.count << ")");
  SYMMCOMM_EXPECTS(aligned(span.data, alignment),
                   name << ".data " << static_cast<const void*>(span.data) << " is not "
                        << alignment << "-byte aligned");
}

void validate(const ConstBf16Span& span, std::string_view name, std::size_t data_alignment) {
  validate_span(span, name, data_alignment);
}
void validate(const ConstFp32Span& span, std::string_view name, std::size_t data_alignment) {
  validate_span(span, name, data_alignment);
}

}  // namespace symmcomm
