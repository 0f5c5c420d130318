// MoE dispatch and combine by expert (symmcomm/collectives/moe.hpp): the group, its checks, the
// choice of its path, and the LSA path's launches of kernels/moe.hpp over the group's window
// (the fallback's are in moe_fallback.cpp).

#include "symmcomm/collectives/moe.hpp"

#include <cstdint>
#include <sstream>
#include <string>

#include "collectives/call_prerequisites.hpp"
#include "collectives/device_view.hpp"
#include "collectives/moe_group_impl.hpp"
#include "comm/launch_order.hpp"
#include "core/cuda_utils.hpp"
#include "kernels/moe.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/logging.hpp"
#include "symmcomm/memory/symmetric_buffer.hpp"

namespace symmcomm {

using detail::CommState;

// The dispatch's tensors at their offsets from `base` (either path's buffers).
void MoeGroup::Impl::set_buffers(char* base, std::size_t rows, std::size_t scales,
                                 std::size_t expert_count, std::size_t words) {
  buffers.data = reinterpret_cast<std::uint8_t*>(base + rows);
  buffers.block_scales =
      shape.bf16_wire() ? nullptr : reinterpret_cast<std::uint8_t*>(base + scales);
  buffers.expert_count = reinterpret_cast<std::int32_t*>(base + expert_count);
  auto* w = reinterpret_cast<std::int32_t*>(base + words);
  buffers.overflow = w;
  buffers.error = w + 1;
  buffers.global_scale = reinterpret_cast<float*>(w + 2);
  tokens = w + 3;
}

// The LSA path's peers: the communicator's, with the group's window in slot 0.
detail::lsa::Peers MoeGroup::Impl::peers() const {
  return detail::window_peers(*state, window.window());
}

// Before and after each LSA launch sequence: the communicator's order of windowed work across
// streams, and the graphs that captured it (as every collective).
void MoeGroup::Impl::before(cudaStream_t stream) const {
  detail::order_after_last_use(*state, stream);
}
void MoeGroup::Impl::after(cudaStream_t stream) const {
  detail::CaptureInfo const capture = detail::capture_info(stream);
  detail::mark_use(*state, stream, capture);
  detail::note_graph_use(*state, capture);
  state->stats.calls[static_cast<std::size_t>(Path::LsaKernel)].fetch_add(
      1, std::memory_order_relaxed);
}

static_assert(kMoeErrorExpertId == detail::lsa::kMoeErrorExpertId &&
                  kMoeErrorNumTokens == detail::lsa::kMoeErrorNumTokens &&
                  kMoeErrorGlobalScale == detail::lsa::kMoeErrorGlobalScale,
              "the public error bits are the kernels'");

// The group's window: the dispatch's tensors and what the kernels exchange (collective).
void MoeGroup::Impl::make_lsa(const Communicator& user, cudaStream_t stream) {
  layout = detail::lsa::MoeLayout::of(shape);
  window = SymmetricBuffer(user, layout.bytes, stream);
  auto* base = static_cast<char*>(window.data());
  set_buffers(base, layout.rows, layout.scales, layout.expert_count, layout.words);
  pair_row = reinterpret_cast<std::int32_t*>(base + layout.pair_row);
  pair_expert = reinterpret_cast<std::int32_t*>(base + layout.pair_expert);
  if (shape.in_place) buffers.expert_out = reinterpret_cast<bf16*>(base + layout.expert_out);
  weights = reinterpret_cast<float*>(base + layout.weights);
  // Nothing dispatched yet: no pair placed (row -1), no rows, no error - what check() and a
  // combine read before any dispatch; rows and scales zero until a dispatch writes them (a
  // dense GEMM stand-in reads the padding rows too).
  SYMMCOMM_CUDA_TRY(cudaMemsetAsync(base, 0, layout.bytes, stream));
  SYMMCOMM_CUDA_TRY(cudaMemsetAsync(pair_row, 0xff, layout.weights - layout.pair_row, stream));
}

// The two launches of a dispatch (arguments checked): the counts, then `rows` (its tokens set).
void MoeGroup::Impl::dispatch_lsa(detail::lsa::MoeRowsArgs rows, const float* global_scale,
                                  const std::int32_t* topk_idx, const float* topk_weights,
                                  const std::int32_t* num_tokens, cudaStream_t stream) {
  detail::refuse_in_group("MoeGroup::dispatch", "symmcomm's own kernels");
  detail::lsa::Peers const p = peers();
  detail::lsa::MoeCountsArgs c;
  c.shape = shape;
  c.topk_idx = topk_idx;
  c.topk_weights = topk_weights;
  c.num_tokens = num_tokens;
  c.global_scale = global_scale;
  c.table = layout.table;
  c.pair_row = pair_row;
  c.pair_expert = pair_expert;
  c.weights = weights;
  c.expert_count = buffers.expert_count;
  c.overflow = buffers.overflow;
  c.error = buffers.error;
  c.group_scale = buffers.global_scale;
  c.tokens = tokens;
  c.epoch = reinterpret_cast<std::int32_t*>(static_cast<char*>(window.data()) + layout.epoch);
  rows.shape = shape;
  rows.topk_idx = topk_idx;
  rows.pair_row = pair_row;
  rows.tokens = tokens;
  rows.layout = layout;
  before(stream);
  detail::lsa::moe_counts(p, c, stream);
  detail::lsa::moe_rows(p, rows, stream);
  after(stream);
}

// In place: the outputs copied into the window unless the GEMM wrote them there, then each
// token's rows read from their experts' ranks and summed. Else the send-back and the sum.
void MoeGroup::Impl::combine_lsa(const bf16* expert_out, bf16* out, cudaStream_t stream) {
  detail::refuse_in_group("MoeGroup::combine", "symmcomm's own kernels");
  if (shape.in_place) {
    detail::lsa::MoePullArgs p;
    p.shape = shape;
    p.layout = layout;
    p.pair_row = pair_row;
    p.pair_expert = pair_expert;
    p.weights = weights;
    p.tokens = tokens;
    p.out = out;
    before(stream);
    if (expert_out != buffers.expert_out) {
      detail::lsa::moe_copy_placed_rows(shape, buffers.expert_count, expert_out, buffers.expert_out,
                                        stream);
    }
    detail::lsa::moe_pull(peers(), p, stream);
    after(stream);
    return;
  }
  detail::lsa::MoeSendBackArgs b;
  b.shape = shape;
  b.expert_out = expert_out;
  b.expert_count = buffers.expert_count;
  b.layout = layout;
  detail::lsa::MoeSumArgs s;
  s.shape = shape;
  s.back = reinterpret_cast<const bf16*>(static_cast<char*>(window.data()) + layout.back);
  s.pair_row = pair_row;
  s.weights = weights;
  s.tokens = tokens;
  s.out = out;
  before(stream);
  detail::lsa::moe_send_back(peers(), b, stream);
  detail::lsa::moe_sum(s, stream);
  after(stream);
}

namespace {

// Why the group's kernels cannot run on `state` (empty: they can).
std::string unsupported_reason(const CommState& state) {
  if (!state.caps.lsa_covers(state.size)) {
    return state.caps.symmetric_memory ? "the LSA team does not span the communicator"
                                       : "no symmetric memory: " + state.caps.reason;
  }
  if (!detail::lsa_kernel_usable(state)) {
    return "symmcomm's LSA kernels cannot run here (a build without NCCL's device API, no "
           "device communicator, or more than " +
           std::to_string(detail::lsa::kMaxRanks) + " ranks)";
  }
  return {};
}

void check_field(bool ok, const char* field, long long value, const char* rule) {
  SYMMCOMM_EXPECTS(ok, "MoeGroup: config." << field << " = " << value << ": " << rule);
}

MoeConfig resolved(const MoeConfig& c, int ranks) {
  check_field(c.num_experts >= 1 && c.num_experts <= detail::lsa::kMaxMoeExperts &&
                  c.num_experts % ranks == 0,
              "num_experts", c.num_experts,
              ("must be 1..1024 and a multiple of comm.size() " + std::to_string(ranks)).c_str());
  check_field(c.top_k >= 1 && c.top_k <= c.num_experts, "top_k", c.top_k, "must be 1..num_experts");
  check_field(c.hidden >= 64 && c.hidden % 64 == 0, "hidden", c.hidden,
              "must be a positive multiple of 64 (whole NVFP4 blocks in whole 4-column scale "
              "tiles)");
  check_field(c.max_tokens_per_rank >= 1, "max_tokens_per_rank", c.max_tokens_per_rank,
              "must be at least 1");
  check_field(c.capacity >= 0, "capacity", c.capacity,
              "must be 0 (comm.size() x max_tokens_per_rank) or more");
  SYMMCOMM_EXPECTS(
      c.wire == DataType::Nvfp4 || c.wire == DataType::Fp8E4M3 || c.wire == DataType::Bf16,
      "MoeGroup: config.wire = " << to_string(c.wire) << ": must be nvfp4, fp8e4m3 or bf16");
  check_field(c.wire != DataType::Fp8E4M3 || c.hidden % kFp8BlockSize == 0, "hidden", c.hidden,
              "must be a multiple of 128 on an fp8e4m3 wire (one scale per 128 elements)");
  MoeConfig r = c;
  long long const pairs = static_cast<long long>(c.max_tokens_per_rank) * c.top_k;
  long long const all = static_cast<long long>(ranks) * c.max_tokens_per_rank;
  check_field(pairs * ranks <= INT32_MAX, "max_tokens_per_rank", c.max_tokens_per_rank,
              "times top_k and comm.size() exceeds int32 (a row's origin is one int32)");
  if (r.capacity == 0) r.capacity = static_cast<int>(all);
  return r;
}

void check_pointer(const void* p, std::size_t align, const char* name) {
  SYMMCOMM_EXPECTS(p != nullptr, "MoeGroup: " << name << " is null");
  SYMMCOMM_EXPECTS(reinterpret_cast<std::uintptr_t>(p) % align == 0,
                   "MoeGroup: " << name << " " << p << " is not " << align << "-byte aligned");
}

}  // namespace

bool MoeGroup::supported(const Communicator& comm, std::string* why) {
  std::string const reason = unsupported_reason(detail::usable_state(comm, "MoeGroup"));
  if (why != nullptr) *why = reason;
  return reason.empty();
}

MoeGroup::MoeGroup(const Communicator& comm, const MoeConfig& config, cudaStream_t stream,
                   PathChoice path)
    : impl_(std::make_unique<Impl>()) {
  CommState& state = detail::usable_state(comm, "MoeGroup");
  SYMMCOMM_EXPECTS(path != PathChoice::NcclSymmetric,
                   "MoeGroup: path NcclSymmetric: NCCL has no MoE dispatch; the group runs "
                   "symmcomm's LSA kernels or its fallback over NCCL's collectives");
  std::string const lsa_blocked = unsupported_reason(state);
  SYMMCOMM_EXPECTS(path != PathChoice::LsaKernel || lsa_blocked.empty(),
                   "MoeGroup: path LsaKernel cannot be taken: " << lsa_blocked);
  Impl& g = *impl_;
  g.state = detail::state_of(comm);
  g.config = resolved(config, state.size);
  g.shape.ranks = state.size;
  g.shape.experts = g.config.num_experts;
  g.shape.top_k = g.config.top_k;
  g.shape.hidden = g.config.hidden;
  g.shape.max_tokens = g.config.max_tokens_per_rank;
  g.shape.capacity = g.config.capacity;
  g.shape.wire = g.config.wire;
  g.shape.in_place = g.config.combine_in_place;
  if (path != PathChoice::Fallback && lsa_blocked.empty()) {
    g.path = Path::LsaKernel;
    g.why = std::string(
                "lsa: symmcomm's MoE kernels over the group's window: each rank's per-expert "
                "counts exchanged on the device, then each routed row written once, straight "
                "into its expert's rank (masked layout, the grouped GEMM's scale layout); ") +
            (g.shape.in_place ? "combine reads each token's rows where its experts computed them "
                                "and sums them in fp32"
                              : "combine sends each output row back to its token's rank and sums "
                                "there in fp32");
    g.make_lsa(comm, stream);
  } else {
    g.path = Path::Fallback;
    g.why =
        std::string(
            "fallback: every rank's rows (in the wire's format) and routing all-gathered by NCCL, "
            "each rank placing the rows of its experts; combine sums each token's "
            "rows per rank in fp32 and reduce-scatters the sums in fp32 (") +
        (path == PathChoice::Fallback ? "asked for" : "not the LSA path: " + lsa_blocked) + ")";
    g.make_fallback(stream);
  }
  SYMMCOMM_LOG_DEBUG("MoeGroup: " << g.config.num_experts << " experts, top " << g.config.top_k
                                  << ", hidden " << g.config.hidden << ", "
                                  << g.config.max_tokens_per_rank << " tokens per rank, capacity "
                                  << g.config.capacity << ": " << g.why);
}

MoeGroup::~MoeGroup() = default;
MoeGroup::MoeGroup(MoeGroup&&) noexcept = default;
MoeGroup& MoeGroup::operator=(MoeGroup&&) noexcept = default;

const MoeConfig& MoeGroup::config() const noexcept {
  return impl_->config;
}
int MoeGroup::local_experts() const noexcept {
  return impl_->shape.local_experts();
}
std::size_t MoeGroup::expert_scale_bytes() const noexcept {
  return impl_->shape.expert_scale_bytes();
}
std::size_t MoeGroup::window_bytes() const noexcept {
  return impl_->path == Path::LsaKernel ? impl_->layout.bytes : 0;
}
Path MoeGroup::path() const noexcept {
  return impl_->path;
}
const MoeDispatch& MoeGroup::buffers() const noexcept {
  return impl_->buffers;
}

std::string MoeGroup::reason() const {
  return impl_->why;
}

namespace {

// The routing's pointers, checked by both dispatches.
void check_routing(const std::int32_t* topk_idx, const float* topk_weights,
                   const std::int32_t* num_tokens) {
  check_pointer(topk_idx, 4, "topk_idx");
  check_pointer(topk_weights, 4, "topk_weights");
  check_pointer(num_tokens, 4, "num_tokens");
}

}  // namespace

const MoeDispatch& MoeGroup::dispatch(ConstNvfp4View x, const std::int32_t* topk_idx,
                                      const float* topk_weights, const std::int32_t* num_tokens,
                                      cudaStream_t stream) {
  SYMMCOMM_EXPECTS(impl_, "MoeGroup: dispatch on a moved-from group");
  Impl& g = *impl_;
  g.state->check_usable("MoeGroup::dispatch");
  SYMMCOMM_EXPECTS(x.count == g.tokens_elements(),
                   "MoeGroup::dispatch: x.count = " << x.count
                                                    << "; expected max_tokens_per_rank x hidden = "
                                                    << g.tokens_elements());
  SYMMCOMM_EXPECTS(g.shape.wire == DataType::Nvfp4,
                   "MoeGroup::dispatch: x is NVFP4 but the group's wire is "
                       << to_string(g.shape.wire) << " (config.wire): pass BF16 tokens");
  SYMMCOMM_EXPECTS(x.scale_layout == ScaleLayout::Linear,
                   "MoeGroup::dispatch: x.block_scales must be linear (one row of hidden / 16 "
                   "scales per token); the dispatch swizzles them");
  check_pointer(x.data, 16, "x.data");
  check_pointer(x.block_scales, 4, "x.block_scales");
  check_pointer(x.global_scale, 4, "x.global_scale");
  check_routing(topk_idx, topk_weights, num_tokens);
  detail::lsa::MoeRowsArgs r;
  r.data = x.data;
  r.block_scales = x.block_scales;
  if (g.path == Path::LsaKernel) {
    g.dispatch_lsa(r, x.global_scale, topk_idx, topk_weights, num_tokens, stream);
  } else {
    g.dispatch_fallback(r, x.global_scale, topk_idx, topk_weights, num_tokens, stream);
  }
  return g.buffers;
}

const MoeDispatch& MoeGroup::dispatch(ConstBf16Span x, const float* global_scale,
                                      const std::int32_t* topk_idx, const float* topk_weights,
                                      const std::int32_t* num_tokens, cudaStream_t stream) {
  SYMMCOMM_EXPECTS(impl_, "MoeGroup: dispatch on a moved-from group");
  Impl& g = *impl_;
  g.state->check_usable("MoeGroup::dispatch");
  SYMMCOMM_EXPECTS(x.count == g.tokens_elements(),
                   "MoeGroup::dispatch: x.count = " << x.count
                                                    << "; expected max_tokens_per_rank x hidden = "
                                                    << g.tokens_elements());
  check_pointer(x.data, 16, "x");
  check_routing(topk_idx, topk_weights, num_tokens);
  detail::lsa::MoeRowsArgs r;
  if (g.shape.bf16_wire()) {
    SYMMCOMM_EXPECTS(global_scale == nullptr,
                     "MoeGroup::dispatch: global_scale must be null on "
                     "a BF16 wire (the rows move unquantized)");
    r.data = reinterpret_cast<const std::uint8_t*>(x.data);
  } else if (g.shape.fp8_wire()) {
    SYMMCOMM_EXPECTS(global_scale == nullptr,
                     "MoeGroup::dispatch: global_scale must be null on an fp8e4m3 wire (each "
                     "128-element block gets its own scale in the dispatch)");
    r.bf16_tokens = x.data;
  } else {
    check_pointer(global_scale, 4, "global_scale");
    r.bf16_tokens = x.data;
    r.global_scale = global_scale;
  }
  if (g.path == Path::LsaKernel) {
    g.dispatch_lsa(r, global_scale, topk_idx, topk_weights, num_tokens, stream);
  } else {
    g.dispatch_fallback(r, global_scale, topk_idx, topk_weights, num_tokens, stream);
  }
  return g.buffers;
}

void MoeGroup::combine(const bf16* expert_out, bf16* out, cudaStream_t stream) {
  SYMMCOMM_EXPECTS(impl_, "MoeGroup: combine on a moved-from group");
  Impl& g = *impl_;
  g.state->check_usable("MoeGroup::combine");
  check_pointer(expert_out, 16, "expert_out");
  check_pointer(out, 16, "out");
  if (g.path == Path::LsaKernel) {
    g.combine_lsa(expert_out, out, stream);
  } else {
    g.combine_fallback(expert_out, out, stream);
  }
}

std::int32_t MoeGroup::check(cudaStream_t stream) const {
  SYMMCOMM_EXPECTS(impl_, "MoeGroup: check on a moved-from group");
  std::int32_t words[2] = {};
  SYMMCOMM_CUDA_TRY(cudaMemcpyAsync(words, impl_->buffers.overflow, sizeof words,
                                    cudaMemcpyDeviceToHost, stream));
  SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(stream));
  std::int32_t const bits = words[1];
  if (bits != 0) {
    std::ostringstream os;
    os << "MoeGroup::dispatch:";
    if (bits & kMoeErrorExpertId) {
      os << " topk_idx: an expert id outside -1.." << impl_->config.num_experts - 1
         << " on some rank (that pair was not placed);";
    }
    if (bits & kMoeErrorNumTokens) {
      os << " num_tokens: outside 0.." << impl_->config.max_tokens_per_rank
         << " on some rank (only its first max_tokens_per_rank tokens were placed);";
    }
    if (bits & kMoeErrorGlobalScale) {
      os << " x.global_scale: not the same on every rank (rows of one expert need one NVFP4 "
            "global scale; quantize with the layer's static scale);";
    }
    SYMMCOMM_FAIL(os.str());
  }
  return words[0];
}

}  // namespace symmcomm
