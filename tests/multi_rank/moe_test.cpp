// MoE dispatch and combine by expert (symmcomm::MoeGroup) across real ranks, against the host's
// specification (support/moe_reference.hpp; every rank draws every rank's input from one seed):
// every placed data and scale byte, the counts, overflow and error words, the combined output
// within one bf16 rounding of the exact sum; eager calls, then one CUDA graph of a dispatch and
// a combine replayed with new routing; bad input named by check(). On both paths where the LSA
// kernels can run, on the fallback elsewhere (NCCL 2.28 with ranks sharing a GPU), where a forced
// LSA path must be refused with the reason.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "multi_rank/checks.hpp"
#include "multi_rank/world.hpp"
#include "support/moe_reference.hpp"
#include "support/tensors.hpp"
#include "symmcomm/collectives/moe.hpp"
#include "symmcomm/comm/mpi.hpp"

namespace symmcomm::test {
namespace {

MoeCase moe_case(int capacity = 0) {
  MoeCase c;
  c.ranks = world().size;
  c.experts = 4 * world().size;
  c.top_k = 3;
  c.hidden = 256;
  c.max_tokens = 29;
  c.capacity = capacity;
  return c;
}

// This rank's inputs on the device (pool memory: nothing needs to be symmetric), refilled from
// a routing of every rank.
struct Inputs {
  const MoeCase c;
  PoolArray<std::uint8_t> data, scales;
  PoolArray<std::int32_t> idx, tokens;
  PoolArray<float> weights, scale;
  PoolArray<std::uint16_t> expert_out, out, bf16_tokens;
  bool use_bf16 = false;
  explicit Inputs(const MoeCase& mc)
      : c(mc),
        data(c.max_tokens * c.row_bytes()),
        scales(c.max_tokens * c.scale_cols() * c.scale_bytes()),
        idx(c.pairs()),
        tokens(1),
        weights(c.pairs()),
        scale(1),
        expert_out(static_cast<std::size_t>(c.local()) * c.cap() * c.hidden),
        out(static_cast<std::size_t>(c.max_tokens) * c.hidden),
        bf16_tokens(static_cast<std::size_t>(c.max_tokens) * c.hidden) {}
  void upload(const MoeRankInput& x, const std::vector<std::uint16_t>& y) {
    data.upload(x.data);
    scales.upload(x.scales);
    idx.upload(x.idx);
    tokens.upload({x.num_tokens});
    weights.upload(x.weights);
    scale.upload({x.global_scale});
    expert_out.upload(y);
    use_bf16 = !x.bf16.empty();
    if (use_bf16) bf16_tokens.upload(x.bf16);
  }
  ConstNvfp4View x() const {
    ConstNvfp4View v;
    v.data = data.get();
    v.block_scales = scales.get();
    v.global_scale = scale.get();
    v.count = static_cast<std::size_t>(c.max_tokens) * c.hidden;
    return v;
  }
  void step(MoeGroup& g) {
    if (use_bf16) {
      g.dispatch(
          ConstBf16Span{reinterpret_cast<const bf16*>(bf16_tokens.get()), bf16_tokens.count()},
          c.wire == DataType::Nvfp4 ? scale.get() : nullptr, idx.get(), weights.get(), tokens.get(),
          world().stream);
    } else {
      g.dispatch(x(), idx.get(), weights.get(), tokens.get(), world().stream);
    }
    g.combine(reinterpret_cast<const bf16*>(expert_out.get()), reinterpret_cast<bf16*>(out.get()),
              world().stream);
  }
};

template <class T>
std::vector<T> download(const void* ptr, std::size_t count) {
  std::vector<T> host(count);
  copy_sync(host.data(), ptr, count * sizeof(T));
  return host;
}

std::vector<std::vector<std::uint16_t>> expert_outputs(const MoeCase& c, std::uint32_t seed) {
  std::vector<std::vector<std::uint16_t>> y;
  for (int r = 0; r < c.ranks; ++r) {
    y.push_back(to_bf16_bits(random_floats(static_cast<std::size_t>(c.local()) * c.cap() * c.hidden,
                                           seed + static_cast<unsigned>(r))));
  }
  return y;
}

// This rank's dispatch and combine against the specification.
void expect_step(const MoeGroup& g, const Inputs& t, const std::vector<MoeRankInput>& in,
                 const std::vector<std::vector<std::uint16_t>>& y, const std::string& what) {
  SCOPED_TRACE(what);
  const MoeCase& c = t.c;
  int const me = world().rank;
  MoePlacement const want = moe_placement(c, me, in);
  const MoeDispatch& d = g.buffers();
  EXPECT_EQ(download<std::int32_t>(d.expert_count, c.local()), want.count);
  EXPECT_EQ(download<std::int32_t>(d.overflow, 1)[0], want.overflow);
  EXPECT_EQ(download<std::int32_t>(d.error, 1)[0], want.error);
  EXPECT_EQ(download<float>(d.global_scale, 1)[0], in[0].global_scale);
  auto const rows =
      download<std::uint8_t>(d.data, static_cast<std::size_t>(c.local()) * c.cap() * c.row_bytes());
  auto const scales = download<std::uint8_t>(d.block_scales, c.local() * c.expert_scale_bytes());
  long const bad = moe_placed_bytes_wrong(c, in, want.rows, rows, scales);
  EXPECT_EQ(bad, 0) << "placed bytes that differ from the specification";
  auto const sums = moe_combined(c, in, y)[static_cast<std::size_t>(me)];
  auto const got = t.out.download();
  long off = 0;
  for (std::size_t i = 0; i < sums.size(); ++i) {
    double const ref = sums[i];
    double const v = bf16_bits_to_float(got[i]);
    off += !within_one_rounding(v, ref);
  }
  EXPECT_EQ(off, 0) << "combined elements beyond one bf16 rounding of the exact sum";
}

// The paths a group can take here: the LSA kernels where an LSA team spans the ranks, and the
// fallback over NCCL everywhere.
std::vector<PathChoice> moe_paths() {
  if (lsa_can()) return {PathChoice::LsaKernel, PathChoice::Fallback};
  return {PathChoice::Fallback};
}

std::string name_of(PathChoice p) {
  return to_string(p);
}

TEST(MultiRankMoe, GroupTakesTheLsaPathWhereItCanAndTheFallbackElsewhereSayingWhy) {
  std::string why;
  bool const ok = MoeGroup::supported(world().comm, &why);
  EXPECT_EQ(ok, lsa_can()) << why;
  EXPECT_EQ(why.empty(), ok);
  MoeGroup g(world().comm, moe_case().config(), world().stream);
  EXPECT_EQ(g.local_experts(), 4);
  EXPECT_EQ(g.config().capacity, world().size * 29);
  EXPECT_EQ(g.path(), ok ? Path::LsaKernel : Path::Fallback);
  EXPECT_EQ(g.reason().rfind(ok ? "lsa: " : "fallback: ", 0), 0u) << g.reason();
  if (!ok) {
    EXPECT_NE(g.reason().find(why), std::string::npos) << g.reason();
    std::string const text = logic_error_text([&] {
      MoeGroup forced(world().comm, moe_case().config(), world().stream, PathChoice::LsaKernel);
    });
    EXPECT_NE(text.find("path LsaKernel cannot be taken: " + why), std::string::npos) << text;
  }
  MoeGroup fallback(world().comm, moe_case().config(), world().stream, PathChoice::Fallback);
  EXPECT_EQ(fallback.path(), Path::Fallback);
  EXPECT_EQ(fallback.window_bytes(), 0u);
  EXPECT_NE(fallback.reason().find("(asked for)"), std::string::npos) << fallback.reason();
  MoeConfig bad = moe_case().config();
  bad.hidden = 100;
  EXPECT_NE(logic_error_text([&] {
              MoeGroup b(world().comm, bad, world().stream);
            }).find("config.hidden = 100"),
            std::string::npos);
}

void dispatch_and_combine_eager_then_replayed(PathChoice path) {
  SCOPED_TRACE(name_of(path));
  World& w = world();
  MoeCase const c = moe_case();
  MoeGroup g(w.comm, c.config(), w.stream, path);
  Inputs t(c);
  int round = 0;
  for (MoeRoutingKind kind :
       {MoeRoutingKind::Random, MoeRoutingKind::Holes, MoeRoutingKind::Random}) {
    auto in = moe_inputs(c, kind, 100 + static_cast<std::uint32_t>(round));
    if (round == 2) moe_use_bf16(c, in, 77);  // BF16 tokens quantized in the dispatch
    auto const y = expert_outputs(c, 7 + static_cast<std::uint32_t>(round));
    t.upload(in[static_cast<std::size_t>(w.rank)], y[static_cast<std::size_t>(w.rank)]);
    t.step(g);
    sync();
    expect_step(g, t, in, y,
                "eager round " + std::to_string(round) + (round == 2 ? " (bf16 tokens)" : ""));
    ++round;
  }
  EXPECT_EQ(g.check(w.stream), 0);
  // The graph captures the NVFP4 dispatch, which its replays feed (the last eager round took
  // BF16 tokens, a different launch).
  t.use_bf16 = false;
  cudaGraph_t graph = nullptr;
  SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(w.stream, cudaStreamCaptureModeThreadLocal));
  t.step(g);
  SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(w.stream, &graph));
  cudaGraphExec_t exec = nullptr;
  SYMMCOMM_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 3; ++replay) {
    auto const in = moe_inputs(c, MoeRoutingKind::Random, 200 + static_cast<std::uint32_t>(replay));
    auto const y = expert_outputs(c, 300 + static_cast<std::uint32_t>(replay));
    t.upload(in[static_cast<std::size_t>(w.rank)], y[static_cast<std::size_t>(w.rank)]);
    SYMMCOMM_CUDA_TRY(cudaGraphLaunch(exec, w.stream));
    sync();
    expect_step(g, t, in, y, "graph replay " + std::to_string(replay));
  }
  SYMMCOMM_CUDA_TRY(cudaGraphExecDestroy(exec));
  SYMMCOMM_CUDA_TRY(cudaGraphDestroy(graph));
}

TEST(MultiRankMoe, DispatchAndCombineEagerThenReplayedFromOneGraph) {
  for (PathChoice path : moe_paths()) dispatch_and_combine_eager_then_replayed(path);
}

TEST(MultiRankMoe, InPlaceCombineReadsTheExpertOutputsWhereTheGroupHoldsThem) {
  for (PathChoice path : moe_paths()) {
    SCOPED_TRACE(name_of(path));
    World& w = world();
    MoeCase c = moe_case();
    c.in_place = true;
    MoeGroup g(w.comm, c.config(), w.stream, path);
    ASSERT_NE(g.buffers().expert_out, nullptr);
    Inputs t(c);
    int round = 0;
    for (MoeRoutingKind kind : {MoeRoutingKind::Random, MoeRoutingKind::Holes}) {
      auto const in = moe_inputs(c, kind, 500 + static_cast<std::uint32_t>(round));
      auto const y = expert_outputs(c, 600 + static_cast<std::uint32_t>(round));
      t.upload(in[static_cast<std::size_t>(w.rank)], y[static_cast<std::size_t>(w.rank)]);
      g.dispatch(t.x(), t.idx.get(), t.weights.get(), t.tokens.get(), w.stream);
      // Round 0: the outputs written where the group holds them (a GEMM writing there), read
      // in place; round 1: outputs elsewhere, copied in first.
      const bf16* y_at = reinterpret_cast<const bf16*>(t.expert_out.get());
      if (round == 0) {
        SYMMCOMM_CUDA_TRY(cudaMemcpyAsync(g.buffers().expert_out, y_at,
                                          t.expert_out.count() * sizeof(std::uint16_t),
                                          cudaMemcpyDeviceToDevice, w.stream));
        y_at = g.buffers().expert_out;
      }
      g.combine(y_at, reinterpret_cast<bf16*>(t.out.get()), w.stream);
      sync();
      expect_step(g, t, in, y, round == 0 ? "expert outputs in place" : "expert outputs copied");
      ++round;
    }
    EXPECT_EQ(g.check(w.stream), 0);
  }
}

TEST(MultiRankMoe, Bf16WireMovesRowsAsTheyAre) {
  for (PathChoice path : moe_paths()) {
    SCOPED_TRACE(name_of(path));
    World& w = world();
    MoeCase c = moe_case();
    c.wire = DataType::Bf16;
    MoeGroup g(w.comm, c.config(), w.stream, path);
    EXPECT_EQ(g.buffers().block_scales, nullptr);
    Inputs t(c);
    auto in = moe_inputs(c, MoeRoutingKind::Holes, 61);
    moe_use_bf16_wire(c, in, 62);
    auto const y = expert_outputs(c, 63);
    t.upload(in[static_cast<std::size_t>(w.rank)], y[static_cast<std::size_t>(w.rank)]);
    t.step(g);
    sync();
    expect_step(g, t, in, y, "bf16 wire");
    EXPECT_EQ(g.check(w.stream), 0);
  }
}

TEST(MultiRankMoe, Fp8WireQuantizesEachBlockOf128WithItsOwnScale) {
  for (PathChoice path : moe_paths()) {
    SCOPED_TRACE(name_of(path));
    World& w = world();
    MoeCase c = moe_case();
    c.wire = DataType::Fp8E4M3;
    MoeGroup g(w.comm, c.config(), w.stream, path);
    EXPECT_EQ(g.expert_scale_bytes(), c.expert_scale_bytes());
    Inputs t(c);
    for (std::uint32_t seed : {81u, 82u}) {
      auto in = moe_inputs(c, MoeRoutingKind::Holes, seed);
      moe_use_fp8_wire(c, in, seed + 10);
      auto const y = expert_outputs(c, seed + 20);
      t.upload(in[static_cast<std::size_t>(w.rank)], y[static_cast<std::size_t>(w.rank)]);
      t.step(g);
      sync();
      expect_step(g, t, in, y, "fp8 wire, seed " + std::to_string(seed));
    }
    EXPECT_EQ(g.check(w.stream), 0);
  }
}

TEST(MultiRankMoe, RowsPastCapacityAreDroppedAndTallied) {
  for (PathChoice path : moe_paths()) {
    SCOPED_TRACE(name_of(path));
    World& w = world();
    MoeCase const c = moe_case(6);
    MoeGroup g(w.comm, c.config(), w.stream, path);
    Inputs t(c);
    auto const in = moe_inputs(c, MoeRoutingKind::Hot, 41);
    auto const y = expert_outputs(c, 43);
    t.upload(in[static_cast<std::size_t>(w.rank)], y[static_cast<std::size_t>(w.rank)]);
    t.step(g);
    sync();
    expect_step(g, t, in, y, "hot expert 1, capacity 6");
    EXPECT_EQ(g.check(w.stream), moe_placement(c, w.rank, in).overflow);
  }
}

void bad_input_is_named(PathChoice path) {
  SCOPED_TRACE(name_of(path));
  World& w = world();
  MoeCase const c = moe_case();
  MoeGroup g(w.comm, c.config(), w.stream, path);
  Inputs t(c);
  auto in = moe_inputs(c, MoeRoutingKind::BadId, 51);
  in[0].num_tokens = c.max_tokens + 4;
  in[static_cast<std::size_t>(c.ranks - 1)].global_scale = 0.125f;
  auto const y = expert_outputs(c, 53);
  t.upload(in[static_cast<std::size_t>(w.rank)], y[static_cast<std::size_t>(w.rank)]);
  t.step(g);
  sync();
  expect_step(g, t, in, y, "bad id, num_tokens and global scale");
  std::string const text = logic_error_text([&] { g.check(w.stream); });
  for (const char* name : {"topk_idx", "num_tokens", "x.global_scale"}) {
    EXPECT_NE(text.find(name), std::string::npos) << name << " not named in: " << text;
  }
}

TEST(MultiRankMoe, BadInputIsNamedOnEveryRankAndTheRestIsPlaced) {
  for (PathChoice path : moe_paths()) bad_input_is_named(path);
}

}  // namespace
}  // namespace symmcomm::test
