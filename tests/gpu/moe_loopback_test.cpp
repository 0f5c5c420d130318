// MoE dispatch and combine by expert (kernels/moe.hpp) through the loopback peer policy: virtual
// ranks on one GPU, every launch of a step run for every rank in rank order, against the host's
// specification (support/moe_reference.hpp): every placed data and scale byte, the counts,
// overflow and error words, and the combined output.

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/moe.hpp"
#include "support/gpu_test.hpp"
#include "support/moe_reference.hpp"
#include "support/tensors.hpp"
#include "symmcomm/formats/bf16.hpp"
#include "testing/src/lsa_loopback.hpp"

namespace symmcomm::test {
namespace {

namespace lsa = detail::lsa;

lsa::MoeShape shape_of(const MoeCase& c) {
  lsa::MoeShape s;
  s.ranks = c.ranks;
  s.experts = c.experts;
  s.top_k = c.top_k;
  s.hidden = c.hidden;
  s.max_tokens = c.max_tokens;
  s.capacity = c.cap();
  s.wire = c.wire;
  s.in_place = c.in_place;
  return s;
}

// Every virtual rank's group window and inputs on the device.
struct World {
  MoeCase c;
  lsa::MoeShape shape;
  lsa::MoeLayout layout;
  std::vector<std::unique_ptr<DeviceArray<std::uint8_t>>> window, data, scales;
  std::vector<std::unique_ptr<DeviceArray<std::int32_t>>> idx, tokens;
  std::vector<std::unique_ptr<DeviceArray<float>>> weights, scale;
  std::vector<std::unique_ptr<DeviceArray<std::uint16_t>>> bf16_tokens;

  explicit World(const MoeCase& mc)
      : c(mc), shape(shape_of(mc)), layout(lsa::MoeLayout::of(shape)) {
    for (int r = 0; r < c.ranks; ++r) {
      window.push_back(std::make_unique<DeviceArray<std::uint8_t>>(layout.bytes));
      data.push_back(std::make_unique<DeviceArray<std::uint8_t>>(c.max_tokens * c.row_bytes()));
      scales.push_back(std::make_unique<DeviceArray<std::uint8_t>>(c.max_tokens * c.scale_cols() *
                                                                   c.scale_bytes()));
      idx.push_back(std::make_unique<DeviceArray<std::int32_t>>(c.pairs()));
      weights.push_back(std::make_unique<DeviceArray<float>>(c.pairs()));
      tokens.push_back(std::make_unique<DeviceArray<std::int32_t>>(1));
      scale.push_back(std::make_unique<DeviceArray<float>>(1));
      bf16_tokens.push_back(std::make_unique<DeviceArray<std::uint16_t>>(
          c.max_tokens * static_cast<std::size_t>(c.hidden)));
    }
  }
  char* at(int r, std::size_t offset) const {
    return reinterpret_cast<char*>(window[static_cast<std::size_t>(r)]->get()) + offset;
  }
  lsa::LoopbackPeers peers(int r) const {
    lsa::LoopbackPeers p(r, c.ranks);
    for (int q = 0; q < c.ranks; ++q) p.base[0][q] = window[static_cast<std::size_t>(q)]->get();
    return p;
  }

  // One dispatch of every rank's `in`, launch by launch as loopback runs them.
  void dispatch(const std::vector<MoeRankInput>& in) {
    for (int r = 0; r < c.ranks; ++r) {
      auto const i = static_cast<std::size_t>(r);
      data[i]->upload(in[i].data);
      scales[i]->upload(in[i].scales);
      idx[i]->upload(in[i].idx);
      weights[i]->upload(in[i].weights);
      tokens[i]->upload({in[i].num_tokens});
      scale[i]->upload({in[i].global_scale});
      if (!in[i].bf16.empty()) bf16_tokens[i]->upload(in[i].bf16);
    }
    for (int phase : {1, 2}) {
      for (int r = 0; r < c.ranks; ++r) {
        auto const i = static_cast<std::size_t>(r);
        lsa::MoeCountsArgs a;
        a.shape = shape;
        a.topk_idx = idx[i]->get();
        a.topk_weights = weights[i]->get();
        a.num_tokens = tokens[i]->get();
        a.global_scale = c.wire == DataType::Nvfp4 ? scale[i]->get() : nullptr;
        a.table = layout.table;
        a.pair_row = reinterpret_cast<std::int32_t*>(at(r, layout.pair_row));
        a.pair_expert = reinterpret_cast<std::int32_t*>(at(r, layout.pair_expert));
        a.weights = reinterpret_cast<float*>(at(r, layout.weights));
        a.expert_count = reinterpret_cast<std::int32_t*>(at(r, layout.expert_count));
        auto* words = reinterpret_cast<std::int32_t*>(at(r, layout.words));
        a.overflow = words;
        a.error = words + 1;
        a.group_scale = reinterpret_cast<float*>(words + 2);
        a.epoch = reinterpret_cast<std::int32_t*>(at(r, layout.epoch));
        a.tokens = words + 3;
        a.phase = phase;
        lsa::moe_counts(peers(r), a, nullptr);
      }
    }
    for (int r = 0; r < c.ranks; ++r) {
      auto const i = static_cast<std::size_t>(r);
      lsa::MoeRowsArgs a;
      a.shape = shape;
      a.data = data[i]->get();
      a.block_scales = scales[i]->get();
      a.topk_idx = idx[i]->get();
      a.pair_row = reinterpret_cast<const std::int32_t*>(at(r, layout.pair_row));
      a.tokens = reinterpret_cast<const std::int32_t*>(at(r, layout.words)) + 3;
      a.layout = layout;
      if (!in[i].bf16.empty() && !c.bf16_wire()) {  // quantized in the launch
        a.data = nullptr;
        a.block_scales = nullptr;
        a.bf16_tokens = reinterpret_cast<const bf16*>(bf16_tokens[i]->get());
        a.global_scale = c.fp8_wire() ? nullptr : scale[i]->get();
      }
      lsa::moe_rows(peers(r), a, nullptr);
    }
    SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
  }

  // One combine of every rank's expert outputs (bf16 bits [L][capacity][hidden]) into `out`:
  // in place (each rank's outputs written into its window, then every rank's pull), or sent
  // back and summed.
  std::vector<std::vector<std::uint16_t>> combine(
      const std::vector<std::vector<std::uint16_t>>& expert_out) {
    if (shape.in_place) return pull(expert_out);
    std::vector<std::unique_ptr<DeviceArray<std::uint16_t>>> y, out;
    for (int r = 0; r < c.ranks; ++r) {
      y.push_back(std::make_unique<DeviceArray<std::uint16_t>>(expert_out[0].size()));
      y.back()->upload(expert_out[static_cast<std::size_t>(r)]);
      out.push_back(std::make_unique<DeviceArray<std::uint16_t>>(
          static_cast<std::size_t>(c.max_tokens) * c.hidden));
    }
    for (int r = 0; r < c.ranks; ++r) {
      lsa::MoeSendBackArgs a;
      a.shape = shape;
      a.expert_out = reinterpret_cast<const bf16*>(y[static_cast<std::size_t>(r)]->get());
      a.expert_count = reinterpret_cast<const std::int32_t*>(at(r, layout.expert_count));
      a.layout = layout;
      lsa::moe_send_back(peers(r), a, nullptr);
    }
    for (int r = 0; r < c.ranks; ++r) {
      lsa::MoeSumArgs a;
      a.shape = shape;
      a.back = reinterpret_cast<const bf16*>(at(r, layout.back));
      a.pair_row = reinterpret_cast<const std::int32_t*>(at(r, layout.pair_row));
      a.weights = reinterpret_cast<const float*>(at(r, layout.weights));
      a.tokens = reinterpret_cast<const std::int32_t*>(at(r, layout.words)) + 3;
      a.out = reinterpret_cast<bf16*>(out[static_cast<std::size_t>(r)]->get());
      lsa::moe_sum(a, nullptr);
    }
    SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
    std::vector<std::vector<std::uint16_t>> got;
    for (auto& o : out) got.push_back(o->download());
    return got;
  }

  std::vector<std::vector<std::uint16_t>> pull(
      const std::vector<std::vector<std::uint16_t>>& expert_out) {
    std::vector<std::unique_ptr<DeviceArray<std::uint16_t>>> out;
    for (int r = 0; r < c.ranks; ++r) {
      support::upload_on(nullptr, at(r, layout.expert_out),
                         expert_out[static_cast<std::size_t>(r)]);
      out.push_back(std::make_unique<DeviceArray<std::uint16_t>>(
          static_cast<std::size_t>(c.max_tokens) * c.hidden));
    }
    for (int r = 0; r < c.ranks; ++r) {
      lsa::MoePullArgs a;
      a.shape = shape;
      a.layout = layout;
      a.pair_row = reinterpret_cast<const std::int32_t*>(at(r, layout.pair_row));
      a.pair_expert = reinterpret_cast<const std::int32_t*>(at(r, layout.pair_expert));
      a.weights = reinterpret_cast<const float*>(at(r, layout.weights));
      a.tokens = reinterpret_cast<const std::int32_t*>(at(r, layout.words)) + 3;
      a.out = reinterpret_cast<bf16*>(out[static_cast<std::size_t>(r)]->get());
      lsa::moe_pull(peers(r), a, nullptr);
    }
    SYMMCOMM_CUDA_TRY(cudaDeviceSynchronize());
    std::vector<std::vector<std::uint16_t>> got;
    for (auto& o : out) got.push_back(o->download());
    return got;
  }

  template <class T>
  std::vector<T> read(int r, std::size_t offset, std::size_t count) const {
    return support::download_on<T>(nullptr, at(r, offset), count);
  }
};

// Rank r's dispatch against the specification: counts, overflow, error, the group scale, and for
// every row below its expert's count its data bytes, its scales at their places (swizzled or
// column-major) and its origin.
void expect_dispatch(const World& w, const std::vector<MoeRankInput>& in, int r) {
  SCOPED_TRACE("rank " + std::to_string(r));
  const MoeCase& c = w.c;
  MoePlacement const want = moe_placement(c, r, in);
  EXPECT_EQ(w.read<std::int32_t>(r, w.layout.expert_count, c.local()), want.count);
  auto const words = w.read<std::int32_t>(r, w.layout.words, 3);
  EXPECT_EQ(words[0], want.overflow);
  EXPECT_EQ(words[1], want.error);
  float scale = 0;
  std::memcpy(&scale, &words[2], sizeof scale);
  EXPECT_EQ(scale, in[0].global_scale);
  auto const rows = w.read<std::uint8_t>(
      r, w.layout.rows, static_cast<std::size_t>(c.local()) * c.cap() * c.row_bytes());
  auto const scales = w.read<std::uint8_t>(r, w.layout.scales, c.local() * c.expert_scale_bytes());
  auto const origin =
      w.read<std::int32_t>(r, w.layout.origin, static_cast<std::size_t>(c.local()) * c.cap());
  EXPECT_EQ(moe_placed_bytes_wrong(c, in, want.rows, rows, scales, &origin), 0)
      << "placed bytes or origins that differ from the specification";
}

// Every rank's combined output within one bf16 rounding of the double-precision sum (the kernel
// sums in fp32 and rounds once).
void expect_combine(const MoeCase& c, const std::vector<MoeRankInput>& in,
                    const std::vector<std::vector<std::uint16_t>>& expert_out,
                    const std::vector<std::vector<std::uint16_t>>& got) {
  auto const want = moe_combined(c, in, expert_out);
  for (int r = 0; r < c.ranks; ++r) {
    for (std::size_t i = 0; i < want[static_cast<std::size_t>(r)].size(); ++i) {
      double const ref = want[static_cast<std::size_t>(r)][i];
      double const v = bf16_bits_to_float(got[static_cast<std::size_t>(r)][i]);
      if (!within_one_rounding(v, ref)) {
        ADD_FAILURE() << "rank " << r << " element " << i << ": " << v << ", want " << ref;
        return;
      }
    }
  }
}

std::vector<std::vector<std::uint16_t>> random_expert_out(const MoeCase& c, std::uint32_t seed) {
  std::vector<std::vector<std::uint16_t>> y;
  for (int r = 0; r < c.ranks; ++r) {
    y.push_back(to_bf16_bits(random_floats(static_cast<std::size_t>(c.local()) * c.cap() * c.hidden,
                                           seed + static_cast<unsigned>(r))));
  }
  return y;
}

void dispatch_and_combine(MoeCase c, MoeRoutingKind kind, std::uint32_t seed,
                          bool bf16_tokens = false) {
  SCOPED_TRACE(std::to_string(c.ranks) + " ranks, capacity " + std::to_string(c.cap()) +
               ", routing " + std::to_string(static_cast<int>(kind)) + ", seed " +
               std::to_string(seed) + (bf16_tokens ? ", bf16 tokens" : ""));
  World w(c);
  auto in = moe_inputs(c, kind, seed);
  if (bf16_tokens) moe_use_bf16(c, in, seed + 1000);
  w.dispatch(in);
  for (int r = 0; r < c.ranks; ++r) expect_dispatch(w, in, r);
  auto const y = random_expert_out(c, seed * 7 + 1);
  expect_combine(c, in, y, w.combine(y));
}

TEST(MoeLoopback, DispatchPlacesEveryRowAndCombineSumsThem) {
  SYMMCOMM_REQUIRE_GPU();
  for (int ranks : {2, 4, 8}) {
    MoeCase c;
    c.ranks = ranks;
    c.experts = 4 * ranks;
    for (MoeRoutingKind kind : {MoeRoutingKind::Random, MoeRoutingKind::Holes}) {
      dispatch_and_combine(c, kind, 11 + static_cast<std::uint32_t>(ranks));
    }
  }
}

TEST(MoeLoopback, InPlaceCombineReadsTheExpertOutputsFromTheirRanks) {
  SYMMCOMM_REQUIRE_GPU();
  for (int ranks : {2, 4, 8}) {
    MoeCase c;
    c.ranks = ranks;
    c.experts = 4 * ranks;
    c.in_place = true;
    for (MoeRoutingKind kind : {MoeRoutingKind::Random, MoeRoutingKind::Holes}) {
      dispatch_and_combine(c, kind, 41 + static_cast<std::uint32_t>(ranks));
    }
  }
}

TEST(MoeLoopback, Bf16TokensAreQuantizedInTheDispatchAsTheCodecsDo) {
  SYMMCOMM_REQUIRE_GPU();
  for (int ranks : {2, 8}) {
    MoeCase c;
    c.ranks = ranks;
    c.experts = 2 * ranks;
    c.hidden = 512;  // 32 blocks a row: every lane of a warp quantizes one
    dispatch_and_combine(c, MoeRoutingKind::Random, 21, true);
  }
}

TEST(MoeLoopback, Bf16WireMovesRowsAsTheyAre) {
  SYMMCOMM_REQUIRE_GPU();
  for (int ranks : {2, 4}) {
    MoeCase c;
    c.ranks = ranks;
    c.experts = 4 * ranks;
    c.wire = DataType::Bf16;
    SCOPED_TRACE(std::to_string(ranks) + " ranks, bf16 wire");
    World w(c);
    auto in = moe_inputs(c, MoeRoutingKind::Random, 31);
    moe_use_bf16_wire(c, in, 32);
    w.dispatch(in);
    for (int r = 0; r < c.ranks; ++r) expect_dispatch(w, in, r);
    auto const y = random_expert_out(c, 33);
    expect_combine(c, in, y, w.combine(y));
  }
}

TEST(MoeLoopback, Fp8WireQuantizesEachBlockOf128WithItsOwnScale) {
  SYMMCOMM_REQUIRE_GPU();
  for (int ranks : {2, 8}) {
    MoeCase c;
    c.ranks = ranks;
    c.experts = 2 * ranks;
    c.hidden = 512;
    c.max_tokens = 21;  // capacity 42 or 168: scale columns padded to 44 or 168 rows
    c.wire = DataType::Fp8E4M3;
    SCOPED_TRACE(std::to_string(ranks) + " ranks, fp8 wire");
    World w(c);
    auto in = moe_inputs(c, MoeRoutingKind::Holes, 71);
    moe_use_fp8_wire(c, in, 72);
    w.dispatch(in);
    for (int r = 0; r < c.ranks; ++r) expect_dispatch(w, in, r);
    auto const y = random_expert_out(c, 73);
    expect_combine(c, in, y, w.combine(y));
  }
}

TEST(MoeLoopback, RowsPastCapacityAreDroppedAndTallied) {
  SYMMCOMM_REQUIRE_GPU();
  MoeCase c;
  c.ranks = 4;
  c.experts = 16;
  c.capacity = 5;  // expert 1 gets every token's first slot: far past 5
  dispatch_and_combine(c, MoeRoutingKind::Hot, 3);
}

TEST(MoeLoopback, RoutingThatChangesIsPlacedAfresh) {
  SYMMCOMM_REQUIRE_GPU();
  MoeCase c;
  c.ranks = 4;
  c.experts = 8;
  World w(c);
  for (std::uint32_t seed : {1u, 2u, 3u}) {
    auto const in = moe_inputs(c, MoeRoutingKind::Random, seed);
    w.dispatch(in);
    for (int r = 0; r < c.ranks; ++r) expect_dispatch(w, in, r);
  }
}

TEST(MoeLoopback, BadInputSetsTheErrorBitsOnEveryRankAndPlacesTheRest) {
  SYMMCOMM_REQUIRE_GPU();
  MoeCase c;
  c.ranks = 4;
  c.experts = 8;
  World w(c);
  auto in = moe_inputs(c, MoeRoutingKind::BadId, 5);
  in[2].num_tokens = c.max_tokens + 3;  // above the maximum: its first max_tokens placed
  in[3].global_scale = 0.25f;           // not rank 0's
  w.dispatch(in);
  for (int r = 0; r < c.ranks; ++r) {
    expect_dispatch(w, in, r);
    EXPECT_EQ(w.read<std::int32_t>(r, w.layout.words, 2)[1],
              kMoeErrorExpertId | kMoeErrorNumTokens | kMoeErrorGlobalScale);
  }
}

}  // namespace
}  // namespace symmcomm::test
