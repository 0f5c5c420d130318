// Collectives across real ranks, every path the mode allows, against host references computed
// independently on every rank (each rank can make every rank's input from its seed).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "multi_rank/world.hpp"
#include "support/gpu_test.hpp"
#include "support/reference.hpp"
#include "support/tensors.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/comm/wait.hpp"
#include "symmcomm/formats/bf16.hpp"

namespace symmcomm::test {
namespace {

std::uint32_t seed_of(int rank, int salt) {
  return 1000003u * static_cast<std::uint32_t>(rank + 1) + 7919u * static_cast<std::uint32_t>(salt);
}

void sync() {
  wait(world().comm, world().stream);
}

Path path_of(PathChoice c) {
  return c == PathChoice::NcclSymmetric ? Path::NcclSymmetric
         : c == PathChoice::LsaKernel   ? Path::LsaKernel
                                        : Path::Fallback;
}

// The forced path was taken, and every rank took the same one.
void expect_path(PathChoice choice, Path got, const std::string& at) {
  if (choice != PathChoice::Auto) {
    EXPECT_EQ(got, path_of(choice)) << at;
  }
  expect_same_path_everywhere(got, at.c_str());
}

// Index of the first difference of a and b, -1 when equal.
template <class T>
long first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!(a[i] == b[i])) return static_cast<long>(i);
  }
  return -1;
}

#define EXPECT_SAME_VECTORS(got, want, what)                                                    \
  do {                                                                                          \
    long const at_ = first_difference(got, want);                                               \
    EXPECT_EQ(at_, -1) << (what) << ": first difference at " << at_ << " of " << (want).size(); \
  } while (0)

// The byte tensors of one all-gather: part p is bytes[p][r] bytes from rank r, laid out rank
// after rank in its receive buffer. Contents are random per (part, rank).
struct GatherParts {
  std::vector<std::vector<std::size_t>> bytes;
  std::vector<std::unique_ptr<PoolArray<std::uint8_t>>> send, recv;

  explicit GatherParts(std::vector<std::vector<std::size_t>> b) : bytes(std::move(b)) {
    int const me = world().rank;
    for (std::size_t p = 0; p < bytes.size(); ++p) {
      std::size_t total = 0, most = 0;
      for (std::size_t x : bytes[p]) {
        total += x;
        most = std::max(most, x);
      }
      // The same allocation on every rank (the largest share): pool offsets must stay symmetric.
      send.push_back(std::make_unique<PoolArray<std::uint8_t>>(most));
      recv.push_back(std::make_unique<PoolArray<std::uint8_t>>(total));
      send.back()->upload(content(p, me));
    }
  }
  static std::vector<std::vector<std::size_t>> equal(std::vector<std::size_t> per_rank) {
    std::vector<std::vector<std::size_t>> b;
    for (std::size_t x : per_rank) b.emplace_back(static_cast<std::size_t>(world().size), x);
    return b;
  }
  std::vector<std::uint8_t> content(std::size_t part, int rank) const {
    return random_bytes(bytes[part][static_cast<std::size_t>(rank)],
                        seed_of(rank, static_cast<int>(part)));
  }
  void poison() {
    for (auto& r : recv) r->poison();
  }
  void expect_gathered(const std::string& what) const {
    for (std::size_t p = 0; p < bytes.size(); ++p) {
      std::vector<std::uint8_t> want;
      for (int r = 0; r < world().size; ++r) {
        auto const c = content(p, r);
        want.insert(want.end(), c.begin(), c.end());
      }
      EXPECT_SAME_VECTORS(recv[p]->download(), want, what + ", part " + std::to_string(p));
    }
  }
  std::uint8_t* s(std::size_t p) const { return send[p]->get(); }
  std::uint8_t* r(std::size_t p) const { return recv[p]->get(); }
};

// Runs `call(options)` for every path the communicator allows and checks every output.
template <class Call>
void every_path(GatherParts& parts, bool nccl_can, bool lsa_can, const std::string& what,
                Call&& call) {
  for (PathChoice choice : paths_to_try(nccl_can, lsa_can)) {
    parts.poison();
    Options options;
    options.path = choice;
    Plan const plan = call(options);
    sync();
    std::string const at = what + " (" + to_string(choice) + " -> " + to_string(plan.path) + ")";
    expect_path(choice, plan.path, at);
    parts.expect_gathered(at);
  }
}

const Capabilities& caps() {
  return world().comm.capabilities();
}
bool lsa_can() {
  return caps().lsa_covers(world().size);
}

TEST(MultiRank, ReportsModeAndCapabilities) {
  World& w = world();
  RecordProperty("mode", w.mode);
  RecordProperty("symmetric_memory", caps().symmetric_memory ? "on" : "off");
  EXPECT_EQ(w.comm.size(), w.size);
  EXPECT_EQ(w.comm.rank(), w.rank);
  EXPECT_TRUE(caps().probed);
  if (caps().symmetric_memory) {
    EXPECT_EQ(caps().lsa_team_size, w.size) << "ranks of one node form one LSA team";
    EXPECT_GE(caps().lsa_sm_share, 1);
    // The grid facts every rank sizes its kernels from are the same everywhere.
    for (int v : all_ranks(caps().lsa_sm_share)) EXPECT_EQ(v, caps().lsa_sm_share);
    for (int v : all_ranks(caps().ranks_per_gpu)) EXPECT_EQ(v, caps().ranks_per_gpu);
  }
  const char* expect = std::getenv("SYMMCOMM_EXPECT_SYMMETRIC");
  if (expect != nullptr && std::string(expect) == "1") {
    EXPECT_TRUE(caps().symmetric_memory) << "SYMMCOMM_EXPECT_SYMMETRIC=1: " << caps().reason;
    EXPECT_TRUE(lsa_can());
  }
}

TEST(MultiRankAllGather, Nvfp4DataScalesAndGlobalsOnEveryPath) {
  World& w = world();
  std::size_t const n = 1 << 18;  // elements per rank
  GatherParts parts(GatherParts::equal({n / 2, n / kNvfp4BlockSize, sizeof(float)}));
  auto const fp4 = [&](std::uint8_t* data, std::uint8_t* scales, std::uint8_t* global,
                       std::size_t count) {
    return Nvfp4View{data, scales, reinterpret_cast<float*>(global), count};
  };
  every_path(parts, caps().symmetric_memory, lsa_can(), "nvfp4 all_gather", [&](Options o) {
    return all_gather(w.comm, fp4(parts.s(0), parts.s(1), parts.s(2), n),
                      fp4(parts.r(0), parts.r(1), parts.r(2), n * w.size), w.stream, o);
  });
}

TEST(MultiRankAllGather, Fp8AndBf16OnEveryPath) {
  World& w = world();
  std::size_t const n = 3 << 16;
  GatherParts fp8(GatherParts::equal({n, sizeof(float)}));
  every_path(fp8, caps().symmetric_memory, lsa_can(), "fp8 all_gather", [&](Options o) {
    return all_gather(
        w.comm, Fp8View{fp8.s(0), reinterpret_cast<float*>(fp8.s(1)), n, Fp8Format::E5M2},
        Fp8View{fp8.r(0), reinterpret_cast<float*>(fp8.r(1)), n * w.size, Fp8Format::E5M2},
        w.stream, o);
  });
  GatherParts b16(GatherParts::equal({2 * n}));
  every_path(b16, caps().symmetric_memory, lsa_can(), "bf16 all_gather", [&](Options o) {
    return all_gather(w.comm, Bf16Span{reinterpret_cast<bf16*>(b16.s(0)), n},
                      Bf16Span{reinterpret_cast<bf16*>(b16.r(0)), n * w.size}, w.stream, o);
  });
}

TEST(MultiRankAllGather, PlainBuffersTakeTheFallback) {
  World& w = world();
  std::size_t const n = 4096;
  DeviceArray<bf16> send(n), recv(n * w.size);
  settle();
  std::vector<std::uint16_t> mine(n);
  for (std::size_t i = 0; i < n; ++i) mine[i] = static_cast<std::uint16_t>(w.rank * 7 + i);
  copy_sync(send.get(), mine.data(), 2 * n);
  Plan const plan =
      all_gather(w.comm, Bf16Span{send.get(), n}, Bf16Span{recv.get(), n * w.size}, w.stream);
  sync();
  EXPECT_EQ(plan.path, Path::Fallback) << plan.reason();
  std::vector<std::uint16_t> got(n * w.size);
  copy_sync(got.data(), recv.get(), 2 * n * w.size);
  for (int r = 0; r < w.size; ++r) {
    for (std::size_t i = 0; i < n; i += 511) {
      EXPECT_EQ(got[r * n + i], static_cast<std::uint16_t>(r * 7 + i)) << "rank " << r << " " << i;
    }
  }
}

TEST(MultiRankAllGather, VariableCountsNvfp4) {
  World& w = world();
  std::vector<std::size_t> counts;
  for (int r = 0; r < w.size; ++r) counts.push_back(16 * 96 * static_cast<std::size_t>(r + 1));
  std::vector<std::vector<std::size_t>> bytes(3);
  std::size_t total = 0;
  for (std::size_t c : counts) {
    bytes[0].push_back(c / 2);
    bytes[1].push_back(c / kNvfp4BlockSize);
    bytes[2].push_back(sizeof(float));
    total += c;
  }
  GatherParts parts(bytes);
  std::size_t const mine = counts[static_cast<std::size_t>(w.rank)];
  // NCCL's symmetric kernels need equal counts: forcing them is refused, so not tried.
  every_path(parts, false, lsa_can(), "nvfp4 all_gatherv", [&](Options o) {
    return all_gatherv(
        w.comm, Nvfp4View{parts.s(0), parts.s(1), reinterpret_cast<float*>(parts.s(2)), mine},
        Nvfp4View{parts.r(0), parts.r(1), reinterpret_cast<float*>(parts.r(2)), total}, counts,
        w.stream, o);
  });
}

// ---- fused quantize + all-gather -----------------------------------------------------------

std::vector<float> bf16_rounded_input(std::size_t n, int rank) {
  auto x = random_floats(n, seed_of(rank, 77), 3.0f);
  for (auto& v : x) v = bf16_bits_to_float(float_to_bf16_bits(v));
  return x;
}

TEST(MultiRankQuantizeGather, Nvfp4AndFp8GivenScaleMatchHostQuantization) {
  World& w = world();
  std::size_t const n = 1 << 16;
  auto const N = static_cast<std::size_t>(w.size);
  PoolArray<std::uint16_t> input(n);
  input.upload(to_bf16_bits(bf16_rounded_input(n, w.rank)));
  auto const given = [](int rank) { return 0.5f + 0.25f * static_cast<float>(rank); };
  PoolArray<float> scale(1);
  scale.upload({given(w.rank)});
  PoolArray<std::uint8_t> data(n * N), block_scales(n / kNvfp4BlockSize * N);
  PoolArray<float> globals(N);
  std::vector<std::uint8_t> want_data, want_scales;
  std::vector<float> want_globals;
  for (int r = 0; r < w.size; ++r) {
    HostNvfp4 const q = HostNvfp4::quantize(bf16_rounded_input(n, r), given(r));
    want_data.insert(want_data.end(), q.data.begin(), q.data.end());
    want_scales.insert(want_scales.end(), q.scales.begin(), q.scales.end());
    want_globals.push_back(given(r));
  }
  // NCCL's path gathers what was quantized first; on 2.28 it needs symmetric staging for that
  // (tested in the GPU suite), so it is tried here where the loaded NCCL needs the receive
  // side only.
  bool const nccl_can =
      caps().symmetric_memory && nccl_symmetric_needs_peer_side_only(caps().runtime_version);
  Bf16Span const in{reinterpret_cast<bf16*>(input.get()), n};
  for (PathChoice choice : paths_to_try(nccl_can, lsa_can())) {
    data.poison();
    block_scales.poison();
    globals.poison();
    Options o;
    o.path = choice;
    Plan const plan = quantize_all_gather(
        w.comm, in, Nvfp4View{data.get(), block_scales.get(), globals.get(), n * N}, scale.get(),
        w.stream, o);
    sync();
    std::string const at = std::string("nvfp4 quantize_all_gather (") + to_string(choice) + ")";
    expect_path(choice, plan.path, at);
    auto const got = data.download();
    EXPECT_SAME_VECTORS(std::vector<std::uint8_t>(got.begin(), got.begin() + n / 2 * N), want_data,
                        at + " data");
    auto const got_scales = block_scales.download();
    EXPECT_SAME_VECTORS(got_scales, want_scales, at + " block scales");
    EXPECT_SAME_VECTORS(globals.download(), want_globals, at + " global scales");
  }

  // FP8 e4m3 with each rank's given scale: codes = encode(x / scale).
  std::vector<std::uint8_t> want_codes;
  for (int r = 0; r < w.size; ++r) {
    float const inv = 1.0f / given(r);
    for (float v : bf16_rounded_input(n, r))
      want_codes.push_back(encode_fp8(v * inv, Fp8Format::E4M3));
  }
  for (PathChoice choice : paths_to_try(nccl_can, lsa_can())) {
    data.poison();
    globals.poison();
    Options o;
    o.path = choice;
    Plan const plan =
        quantize_all_gather(w.comm, in, Fp8View{data.get(), globals.get(), n * N, Fp8Format::E4M3},
                            scale.get(), w.stream, o);
    sync();
    std::string const at = std::string("fp8 quantize_all_gather (") + to_string(choice) + ")";
    expect_path(choice, plan.path, at);
    EXPECT_SAME_VECTORS(data.download(), want_codes, at + " codes");
    EXPECT_SAME_VECTORS(globals.download(), want_globals, at + " scales");
  }
}

// ---- reduce-scatter ------------------------------------------------------------------------

// The device fuses multiply-adds, the host does not: each of the ranks' steps may round
// differently by half an ulp of the partial sum.
template <class Q>
float fma_bound(const std::vector<Q>& inputs, std::size_t i) {
  double magnitude = 0.0;
  for (const auto& r : inputs) magnitude += std::fabs(r.value(i));
  return static_cast<float>(magnitude * static_cast<double>(inputs.size()) * 1.2e-7) + 1e-30f;
}

// Re-quantized output (the input's format, scale computed from the sum): bit-identical to the
// host quantizing the same path's fp32 result, data, block scales and scale alike.
template <class Run>
void check_requantized(const std::vector<HostNvfp4>&, const std::vector<float>& fp32, Run& run,
                       const Options& o, Path expected, const std::string& at) {
  std::size_t const shard = fp32.size();
  DeviceArray<std::uint8_t> data(shard / 2), scales(shard / kNvfp4BlockSize);
  DeviceArray<float> global(1);
  settle();
  Plan const p = run(Nvfp4View{data.get(), scales.get(), global.get(), shard}, o);
  sync();
  EXPECT_EQ(p.path, expected) << at << " re-quantized";
  HostNvfp4 const want = HostNvfp4::quantize(fp32);
  std::vector<std::uint8_t> got_data(shard / 2), got_scales(shard / kNvfp4BlockSize);
  float got_global = 0.0f;
  copy_sync(got_data.data(), data.get(), got_data.size());
  copy_sync(got_scales.data(), scales.get(), got_scales.size());
  copy_sync(&got_global, global.get(), sizeof(float));
  EXPECT_EQ(got_global, want.global_scale) << at << " re-quantized global scale";
  EXPECT_SAME_VECTORS(got_scales, want.scales, at + " re-quantized block scales");
  EXPECT_SAME_VECTORS(got_data, want.data, at + " re-quantized data");
}

template <class Run>
void check_requantized(const std::vector<HostFp8>& all, const std::vector<float>& fp32, Run& run,
                       const Options& o, Path expected, const std::string& at) {
  std::size_t const shard = fp32.size();
  Fp8Format const f = all.front().format;
  DeviceArray<std::uint8_t> codes(shard);
  DeviceArray<float> scale(1);
  settle();
  Plan const p = run(Fp8View{codes.get(), scale.get(), shard, f}, o);
  sync();
  EXPECT_EQ(p.path, expected) << at << " re-quantized";
  HostFp8 const want = HostFp8::quantize(fp32, f);
  std::vector<std::uint8_t> got(shard);
  float got_scale = 0.0f;
  copy_sync(got.data(), codes.get(), shard);
  copy_sync(&got_scale, scale.get(), sizeof(float));
  EXPECT_EQ(got_scale, want.scale) << at << " re-quantized scale";
  EXPECT_SAME_VECTORS(got, want.codes, at + " re-quantized codes");
}

// Reduce-scatter of a quantized input to fp32, bf16 and its own format on every path: fp32
// against the host's rank-order fp32 sum, bf16 bit-identical to the same path's fp32 result
// rounded once, the re-quantized output as check_requantized says.
template <class Q, class Run>
void check_quantized_reduce(const std::vector<Q>& all, std::size_t shard, const char* what,
                            Run&& run) {
  World& w = world();
  std::size_t const first = static_cast<std::size_t>(w.rank) * shard;
  auto const want = reduce_like_kernel(all, first, shard);
  DeviceArray<float> out32(shard);
  DeviceArray<bf16> out16(shard);
  settle();
  for (PathChoice choice : paths_to_try(false, lsa_can())) {
    Options o;
    o.path = choice;
    poison_on_stream(out32.get(), out32.bytes());
    poison_on_stream(out16.get(), out16.bytes());
    Plan const p32 = run(Fp32Span{out32.get(), shard}, o);
    Plan const p16 = run(Bf16Span{out16.get(), shard}, o);
    sync();
    std::string const at =
        std::string(what) + " (" + to_string(choice) + " -> " + to_string(p32.path) + ")";
    EXPECT_EQ(p16.path, p32.path) << at;
    expect_path(choice, p32.path, at);
    std::vector<float> got(shard);
    std::vector<bf16> got16(shard);
    copy_sync(got.data(), out32.get(), out32.bytes());
    copy_sync(got16.data(), out16.get(), out16.bytes());
    std::size_t bad = 0, bad16 = 0;
    for (std::size_t i = 0; i < shard; ++i) {
      if (!(std::fabs(got[i] - want[i]) <= fma_bound(all, first + i))) ++bad;
      std::uint16_t bits = 0;
      std::memcpy(&bits, &got16[i], 2);
      if (bits != float_to_bf16_bits(got[i])) ++bad16;
    }
    EXPECT_EQ(bad, 0u) << at << ": fp32 elements off the host's rank-order sum";
    EXPECT_EQ(bad16, 0u) << at << ": bf16 elements not the fp32 result rounded once";
    check_requantized(all, got, run, o, p32.path, at);
  }
}

// Every rank's input as random floats, quantized on the host.
std::vector<float> reduce_input(int rank, std::size_t total) {
  return random_floats(total, seed_of(rank, 5), 1.0f + static_cast<float>(rank));
}
constexpr std::size_t kReduceShard = 16 * 2048;

TEST(MultiRankReduceScatter, Nvfp4ToFp32Bf16AndNvfp4OnEveryPath) {
  World& w = world();
  std::size_t const total = kReduceShard * static_cast<std::size_t>(w.size);
  std::vector<HostNvfp4> q;
  for (int r = 0; r < w.size; ++r) q.push_back(HostNvfp4::quantize(reduce_input(r, total)));
  HostNvfp4 const& mine = q[static_cast<std::size_t>(w.rank)];
  PoolArray<std::uint8_t> data(total / 2), scales(total / kNvfp4BlockSize);
  PoolArray<float> global(1);
  data.upload(mine.data);
  scales.upload(mine.scales);
  global.upload({mine.global_scale});
  Nvfp4View const send{data.get(), scales.get(), global.get(), total};
  check_quantized_reduce(q, kReduceShard, "nvfp4 reduce_scatter", [&](auto out, const Options& o) {
    return reduce_scatter(w.comm, send, out, w.stream, o);
  });
}

TEST(MultiRankReduceScatter, Fp8ToFp32Bf16AndFp8OnEveryPath) {
  World& w = world();
  std::size_t const total = kReduceShard * static_cast<std::size_t>(w.size);
  std::vector<HostFp8> q8;
  for (int r = 0; r < w.size; ++r) {
    q8.push_back(HostFp8::quantize(reduce_input(r, total), Fp8Format::E4M3));
  }
  PoolArray<std::uint8_t> codes(total);
  PoolArray<float> scale8(1);
  codes.upload(q8[static_cast<std::size_t>(w.rank)].codes);
  scale8.upload({q8[static_cast<std::size_t>(w.rank)].scale});
  Fp8View const send8{codes.get(), scale8.get(), total, Fp8Format::E4M3};
  check_quantized_reduce(q8, kReduceShard, "fp8 reduce_scatter", [&](auto out, const Options& o) {
    return reduce_scatter(w.comm, send8, out, w.stream, o);
  });
}

// Grows the communicator's workspace past what any earlier call needed: an eager fallback
// reduce-scatter of `shard` elements per rank from plain memory.
void grow_workspace(std::size_t shard) {
  World& w = world();
  std::size_t const total = shard * static_cast<std::size_t>(w.size);
  DeviceArray<std::uint8_t> data(total / 2), scales(total / kNvfp4BlockSize);
  DeviceArray<float> global(1), out(shard);
  settle();
  float const one = 1.0f;
  copy_sync(global.get(), &one, sizeof one);
  Options o;
  o.path = PathChoice::Fallback;
  reduce_scatter(w.comm, Nvfp4View{data.get(), scales.get(), global.get(), total},
                 Fp32Span{out.get(), shard}, w.stream, o);
  sync();
}

// A quantized reduce-scatter captured in a CUDA graph and replayed with new inputs each time:
// every replay matches the host's sum of that replay's inputs (not only the eager run), on every
// path, also after a larger call grew the communicator's workspace between replays (the graph
// still holds the old one). The LSA kernel's barrier epochs must survive replays too.
TEST(MultiRankReduceScatter, Nvfp4GraphReplaysMatchTheHost) {
  World& w = world();
  std::size_t const shard = 16 * 512;
  std::size_t const total = shard * static_cast<std::size_t>(w.size);
  std::size_t const first = static_cast<std::size_t>(w.rank) * shard;
  PoolArray<std::uint8_t> data(total / 2), scales(total / kNvfp4BlockSize);
  PoolArray<float> global(1), out(shard);
  Nvfp4View const send{data.get(), scales.get(), global.get(), total};
  std::size_t growth = 4 * kReduceShard;
  for (PathChoice choice : paths_to_try(false, lsa_can())) {
    Options o;
    o.path = choice;
    // As a user would: once eagerly (the workspace cannot grow during capture), then capture.
    reduce_scatter(w.comm, send, Fp32Span{out.get(), shard}, w.stream, o);
    sync();
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(w.stream, cudaStreamCaptureModeThreadLocal));
    Plan const plan = reduce_scatter(w.comm, send, Fp32Span{out.get(), shard}, w.stream, o);
    SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(w.stream, &graph));
    SYMMCOMM_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
    std::string const at = std::string("captured nvfp4 reduce_scatter (") + to_string(choice) + ")";
    expect_path(choice, plan.path, at);
    for (int replay = 0; replay < 3; ++replay) {
      if (replay == 2) {
        grow_workspace(growth);
        growth += kReduceShard;
      }
      std::vector<HostNvfp4> q;
      for (int r = 0; r < w.size; ++r) {
        q.push_back(HostNvfp4::quantize(
            random_floats(total, seed_of(r, 40 + replay), 1.0f + static_cast<float>(replay))));
      }
      HostNvfp4 const& mine = q[static_cast<std::size_t>(w.rank)];
      data.upload(mine.data);
      scales.upload(mine.scales);
      global.upload({mine.global_scale});
      out.poison();
      SYMMCOMM_CUDA_TRY(cudaGraphLaunch(exec, w.stream));
      sync();
      auto const want = reduce_like_kernel(q, first, shard);
      std::vector<float> const got = out.download();
      std::size_t bad = 0;
      for (std::size_t i = 0; i < shard; ++i) {
        if (!(std::fabs(got[i] - want[i]) <= fma_bound(q, first + i))) ++bad;
      }
      EXPECT_EQ(bad, 0u) << at << ", replay " << replay << ": elements off the host's sum";
    }
    SYMMCOMM_CUDA_TRY(cudaGraphExecDestroy(exec));
    SYMMCOMM_CUDA_TRY(cudaGraphDestroy(graph));
  }
}

TEST(MultiRankReduceScatter, Bf16SumsAreExactOnEveryPath) {
  World& w = world();
  std::size_t const shard = 1 << 15;
  std::size_t const total = shard * static_cast<std::size_t>(w.size);
  // Small integers: every partial sum is exact in bf16, whatever order NCCL adds in.
  auto const value = [](int rank, std::size_t i) {
    return static_cast<float>(static_cast<int>((i * 7 + static_cast<std::size_t>(rank) * 13) % 17) -
                              8);
  };
  std::vector<float> mine(total);
  for (std::size_t i = 0; i < total; ++i) mine[i] = value(w.rank, i);
  PoolArray<std::uint16_t> send(total), recv(shard);
  send.upload(to_bf16_bits(mine));
  std::vector<std::uint16_t> want(shard);
  for (std::size_t i = 0; i < shard; ++i) {
    float s = 0.0f;
    for (int r = 0; r < w.size; ++r) s += value(r, static_cast<std::size_t>(w.rank) * shard + i);
    want[i] = float_to_bf16_bits(s);
  }
  for (PathChoice choice : paths_to_try(caps().symmetric_memory, false)) {
    recv.poison();
    Options o;
    o.path = choice;
    Plan const plan =
        reduce_scatter(w.comm, Bf16Span{reinterpret_cast<bf16*>(send.get()), total},
                       Bf16Span{reinterpret_cast<bf16*>(recv.get()), shard}, w.stream, o);
    sync();
    std::string const at = std::string("bf16 reduce_scatter (") + to_string(choice) + ")";
    expect_path(choice, plan.path, at);
    EXPECT_SAME_VECTORS(recv.download(), want, at);
  }
}

}  // namespace
}  // namespace symmcomm::test
