#pragma once
// The specification of MoE dispatch and combine by expert (symmcomm/collectives/moe.hpp) on the
// host, for the tests: routings of every rank made from a seed (every rank of a multi-rank test
// makes the same), where each pair lands, and what each rank must hold after a dispatch and a
// combine. The same rules as Python's symmcomm.moe.reference_placement.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "symmcomm/collectives/moe.hpp"
#include "symmcomm/formats/bf16.hpp"
#include "symmcomm/formats/fp8.hpp"
#include "symmcomm/formats/nvfp4.hpp"
#include "symmcomm/formats/scale_layout.hpp"

namespace symmcomm::test {

/// The group's shape as the tests use it (capacity resolved).
struct MoeCase {
  int ranks = 2, experts = 8, top_k = 3, hidden = 128, max_tokens = 37, capacity = 0;
  DataType wire = DataType::Nvfp4;  ///< the rows' format: Nvfp4, Fp8E4M3 or Bf16
  bool in_place = false;            ///< the combine reads the expert outputs in place
  int local() const { return experts / ranks; }
  int pairs() const { return max_tokens * top_k; }
  int cap() const { return capacity > 0 ? capacity : ranks * max_tokens; }
  bool bf16_wire() const { return wire == DataType::Bf16; }
  bool fp8_wire() const { return wire == DataType::Fp8E4M3; }
  std::size_t row_bytes() const {
    auto const h = static_cast<std::size_t>(hidden);
    return bf16_wire() ? 2 * h : (fp8_wire() ? h : h / 2);
  }
  /// Scales per token: one e4m3 byte per 16 elements (NVFP4), one float per 128 (FP8), none.
  std::size_t scale_cols() const {
    auto const h = static_cast<std::size_t>(hidden);
    return bf16_wire() ? 0 : (fp8_wire() ? h / 128 : h / 16);
  }
  std::size_t scale_bytes() const { return fp8_wire() ? 4 : 1; }  ///< bytes of one scale
  /// FP8: rows of an expert's column-major scale matrix (capacity rounded up to 4).
  std::size_t scale_rows() const { return (static_cast<std::size_t>(cap()) + 3) / 4 * 4; }
  std::size_t expert_scale_bytes() const {
    if (bf16_wire()) return 0;
    if (fp8_wire()) return scale_cols() * scale_rows() * 4;
    return swizzled_scale_bytes(static_cast<std::size_t>(cap()), scale_cols());
  }
  /// Where row m's scale k lies in its expert's scales (bytes): FP8 column-major, NVFP4 swizzled.
  std::size_t scale_offset(std::size_t m, std::size_t k) const {
    return fp8_wire() ? (k * scale_rows() + m) * 4 : swizzled_scale_offset(m, k, scale_cols());
  }
  MoeConfig config() const {
    MoeConfig c;
    c.num_experts = experts;
    c.top_k = top_k;
    c.hidden = hidden;
    c.max_tokens_per_rank = max_tokens;
    c.capacity = capacity;
    c.wire = wire;
    c.combine_in_place = in_place;
    return c;
  }
};

/// How a routing is drawn.
enum class MoeRoutingKind {
  Random,  ///< distinct random experts per token
  Hot,     ///< every token's first slot on expert 1 (past capacity when it is small)
  Holes,   ///< random, with -1 slots and experts of rank 0 never chosen
  BadId,   ///< random, one id past the last expert on rank 1
};

/// One rank's tokens and routing.
struct MoeRankInput {
  int num_tokens = 0;
  std::vector<std::int32_t> idx;     ///< [max_tokens][top_k]
  std::vector<float> weights;        ///< [max_tokens][top_k]
  std::vector<std::uint8_t> data;    ///< [max_tokens][row_bytes]
  std::vector<std::uint8_t> scales;  ///< [max_tokens][scale_cols x scale_bytes], linear
  float global_scale = 0.5f;
  std::vector<std::uint16_t> bf16;  ///< [max_tokens][hidden] bits, when the tokens are BF16
};

/// For a BF16 wire: every rank's tokens BF16 (random, from `seed`), its data their bytes (what a
/// dispatch places), no block scales, no global scale (0: what the group reports).
inline void moe_use_bf16_wire(const MoeCase& c, std::vector<MoeRankInput>& in, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (MoeRankInput& x : in) {
    x.global_scale = 0.0f;
    x.bf16.resize(static_cast<std::size_t>(c.max_tokens) * c.hidden);
    for (auto& b : x.bf16) b = float_to_bf16_bits(normal(rng));
    x.data.resize(x.bf16.size() * 2);
    std::memcpy(x.data.data(), x.bf16.data(), x.data.size());
    x.scales.clear();
  }
}

/// For an FP8 wire: every rank's tokens BF16 (random, from `seed`, a few blocks all zero), its
/// data and scales their per-128-element e4m3 quantization as fp8_quantize_block computes it
/// (scales as float bytes): what a dispatch must place. No global scale (0).
inline void moe_use_fp8_wire(const MoeCase& c, std::vector<MoeRankInput>& in, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (MoeRankInput& x : in) {
    x.global_scale = 0.0f;
    x.bf16.resize(static_cast<std::size_t>(c.max_tokens) * c.hidden);
    for (auto& b : x.bf16) {
      float const v = normal(rng);
      b = float_to_bf16_bits(rng() % 8 == 0 ? 300.0f * v : v);  // blocks of unlike ranges
    }
    std::size_t const blocks = x.bf16.size() / kFp8BlockSize;
    x.data.resize(x.bf16.size());
    x.scales.resize(blocks * 4);
    for (std::size_t blk = 0; blk < blocks; ++blk) {
      float v[kFp8BlockSize];
      bool const zero = blk % 7 == 3;  // a block of zeros: scale 1, codes 0
      for (int k = 0; k < kFp8BlockSize; ++k) {
        if (zero) x.bf16[blk * kFp8BlockSize + k] = 0;
        v[k] = bf16_bits_to_float(x.bf16[blk * kFp8BlockSize + k]);
      }
      float const scale = fp8_quantize_block(v, kFp8BlockSize, &x.data[blk * kFp8BlockSize]);
      std::memcpy(&x.scales[blk * 4], &scale, 4);
    }
  }
}

/// Rank `rank`'s placed bytes that differ from the specification: for every row below its
/// expert's count, its data (`rows`: [L][capacity][row_bytes]), its scales at their places
/// (`scales`: [L][expert_scale_bytes]) and, where given, its origin ([L][capacity]).
inline long moe_placed_bytes_wrong(const MoeCase& c, const std::vector<MoeRankInput>& in,
                                   const std::vector<std::vector<std::int32_t>>& placed,
                                   const std::vector<std::uint8_t>& rows,
                                   const std::vector<std::uint8_t>& scales,
                                   const std::vector<std::int32_t>* origin = nullptr) {
  long bad = 0;
  std::size_t const rb = c.row_bytes(), sb = c.scale_bytes();
  for (int l = 0; l < c.local(); ++l) {
    for (std::size_t m = 0; m < placed[static_cast<std::size_t>(l)].size(); ++m) {
      std::int32_t const o = placed[static_cast<std::size_t>(l)][m];
      const MoeRankInput& x = in[static_cast<std::size_t>(o / c.pairs())];
      auto const t = static_cast<std::size_t>((o % c.pairs()) / c.top_k);
      std::size_t const slot = static_cast<std::size_t>(l) * c.cap() + m;
      if (origin != nullptr) bad += (*origin)[slot] != o;
      for (std::size_t b = 0; b < rb; ++b) bad += rows[slot * rb + b] != x.data[t * rb + b];
      for (std::size_t k = 0; k < c.scale_cols(); ++k) {
        for (std::size_t b = 0; b < sb; ++b) {
          bad += scales[l * c.expert_scale_bytes() + c.scale_offset(m, k) + b] !=
                 x.scales[(t * c.scale_cols() + k) * sb + b];
        }
      }
    }
  }
  return bad;
}

/// Gives every rank BF16 tokens (random, from `seed`) and, as data and scales, their NVFP4
/// quantization with the rank's global scale as symmcomm's codecs compute it: what a dispatch
/// of the BF16 tokens must place.
inline void moe_use_bf16(const MoeCase& c, std::vector<MoeRankInput>& in, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (MoeRankInput& x : in) {
    x.global_scale = nvfp4_global_scale(4.0f);
    x.bf16.resize(static_cast<std::size_t>(c.max_tokens) * c.hidden);
    for (auto& b : x.bf16) b = float_to_bf16_bits(normal(rng));
    for (std::size_t blk = 0; blk < x.bf16.size() / kNvfp4BlockSize; ++blk) {
      float v[kNvfp4BlockSize];
      for (std::size_t k = 0; k < kNvfp4BlockSize; ++k) {
        v[k] = bf16_bits_to_float(x.bf16[blk * kNvfp4BlockSize + k]);
      }
      x.scales[blk] = nvfp4_quantize_block(v, x.global_scale, &x.data[blk * kNvfp4BlockBytes]);
    }
  }
}

/// Every rank's input for `seed` (the same on every process).
inline std::vector<MoeRankInput> moe_inputs(const MoeCase& c, MoeRoutingKind kind,
                                            std::uint32_t seed) {
  std::vector<MoeRankInput> in(static_cast<std::size_t>(c.ranks));
  std::mt19937 rng(seed);
  for (int r = 0; r < c.ranks; ++r) {
    MoeRankInput& x = in[static_cast<std::size_t>(r)];
    x.num_tokens = static_cast<int>(rng() % static_cast<unsigned>(c.max_tokens + 1));
    if (r == 0) x.num_tokens = c.max_tokens;
    x.idx.assign(static_cast<std::size_t>(c.pairs()), -1);
    x.weights.resize(static_cast<std::size_t>(c.pairs()));
    for (int t = 0; t < c.max_tokens; ++t) {
      std::vector<int> chosen;
      for (int j = 0; j < c.top_k; ++j) {
        int e = -1;
        do {
          e = static_cast<int>(rng() % static_cast<unsigned>(c.experts));
          if (kind == MoeRoutingKind::Holes && e < c.local()) e = -1;
        } while (e >= 0 && std::find(chosen.begin(), chosen.end(), e) != chosen.end());
        if (kind == MoeRoutingKind::Hot && j == 0) e = 1;
        if (kind == MoeRoutingKind::Holes && rng() % 4 == 0) e = -1;
        if (e >= 0 && std::find(chosen.begin(), chosen.end(), e) != chosen.end()) e = -1;
        if (e >= 0) chosen.push_back(e);
        x.idx[static_cast<std::size_t>(t * c.top_k + j)] = e;
        x.weights[static_cast<std::size_t>(t * c.top_k + j)] =
            static_cast<float>(rng() % 1000) / 1000.0f;
      }
    }
    if (kind == MoeRoutingKind::BadId && r == 1 % c.ranks) {
      x.idx[1] = c.experts;  // token 0, slot 1
      if (x.num_tokens == 0) x.num_tokens = 1;
    }
    x.data.resize(static_cast<std::size_t>(c.max_tokens) * c.row_bytes());
    x.scales.resize(static_cast<std::size_t>(c.max_tokens) * c.scale_cols() * c.scale_bytes());
    for (auto& b : x.data) b = static_cast<std::uint8_t>(rng());
    for (auto& b : x.scales) b = static_cast<std::uint8_t>(rng() % 0x7e);
  }
  return in;
}

/// What `rank` holds after a dispatch: per local expert, the origin (src * pairs + pair) of its
/// rows in order; counts, overflow and error bits.
struct MoePlacement {
  std::vector<std::vector<std::int32_t>> rows;
  std::vector<std::int32_t> count;
  std::int32_t overflow = 0;
  std::int32_t error = 0;
};

inline MoePlacement moe_placement(const MoeCase& c, int rank, const std::vector<MoeRankInput>& in) {
  MoePlacement out;
  out.rows.resize(static_cast<std::size_t>(c.local()));
  int const first = rank * c.local();
  for (int src = 0; src < c.ranks; ++src) {
    const MoeRankInput& x = in[static_cast<std::size_t>(src)];
    int n = x.num_tokens;
    if (n < 0 || n > c.max_tokens) {
      out.error |= kMoeErrorNumTokens;
      n = n < 0 ? 0 : c.max_tokens;
    }
    if (x.global_scale != in[0].global_scale) out.error |= kMoeErrorGlobalScale;
    for (int p = 0; p < n * c.top_k; ++p) {
      int const e = x.idx[static_cast<std::size_t>(p)];
      if (e < -1 || e >= c.experts) {
        out.error |= kMoeErrorExpertId;
        continue;
      }
      if (e < first || e >= first + c.local()) continue;
      auto& rows = out.rows[static_cast<std::size_t>(e - first)];
      if (static_cast<int>(rows.size()) < c.cap()) {
        rows.push_back(src * c.pairs() + p);
      } else {
        ++out.overflow;
      }
    }
  }
  for (const auto& r : out.rows) out.count.push_back(static_cast<std::int32_t>(r.size()));
  return out;
}

/// Each rank's combined output as floats before the bf16 rounding (summed in double), its rows
/// below num_tokens clamped to 0..max_tokens (a combine leaves the rest of `out` as it was): the
/// pairs placed anywhere, weighted, from `expert_out[dest]` (bf16 bits, [L][capacity][hidden]).
inline std::vector<std::vector<double>> moe_combined(
    const MoeCase& c, const std::vector<MoeRankInput>& in,
    const std::vector<std::vector<std::uint16_t>>& expert_out) {
  std::vector<std::vector<double>> out;
  for (const MoeRankInput& x : in) {
    int const n = std::min(std::max(x.num_tokens, 0), c.max_tokens);
    out.emplace_back(static_cast<std::size_t>(n) * c.hidden);
  }
  for (int dest = 0; dest < c.ranks; ++dest) {
    MoePlacement const p = moe_placement(c, dest, in);
    for (int l = 0; l < c.local(); ++l) {
      for (std::size_t m = 0; m < p.rows[static_cast<std::size_t>(l)].size(); ++m) {
        std::int32_t const o = p.rows[static_cast<std::size_t>(l)][m];
        int const src = o / c.pairs(), q = o % c.pairs(), t = q / c.top_k;
        double const w = in[static_cast<std::size_t>(src)].weights[static_cast<std::size_t>(q)];
        const std::uint16_t* row = expert_out[static_cast<std::size_t>(dest)].data() +
                                   (static_cast<std::size_t>(l) * c.cap() + m) * c.hidden;
        double* acc =
            out[static_cast<std::size_t>(src)].data() + static_cast<std::size_t>(t) * c.hidden;
        for (int h = 0; h < c.hidden; ++h) acc[h] += w * bf16_bits_to_float(row[h]);
      }
    }
  }
  return out;
}

/// Whether a combined bf16 value `v` is the exact sum `ref` rounded once: within one bf16 ulp of
/// ref, plus what fp32 accumulation of top_k terms of magnitude < 4 can add (cancellation makes a
/// relative bound alone too tight near 0).
inline bool within_one_rounding(double v, double ref) {
  double const ulp = std::ldexp(1.0, std::ilogb(ref == 0 ? 1e-30 : ref) - 7);
  return std::abs(v - ref) <= ulp + 2e-5;
}

}  // namespace symmcomm::test
