// Loopback runs of the LSA kernels (symmcomm/testing/loopback.hpp): one launch per virtual
// rank, peers addressed through a table of the virtual ranks' buffers.

#include "symmcomm/testing/loopback.hpp"

#include <optional>
#include <string>
#include <type_traits>

#include "collectives/count_arithmetic.hpp"
#include "collectives/lsa_args.hpp"
#include "collectives/scale_swizzle.hpp"
#include "kernels/lsa.hpp"
#include "lsa_loopback.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm::loopback {
namespace {

namespace lsa = detail::lsa;

std::string at(const char* what, std::size_t r) {
  return std::string(what) + "[" + std::to_string(r) + "]";
}

std::size_t check_ranks(std::size_t a, std::size_t b, const char* a_name, const char* b_name) {
  SYMMCOMM_EXPECTS(a >= 1 && a <= static_cast<std::size_t>(kMaxVirtualRanks),
                   a_name << " holds " << a << " views; loopback runs 1.." << kMaxVirtualRanks
                          << " virtual ranks");
  SYMMCOMM_EXPECTS(a == b, a_name << " holds " << a << " views but " << b_name << " holds " << b);
  return a;
}

using detail::displacements;
using detail::scaled;

// One tensor gathered byte for byte: bytes[r] from send[r] land in every recv[q] after the
// bytes of ranks < r.
struct GatherTensor {
  std::vector<const void*> send;
  std::vector<void*> recv;
  std::vector<std::size_t> bytes;
  const detail::SwizzledScales* swizzle = nullptr;  // NVFP4 block scales written swizzled
};

void run_gather(const std::vector<GatherTensor>& tensors, cudaStream_t stream) {
  std::size_t const n = tensors.front().send.size();
  for (std::size_t r = 0; r < n; ++r) {
    lsa::LoopbackPeers peers(static_cast<int>(r), static_cast<int>(n));
    std::vector<detail::GatherPart> parts;
    for (std::size_t t = 0; t < tensors.size(); ++t) {
      for (std::size_t q = 0; q < n; ++q) peers.base[t][q] = tensors[t].recv[q];
      detail::GatherPart p;
      p.send = tensors[t].send[r];
      p.bytes = tensors[t].bytes;
      p.swizzle = tensors[t].swizzle;
      parts.push_back(std::move(p));
    }
    // The same builder as production, with each view's own pointer as the base.
    lsa::gather(peers, detail::gather_args(parts, std::vector<std::size_t>(parts.size(), 0), r, n),
                stream);
  }
}

// Per-rank element counts of `send`, checked against every recv's count.
template <class Send, class Recv>
std::vector<std::size_t> gather_counts(const std::vector<Send>& send,
                                       const std::vector<Recv>& recv) {
  std::size_t const n = check_ranks(send.size(), recv.size(), "send", "recv");
  std::vector<std::size_t> counts(n);
  std::size_t total = 0;
  for (std::size_t r = 0; r < n; ++r) {
    counts[r] = send[r].count;
    total += counts[r];
  }
  for (std::size_t r = 0; r < n; ++r) {
    SYMMCOMM_EXPECTS(recv[r].count == total, at("recv", r)
                                                 << ".count " << recv[r].count
                                                 << " is not the sum of send counts " << total);
  }
  return counts;
}

// Shard counts of a reduce-scatter, checked against every send's count.
template <class Send, class Recv>
std::vector<std::size_t> shard_counts(const std::vector<Send>& send,
                                      const std::vector<Recv>& recv) {
  std::size_t const n = check_ranks(send.size(), recv.size(), "send", "recv");
  std::vector<std::size_t> counts(n);
  std::size_t total = 0;
  for (std::size_t r = 0; r < n; ++r) {
    SYMMCOMM_EXPECTS(recv[r].count % 16 == 0,
                     at("recv", r) << ".count " << recv[r].count << " is not a multiple of 16");
    counts[r] = recv[r].count;
    total += counts[r];
  }
  for (std::size_t r = 0; r < n; ++r) {
    SYMMCOMM_EXPECTS(send[r].count == total, at("send", r)
                                                 << ".count " << send[r].count
                                                 << " is not the sum of recv counts " << total);
  }
  return counts;
}

// Virtual rank r's view of the N quantized tensors `views` (NVFP4 or FP8): slot 0 = data,
// 1 = block scales (NVFP4; FP8 repeats the data, unused), 2 = the scale float.
template <class View>
lsa::LoopbackPeers quantized_peers(const std::vector<View>& views, std::size_t r,
                                   const char* name) {
  lsa::LoopbackPeers peers(static_cast<int>(r), static_cast<int>(views.size()));
  for (std::size_t q = 0; q < views.size(); ++q) {
    peers.base[0][q] = views[q].data;
    if constexpr (std::is_same_v<View, Nvfp4View>) {
      peers.base[1][q] = views[q].block_scales;
      peers.base[2][q] = views[q].global_scale;
    } else {
      peers.base[1][q] = views[q].data;
      peers.base[2][q] = views[q].scale;
      SYMMCOMM_EXPECTS(views[q].format == views[0].format,
                       at(name, q) << ".format differs from " << name << "[0].format");
    }
  }
  return peers;
}

// The swizzled layout every rank's receive view asks for (all the same), or nullopt for linear.
std::optional<detail::SwizzledScales> recv_swizzle(const std::vector<Nvfp4View>& recv,
                                                   const std::vector<std::size_t>& counts,
                                                   const char* operation) {
  std::optional<detail::SwizzledScales> swizzle;
  for (std::size_t r = 0; r < recv.size(); ++r) {
    SYMMCOMM_EXPECTS(
        recv[r].scale_layout == recv[0].scale_layout &&
            recv[r].row_elements == recv[0].row_elements,
        operation << ": " << at("recv", r)
                  << "'s scale layout differs from recv[0]'s (every rank's must match)");
    swizzle = detail::swizzled_scales(recv[r], counts, operation);
  }
  return swizzle;
}

template <class Send, class Out>
void run_reduce(const std::vector<Send>& send, const std::vector<Span<Out>>& recv,
                cudaStream_t stream) {
  constexpr bool kNvfp4 = std::is_same_v<Send, Nvfp4View>;
  auto const counts = shard_counts(send, recv);
  std::size_t const n = counts.size();
  for (std::size_t r = 0; r < n; ++r) {
    validate(send[r], at("send", r), kNvfp4 ? 8 : 16);
    validate(recv[r], at("recv", r));
  }
  auto const displ = displacements(counts);
  std::size_t const total = send[0].count;
  for (std::size_t r = 0; r < n; ++r) {
    lsa::LoopbackPeers const peers = quantized_peers(send, r, "send");
    lsa::ReduceArgs a = detail::reduce_args(send[0].dtype(), detail::QuantizedBases{}, displ[r],
                                            counts[r], total / n);
    a.out = recv[r].data;
    a.out_fp32 = std::is_same_v<Out, float>;
    lsa::reduce(peers, a, stream);
  }
}

template <class Recv>
void run_quantize_gather(const std::vector<Bf16Span>& input, const std::vector<const float*>& scale,
                         const std::vector<Recv>& recv, cudaStream_t stream) {
  constexpr bool kNvfp4 = std::is_same_v<Recv, Nvfp4View>;
  auto const counts = gather_counts(input, recv);
  std::size_t const n = counts.size();
  SYMMCOMM_EXPECTS(scale.size() == n,
                   "scale holds " << scale.size() << " pointers for " << n << " virtual ranks");
  for (std::size_t r = 0; r < n; ++r) {
    validate(input[r], at("input", r));
    if constexpr (kNvfp4) {
      validate_gather_recv(recv[r], at("recv", r), 8);
    } else {
      validate(recv[r], at("recv", r), 8);
    }
    SYMMCOMM_EXPECTS(input[r].count % 16 == 0,
                     at("input", r) << ".count " << input[r].count << " is not a multiple of 16");
    SYMMCOMM_EXPECTS(scale[r] != nullptr, at("scale", r) << " is null");
  }
  std::optional<detail::SwizzledScales> swizzle;
  if constexpr (kNvfp4) swizzle = recv_swizzle(recv, counts, "loopback::quantize_all_gather");
  auto const displ = displacements(counts);
  std::size_t const total = recv[0].count;
  for (std::size_t r = 0; r < n; ++r) {
    lsa::LoopbackPeers const peers = quantized_peers(recv, r, "recv");
    lsa::quantize_gather(
        peers,
        detail::quantize_gather_args(recv[0].dtype(), input[r].data, scale[r], counts[r], displ[r],
                                     total / n, detail::QuantizedBases{},
                                     swizzle ? &*swizzle : nullptr, r, n),
        stream);
  }
}

}  // namespace

void all_gather(const std::vector<Nvfp4View>& send, const std::vector<Nvfp4View>& recv,
                cudaStream_t stream) {
  auto const counts = gather_counts(send, recv);
  std::size_t const n = counts.size();
  auto const swizzle = recv_swizzle(recv, counts, "loopback::all_gather");
  GatherTensor data{{}, {}, scaled(counts, 1, 2)};
  GatherTensor scales{{}, {}, scaled(counts, 1, kNvfp4BlockSize), swizzle ? &*swizzle : nullptr};
  GatherTensor globals{{}, {}, std::vector<std::size_t>(n, sizeof(float))};
  for (std::size_t r = 0; r < n; ++r) {
    validate(send[r], at("send", r), 1);
    validate_gather_recv(recv[r], at("recv", r), 1);
    SYMMCOMM_EXPECTS(send[r].global_scale != nullptr, at("send", r) << ".global_scale is null");
    SYMMCOMM_EXPECTS(recv[r].global_scale != nullptr, at("recv", r) << ".global_scale is null");
    data.send.push_back(send[r].data);
    data.recv.push_back(recv[r].data);
    scales.send.push_back(send[r].block_scales);
    scales.recv.push_back(recv[r].block_scales);
    globals.send.push_back(send[r].global_scale);
    globals.recv.push_back(recv[r].global_scale);
  }
  run_gather({data, scales, globals}, stream);
}

void all_gather(const std::vector<Fp8View>& send, const std::vector<Fp8View>& recv,
                cudaStream_t stream) {
  auto const counts = gather_counts(send, recv);
  std::size_t const n = counts.size();
  GatherTensor data{{}, {}, counts};
  GatherTensor scales{{}, {}, std::vector<std::size_t>(n, sizeof(float))};
  for (std::size_t r = 0; r < n; ++r) {
    validate(send[r], at("send", r), 1);
    validate(recv[r], at("recv", r), 1);
    SYMMCOMM_EXPECTS(send[r].scale != nullptr, at("send", r) << ".scale is null");
    SYMMCOMM_EXPECTS(recv[r].scale != nullptr, at("recv", r) << ".scale is null");
    data.send.push_back(send[r].data);
    data.recv.push_back(recv[r].data);
    scales.send.push_back(send[r].scale);
    scales.recv.push_back(recv[r].scale);
  }
  run_gather({data, scales}, stream);
}

void all_gather(const std::vector<Bf16Span>& send, const std::vector<Bf16Span>& recv,
                cudaStream_t stream) {
  auto const counts = gather_counts(send, recv);
  std::size_t const n = counts.size();
  GatherTensor data{{}, {}, scaled(counts, sizeof(bf16), 1)};
  for (std::size_t r = 0; r < n; ++r) {
    validate(send[r], at("send", r), 1);
    validate(recv[r], at("recv", r), 1);
    data.send.push_back(send[r].data);
    data.recv.push_back(recv[r].data);
  }
  run_gather({data}, stream);
}

void reduce_scatter(const std::vector<Nvfp4View>& send, const std::vector<Bf16Span>& recv,
                    cudaStream_t stream) {
  run_reduce(send, recv, stream);
}
void reduce_scatter(const std::vector<Nvfp4View>& send, const std::vector<Fp32Span>& recv,
                    cudaStream_t stream) {
  run_reduce(send, recv, stream);
}
void reduce_scatter(const std::vector<Fp8View>& send, const std::vector<Bf16Span>& recv,
                    cudaStream_t stream) {
  run_reduce(send, recv, stream);
}
void reduce_scatter(const std::vector<Fp8View>& send, const std::vector<Fp32Span>& recv,
                    cudaStream_t stream) {
  run_reduce(send, recv, stream);
}

void quantize_all_gather(const std::vector<Bf16Span>& input, const std::vector<const float*>& scale,
                         const std::vector<Nvfp4View>& recv, cudaStream_t stream) {
  run_quantize_gather(input, scale, recv, stream);
}
void quantize_all_gather(const std::vector<Bf16Span>& input, const std::vector<const float*>& scale,
                         const std::vector<Fp8View>& recv, cudaStream_t stream) {
  run_quantize_gather(input, scale, recv, stream);
}

}  // namespace symmcomm::loopback
