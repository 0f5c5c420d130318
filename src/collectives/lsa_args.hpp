#pragma once
// Private: the launch arguments of symmcomm's LSA kernels, built in one place for production
// (peers' NCCL windows: offsets inside the windows) and loopback (virtual ranks on one GPU:
// offsets from each view's own pointer), so the two differ only in where their bases lie.

#include <algorithm>
#include <cstddef>
#include <vector>

#include "kernels/lsa.hpp"
#include "scale_swizzle.hpp"
#include "symmcomm/formats/nvfp4.hpp"
#include "symmcomm/formats/traits.hpp"

namespace symmcomm::detail {

/// Where a quantized tensor lies in its three LSA slots: the byte offset of its element 0 in
/// slot 0 (data), slot 1 (block scales, NVFP4) and of its first scale float in slot 2.
struct QuantizedBases {
  std::size_t data = 0;
  std::size_t block_scales = 0;
  std::size_t scale = 0;
};

/// Bytes per rank of one gathered tensor. Held inline up to kInline ranks, so that building a
/// call's parts allocates nothing at the rank counts an LSA team has in practice; on the heap
/// beyond.
class RankSizes {
 public:
  static constexpr std::size_t kInline = 8;

  RankSizes() = default;
  /// `ranks` entries of `each`.
  RankSizes(std::size_t ranks, std::size_t each) : n_(ranks) {
    if (n_ > kInline) {
      heap_.assign(n_, each);
    } else {
      std::fill_n(inline_, n_, each);
    }
  }
  /// A copy of `sizes` (tests, the loopback runs).
  RankSizes(const std::vector<std::size_t>& sizes) : RankSizes(sizes.size(), 0) {  // NOLINT
    for (std::size_t r = 0; r < n_; ++r) data()[r] = sizes[r];
  }

  std::size_t size() const noexcept { return n_; }
  std::size_t operator[](std::size_t r) const noexcept { return data()[r]; }
  std::size_t& operator[](std::size_t r) noexcept { return data()[r]; }
  const std::size_t* begin() const noexcept { return data(); }
  const std::size_t* end() const noexcept { return data() + n_; }

 private:
  const std::size_t* data() const noexcept { return n_ > kInline ? heap_.data() : inline_; }
  std::size_t* data() noexcept { return n_ > kInline ? heap_.data() : inline_; }

  std::size_t n_ = 0;
  std::size_t inline_[kInline] = {};
  std::vector<std::size_t> heap_;
};

/// One tensor of a gather: bytes[r] bytes from rank r, laid out rank after rank in `recv`
/// (named in plans and messages by `send_name` / `recv_name`); `swizzle` for NVFP4 block scales
/// written in the GEMMs' layout (then every rank writes into one matrix). The executors' and the
/// loopback runs' one description of a gathered tensor, from which the LSA launch is built.
struct GatherPart {
  const char* send_name = "send";
  const void* send = nullptr;  ///< this rank's bytes
  const char* recv_name = "recv";
  void* recv = nullptr;
  RankSizes bytes;  ///< per rank
  const SwizzledScales* swizzle = nullptr;
};

/// The gather launch of `rank` of `ranks` over `parts` (slot i = parts[i], whose receive tensor
/// starts `base[i]` bytes into the slot).
inline lsa::GatherArgs gather_args(const std::vector<GatherPart>& parts,
                                   const std::vector<std::size_t>& base, std::size_t rank,
                                   std::size_t ranks) {
  lsa::GatherArgs args;
  args.segments = static_cast<int>(parts.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const RankSizes& bytes = parts[i].bytes;
    std::size_t displacement = 0;
    for (std::size_t r = 0; r < rank; ++r) displacement += bytes[r];
    for (std::size_t b : bytes) total += b;
    lsa::GatherSegment& seg = args.segment[i];
    seg.src = parts[i].send;
    seg.dst = lsa::SymRef{static_cast<int>(i), base[i] + displacement};
    seg.bytes = bytes[rank];
    if (parts[i].swizzle != nullptr) {
      seg.dst = lsa::SymRef{static_cast<int>(i), base[i]};
      set_swizzle(*parts[i].swizzle, rank, ranks, seg);
    }
  }
  args.grid_bytes = total / ranks;
  return args;
}

/// Bytes of `elements` quantized elements of `type` (NVFP4 packs two per byte).
constexpr std::size_t quantized_data_bytes(DataType type, std::size_t elements) {
  return type == DataType::Nvfp4 ? elements / 2 : elements;
}

/// The one-shot reduce of the shard of `count` elements that starts `first` elements into
/// every rank's send tensor at `base`; `grid_count` fixes the grid (the same on every rank).
inline lsa::ReduceArgs reduce_args(DataType type, const QuantizedBases& base, std::size_t first,
                                   std::size_t count, std::size_t grid_count) {
  lsa::ReduceArgs a;
  a.type = type;
  a.data = lsa::SymRef{0, base.data + quantized_data_bytes(type, first)};
  if (type == DataType::Nvfp4) {
    a.block_scales = lsa::SymRef{1, base.block_scales + first / kNvfp4BlockSize};
  }
  a.scale = lsa::SymRef{2, base.scale};
  a.count = count;
  a.grid_count = grid_count;
  return a;
}

/// The fused quantize + gather of `rank` of `ranks`: `count` elements at `src` quantized with
/// the scale at `scale` land `first` elements into every rank's receive tensor at `base`, and
/// the scale's value in float `rank` of its scale slot; swizzled block scales where `swizzle`.
inline lsa::QuantizeGatherArgs quantize_gather_args(DataType type, const bf16* src,
                                                    const float* scale, std::size_t count,
                                                    std::size_t first, std::size_t grid_count,
                                                    const QuantizedBases& base,
                                                    const SwizzledScales* swizzle, std::size_t rank,
                                                    std::size_t ranks) {
  lsa::QuantizeGatherArgs a;
  a.type = type;
  a.src = src;
  a.scale = scale;
  a.count = count;
  a.grid_count = grid_count;
  a.data = lsa::SymRef{0, base.data + quantized_data_bytes(type, first)};
  if (type == DataType::Nvfp4) {
    a.block_scales = lsa::SymRef{1, base.block_scales + first / kNvfp4BlockSize};
    if (swizzle != nullptr) {
      a.block_scales = lsa::SymRef{1, base.block_scales};
      set_swizzle(*swizzle, rank, ranks, a);
    }
  }
  a.scale_dst = lsa::SymRef{2, base.scale + rank * sizeof(float)};
  return a;
}

}  // namespace symmcomm::detail
