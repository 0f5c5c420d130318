// symmcomm::MoeGroup on a one-rank communicator, against the host's specification
// (support/moe_reference.hpp): both of the group's paths (its LSA kernels where the communicator
// has an LSA team, and its fallback over NCCL), NVFP4 and BF16 tokens, every placed byte, the
// counts, the combined output within one bf16 rounding; and the refusals that need a
// communicator (fields of the configuration, x's count, NcclSymmetric).

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/comm_fixture.hpp"
#include "support/gpu_test.hpp"
#include "support/moe_reference.hpp"
#include "support/tensors.hpp"
#include "symmcomm/collectives/moe.hpp"

namespace symmcomm::test {
namespace {

MoeCase one_rank_case() {
  MoeCase c;
  c.ranks = 1;
  c.experts = 8;
  c.top_k = 3;
  c.hidden = 128;
  c.max_tokens = 37;
  return c;
}

// One dispatch and combine of `in` (one rank) through `g`, checked against the specification.
void expect_one_rank_step(MoeGroup& g, const MoeCase& c, const std::vector<MoeRankInput>& in) {
  const MoeRankInput& x = in[0];
  DeviceArray<std::uint8_t> data(x.data.size()), scales(x.scales.size());
  DeviceArray<std::int32_t> idx(x.idx.size()), tokens(1);
  DeviceArray<float> weights(x.weights.size()), scale(1);
  DeviceArray<std::uint16_t> bf16_tokens(x.bf16.empty() ? 1 : x.bf16.size());
  data.upload(x.data);
  scales.upload(x.scales);
  idx.upload(x.idx);
  tokens.upload({x.num_tokens});
  weights.upload(x.weights);
  scale.upload({x.global_scale});
  if (x.bf16.empty()) {
    ConstNvfp4View v{data.get(), scales.get(), scale.get(),
                     static_cast<std::size_t>(c.max_tokens) * c.hidden};
    g.dispatch(v, idx.get(), weights.get(), tokens.get(), nullptr);
  } else {
    bf16_tokens.upload(x.bf16);
    g.dispatch(ConstBf16Span{reinterpret_cast<const bf16*>(bf16_tokens.get()), x.bf16.size()},
               c.wire == DataType::Nvfp4 ? scale.get() : nullptr, idx.get(), weights.get(),
               tokens.get(), nullptr);
  }
  auto const y =
      to_bf16_bits(random_floats(static_cast<std::size_t>(c.local()) * c.cap() * c.hidden, 99));
  DeviceArray<std::uint16_t> expert_out(y.size()),
      out(static_cast<std::size_t>(c.max_tokens) * c.hidden);
  expert_out.upload(y);
  g.combine(reinterpret_cast<const bf16*>(expert_out.get()), reinterpret_cast<bf16*>(out.get()),
            nullptr);
  EXPECT_EQ(g.check(nullptr), 0);
  MoePlacement const want = moe_placement(c, 0, in);
  const MoeDispatch& d = g.buffers();
  EXPECT_EQ(support::download_on<std::int32_t>(nullptr, d.expert_count, c.local()), want.count);
  auto const rows = support::download_on<std::uint8_t>(
      nullptr, d.data, static_cast<std::size_t>(c.local()) * c.cap() * c.row_bytes());
  auto const got_scales = support::download_on<std::uint8_t>(nullptr, d.block_scales,
                                                             c.local() * c.expert_scale_bytes());
  long const bad = moe_placed_bytes_wrong(c, in, want.rows, rows, got_scales);
  EXPECT_EQ(bad, 0) << "placed bytes that differ from the specification";
  auto const sums = moe_combined(c, in, {y})[0];
  auto const got = out.download();
  long off = 0;
  for (std::size_t i = 0; i < sums.size(); ++i) {
    off += !within_one_rounding(bf16_bits_to_float(got[i]), sums[i]);
  }
  EXPECT_EQ(off, 0) << "combined elements beyond one bf16 rounding of the exact sum";
}

TEST(MoeGroupOneRank, BothPathsPlaceEveryRowAndCombine) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  MoeCase const c = one_rank_case();
  std::vector<PathChoice> paths{PathChoice::Fallback};
  if (MoeGroup::supported(comm)) paths.push_back(PathChoice::LsaKernel);
  for (PathChoice path : paths) {
    SCOPED_TRACE(to_string(path));
    MoeGroup g(comm, c.config(), nullptr, path);
    EXPECT_EQ(g.path(), path == PathChoice::Fallback ? Path::Fallback : Path::LsaKernel);
    auto in = moe_inputs(c, MoeRoutingKind::Holes, 5);
    expect_one_rank_step(g, c, in);
    moe_use_bf16(c, in, 6);
    expect_one_rank_step(g, c, in);
    MoeCase wire = c;
    wire.wire = DataType::Bf16;
    MoeGroup gw(comm, wire.config(), nullptr, path);
    auto rows = moe_inputs(wire, MoeRoutingKind::Random, 7);
    moe_use_bf16_wire(wire, rows, 8);
    expect_one_rank_step(gw, wire, rows);
    wire.wire = DataType::Fp8E4M3;
    MoeGroup g8(comm, wire.config(), nullptr, path);
    rows = moe_inputs(wire, MoeRoutingKind::Holes, 9);
    moe_use_fp8_wire(wire, rows, 10);
    expect_one_rank_step(g8, wire, rows);
  }
}

TEST(MoeGroupOneRank, RefusalsNameTheFieldOrArgument) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  MoeConfig c = one_rank_case().config();
  c.top_k = 9;
  EXPECT_NE(logic_error_text([&] { MoeGroup g(comm, c); }).find("config.top_k = 9"),
            std::string::npos);
  c = one_rank_case().config();
  c.num_experts = 2000;
  EXPECT_NE(logic_error_text([&] { MoeGroup g(comm, c); }).find("config.num_experts = 2000"),
            std::string::npos);
  EXPECT_NE(logic_error_text([&] {
              MoeGroup g(comm, one_rank_case().config(), nullptr, PathChoice::NcclSymmetric);
            }).find("path NcclSymmetric"),
            std::string::npos);
  c = one_rank_case().config();
  c.wire = DataType::Fp8E4M3;
  c.hidden = 192;  // whole NVFP4 tiles, not whole FP8 blocks
  EXPECT_NE(logic_error_text([&] { MoeGroup g(comm, c); }).find("config.hidden = 192"),
            std::string::npos);
  c.hidden = 128;
  MoeGroup fp8(comm, c, nullptr, PathChoice::Fallback);
  {
    DeviceArray<std::uint8_t> b(128 * 37);
    DeviceArray<std::int32_t> i(37 * 3);
    DeviceArray<float> f(37 * 3);
    ConstNvfp4View nv{b.get(), b.get(), f.get(), 37 * 128};
    EXPECT_NE(logic_error_text([&] {
                fp8.dispatch(nv, i.get(), f.get(), i.get(), nullptr);
              }).find("x is NVFP4 but the group's wire is fp8e4m3"),
              std::string::npos);
    ConstBf16Span x{reinterpret_cast<const bf16*>(b.get()), 37 * 128};
    EXPECT_NE(logic_error_text([&] {
                fp8.dispatch(x, f.get(), i.get(), f.get(), i.get(), nullptr);
              }).find("global_scale must be null on an fp8e4m3 wire"),
              std::string::npos);
  }
  MoeGroup g(comm, one_rank_case().config(), nullptr, PathChoice::Fallback);
  DeviceArray<std::uint8_t> bytes(4096);
  DeviceArray<std::int32_t> ints(4096);
  DeviceArray<float> floats(4096);
  ConstNvfp4View small{bytes.get(), bytes.get(), floats.get(), 64};
  EXPECT_NE(logic_error_text([&] {
              g.dispatch(small, ints.get(), floats.get(), ints.get(), nullptr);
            }).find("x.count = 64"),
            std::string::npos);
  ConstNvfp4View whole{bytes.get(), bytes.get(), floats.get(), 37 * 128};
  EXPECT_NE(logic_error_text([&] {
              g.dispatch(whole, nullptr, floats.get(), ints.get(), nullptr);
            }).find("topk_idx is null"),
            std::string::npos);
}

}  // namespace
}  // namespace symmcomm::test
