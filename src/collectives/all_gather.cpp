// All-gather executors: every typed call becomes a list of byte parts moved in one NCCL group.
// Each entry point checks the communicator first, so an empty one is reported as such and not
// as a count that does not match comm.size() == 0.

#include "symmcomm/collectives/all_gather.hpp"

#include <nccl.h>

#include <numeric>
#include <string>

#include "comm/dev_comm.hpp"
#include "common.hpp"
#include "core/cuda_utils.hpp"
#include "kernels/lsa_ll.hpp"
#include "lsa_args.hpp"
#include "scale_swizzle.hpp"
#include "symmcomm/comm/group.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/codecs.hpp"

namespace symmcomm {
namespace {

// One tensor to gather: bytes[r] bytes from rank r, laid out rank after rank in recv.
struct Part {
  const char* send_name;
  const void* send;
  const char* recv_name;
  void* recv;
  std::vector<std::size_t> bytes;  // per rank
  // NVFP4 block scales written swizzled into `recv` (its view's scale_layout); null: linear.
  const detail::SwizzledScales* swizzle = nullptr;
};

Part equal_part(const char* send_name, const void* send, const char* recv_name, void* recv,
                std::size_t bytes, int ranks) {
  return Part{send_name, send, recv_name, recv, std::vector<std::size_t>(ranks, bytes)};
}

// The small-message all-gather's arguments for these parts (lsa_ll.hpp): each part's bytes from
// this rank as a segment of lines, in order.
detail::lsa::LlGatherArgs ll_args(const detail::CommState& state, const std::vector<Part>& parts) {
  detail::lsa::LlGatherArgs a;
  a.rank = state.rank;
  a.size = state.size;
  a.scratch = state.ll_window;
  a.calls = state.ll_calls;
  a.abort_flag = detail::device_abort_flag(state);
  for (const Part& p : parts) {
    std::size_t const bytes = p.bytes[static_cast<std::size_t>(state.rank)];
    a.segment[a.segments++] = detail::lsa::LlSegment{p.send, p.recv, bytes, a.lines};
    a.lines += detail::lsa::ll_lines(bytes);
  }
  return a;
}

// `type` names the payload in logs; the planner needs no type for gathers (bytes move as is).
Plan gather_parts(const Communicator& comm, const char* operation, const char* type,
                  std::size_t count, const std::vector<Part>& parts, cudaStream_t stream,
                  const Options& options) {
  detail::CommState& state = detail::usable_state(comm, operation);
  int const n = state.size;
  int const me = state.rank;
  bool equal = true;
  std::size_t send_total = 0, recv_total = 0;
  detail::PlannedCall call(state, Operation::AllGather, options, operation);
  bool swizzled = false;
  for (const Part& p : parts) swizzled = swizzled || p.swizzle != nullptr;
  for (const Part& p : parts) {
    for (std::size_t b : p.bytes) equal = equal && b == p.bytes[0];
    send_total += p.bytes[static_cast<std::size_t>(me)];
    // The LSA kernel pushes the send side to peers from here: only this rank reads it.
    call.part(Slot::SendPart, static_cast<int>(&p - parts.data()), p.send_name, p.send,
              p.bytes[static_cast<std::size_t>(me)], false);
  }
  std::vector<std::size_t> part_total;  // bytes of each part over all ranks
  for (const Part& p : parts) {
    part_total.push_back(std::accumulate(p.bytes.begin(), p.bytes.end(), std::size_t{0}));
    recv_total += part_total.back();
    call.part(Slot::RecvPart, static_cast<int>(&p - parts.data()), p.recv_name, p.recv,
              p.swizzle != nullptr ? p.swizzle->bytes : part_total.back());
  }
  call.per_rank(send_total, equal)
      .staging_usable(!swizzled && equal &&
                      detail::staging_usable(state, options, send_total, recv_total))
      .lsa_kernel(parts.size() <= detail::lsa::kSlots);
  Plan const plan = call.decide(stream);

  detail::DeviceGuard guard(state.device);
  // NCCL's paths gather swizzled parts linearly into the workspace and swizzle after: a kernel
  // that must follow NCCL's work, which a symmcomm::Group would defer past it.
  std::vector<void*> linear(parts.size(), nullptr);
  if (swizzled && plan.path != Path::LsaKernel) {
    call.refuse_in_group("block scales swizzled after NCCL's gather");
    std::vector<std::size_t> at(parts.size(), 0);  // each swizzled part's workspace offset
    std::size_t need = 0;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (parts[i].swizzle == nullptr) continue;
      at[i] = need;
      need += detail::align256(part_total[i]);
    }
    auto* ws = static_cast<char*>(detail::acquire_workspace(state, options, need, stream));
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (parts[i].swizzle != nullptr) linear[i] = ws + at[i];
    }
  }
  // Where each part lands on NCCL's paths.
  auto const nccl_recv = [&](std::size_t i) {
    return linear[i] != nullptr ? linear[i] : parts[i].recv;
  };
  call.before_enqueue(stream);
  detail::lsa::LlGatherArgs small;
  bool small_fits = false;
  if (plan.path == Path::LsaKernel && equal && !swizzled) {  // (at most kSlots parts there)
    small = ll_args(state, parts);
    small_fits = detail::lsa::ll_fits(state.ll_window != nullptr, send_total, small.lines);
  }
  if (small_fits) {
    // Small: lines with flags through the communicator's scratch, no barrier (lsa_ll.hpp).
    detail::lsa::ll_gather(small, state.caps.lsa_sm_share, stream);
  } else if (plan.path == Path::LsaKernel) {
    // One launch pushes every part of this rank to every peer's window (lsa.cu).
    detail::lsa::Peers peers = detail::lsa_peers(state);
    std::vector<detail::GatherPartArgs> specs;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const Provenance& recv_prov = call.provenance(Slot::RecvPart, static_cast<int>(i));
      peers.window[i] = recv_prov.window;
      specs.push_back({parts[i].send, recv_prov.offset, &parts[i].bytes, parts[i].swizzle});
    }
    detail::lsa::gather(
        peers,
        detail::gather_args(specs, static_cast<std::size_t>(me), static_cast<std::size_t>(n)),
        stream);
  } else if (plan.staged) {
    call.refuse_in_group("staged path");
    // Pack this rank's parts, gather once through symmetric scratch, unpack with 2-D copies.
    auto* staged_send = static_cast<char*>(options.staging.send);
    auto* staged_recv = static_cast<char*>(options.staging.recv);
    std::size_t offset = 0;
    for (const Part& p : parts) {
      SYMMCOMM_CUDA_TRY(cudaMemcpyAsync(staged_send + offset, p.send, p.bytes[0],
                                        cudaMemcpyDeviceToDevice, stream));
      offset += p.bytes[0];
    }
    SYMMCOMM_NCCL_TRY(
        ncclAllGather(staged_send, staged_recv, send_total, ncclUint8, state.comm, stream));
    offset = 0;
    for (const Part& p : parts) {
      if (p.bytes[0] > 0) {
        SYMMCOMM_CUDA_TRY(cudaMemcpy2DAsync(p.recv, p.bytes[0], staged_recv + offset, send_total,
                                            p.bytes[0], static_cast<std::size_t>(n),
                                            cudaMemcpyDeviceToDevice, stream));
      }
      offset += p.bytes[0];
    }
  } else if (equal) {
    Group group;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const Part& p = parts[i];
      if (p.bytes[0] == 0) continue;
      SYMMCOMM_NCCL_TRY(
          ncclAllGather(p.send, nccl_recv(i), p.bytes[0], ncclUint8, state.comm, stream));
    }
    group.end();
  } else {
    // Variable counts: one broadcast per root (what NCCL offers for all-gatherv).
    Group group;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const Part& p = parts[i];
      std::size_t displacement = 0;
      for (int r = 0; r < n; ++r) {
        std::size_t const b = p.bytes[static_cast<std::size_t>(r)];
        char* dst = static_cast<char*>(nccl_recv(i)) + displacement;
        if (b > 0) {
          SYMMCOMM_NCCL_TRY(
              ncclBroadcast(r == me ? p.send : dst, dst, b, ncclUint8, r, state.comm, stream));
        }
        displacement += b;
      }
    }
    group.end();
  }
  if (plan.path != Path::LsaKernel) {
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (const detail::SwizzledScales* sw = parts[i].swizzle) {
        swizzle_nvfp4_scales(static_cast<const std::uint8_t*>(linear[i]), sw->total_rows,
                             sw->scale_cols, static_cast<std::uint8_t*>(parts[i].recv), stream);
      }
    }
  }
  call.record(stream, type, count);
  return plan;
}

void check_fp8_pair(const ConstFp8View& send, const Fp8View& recv) {
  validate(send, "send", 1);
  validate(recv, "recv", 1);
  SYMMCOMM_EXPECTS(send.format == recv.format, "send.format " << to_string(send.dtype())
                                                              << " differs from recv.format "
                                                              << to_string(recv.dtype()));
}

void check_gathered_count(std::size_t send_count, std::size_t recv_count, int n) {
  SYMMCOMM_EXPECTS(
      recv_count == send_count * static_cast<std::size_t>(n),
      "recv.count " << recv_count << " is not send.count " << send_count << " x comm.size() " << n);
}

using detail::scaled;

// `swizzle`: the block scales' swizzled layout (recv.scale_layout), or null for linear.
std::vector<Part> nvfp4_parts(ConstNvfp4View send, Nvfp4View recv,
                              const std::vector<std::size_t>& counts,
                              const detail::SwizzledScales* swizzle) {
  std::size_t const n = counts.size();
  return {Part{"send.data", send.data, "recv.data", recv.data, scaled(counts, 1, 2)},
          Part{"send.block_scales", send.block_scales, "recv.block_scales", recv.block_scales,
               scaled(counts, 1, kNvfp4BlockSize), swizzle},
          Part{"send.global_scale", send.global_scale, "recv.global_scale", recv.global_scale,
               std::vector<std::size_t>(n, sizeof(float))}};
}

std::vector<Part> fp8_parts(ConstFp8View send, Fp8View recv,
                            const std::vector<std::size_t>& counts) {
  return {Part{"send.data", send.data, "recv.data", recv.data, counts},
          Part{"send.scale", send.scale, "recv.scale", recv.scale,
               std::vector<std::size_t>(counts.size(), sizeof(float))}};
}

}  // namespace

Plan all_gather(const Communicator& comm, ConstBf16Span send, Bf16Span recv, cudaStream_t stream,
                const Options& options) {
  detail::usable_state(comm, "all_gather");
  validate(send, "send", 2);
  validate(recv, "recv", 2);
  check_gathered_count(send.count, recv.count, comm.size());
  return gather_parts(
      comm, "all_gather", "bf16", send.count,
      {equal_part("send.data", send.data, "recv.data", recv.data, send.data_bytes(), comm.size())},
      stream, options);
}

Plan all_gather(const Communicator& comm, ConstFp8View send, Fp8View recv, cudaStream_t stream,
                const Options& options) {
  detail::usable_state(comm, "all_gather");
  check_fp8_pair(send, recv);
  check_gathered_count(send.count, recv.count, comm.size());
  std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()), send.count);
  return gather_parts(comm, "all_gather", to_string(send.dtype()), send.count,
                      fp8_parts(send, recv, counts), stream, options);
}

Plan all_gather(const Communicator& comm, ConstNvfp4View send, Nvfp4View recv,
                const std::vector<GatherItem>& extras, cudaStream_t stream,
                const Options& options) {
  detail::usable_state(comm, "all_gather");
  validate(send, "send", 1);
  validate_gather_recv(recv, "recv", 1);
  check_gathered_count(send.count, recv.count, comm.size());
  std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()), send.count);
  auto const swizzle = detail::swizzled_scales(recv, counts, "all_gather");
  std::vector<Part> parts = nvfp4_parts(send, recv, counts, swizzle ? &*swizzle : nullptr);
  for (const auto& item : extras) {
    parts.push_back(
        equal_part(item.name, item.send, item.name, item.recv, item.bytes_per_rank, comm.size()));
  }
  return gather_parts(comm, "all_gather", "nvfp4", send.count, parts, stream, options);
}

Plan all_gather(const Communicator& comm, ConstNvfp4View send, Nvfp4View recv, cudaStream_t stream,
                const Options& options) {
  detail::usable_state(comm, "all_gather");
  return all_gather(comm, send, recv, std::vector<GatherItem>{}, stream, options);
}

Plan all_gather(const Communicator& comm, const std::vector<GatherItem>& items, cudaStream_t stream,
                const Options& options) {
  detail::usable_state(comm, "all_gather");
  SYMMCOMM_EXPECTS(!items.empty(), "all_gather: items is empty");
  std::vector<Part> parts;
  std::size_t total = 0;
  for (const auto& item : items) {
    parts.push_back(
        equal_part(item.name, item.send, item.name, item.recv, item.bytes_per_rank, comm.size()));
    total += item.bytes_per_rank;
  }
  return gather_parts(comm, "all_gather", "bytes", total, parts, stream, options);
}

Plan all_gatherv(const Communicator& comm, ConstBf16Span send, Bf16Span recv,
                 const std::vector<std::size_t>& counts, cudaStream_t stream,
                 const Options& options) {
  detail::usable_state(comm, "all_gatherv");
  validate(send, "send", 2);
  validate(recv, "recv", 2);
  detail::check_counts(counts, comm.size(), comm.rank(), send.count, recv.count, 1, "send.count",
                       "recv.count");
  return gather_parts(comm, "all_gatherv", "bf16", send.count,
                      {Part{"send.data", send.data, "recv.data", recv.data, scaled(counts, 2, 1)}},
                      stream, options);
}

Plan all_gatherv(const Communicator& comm, ConstFp8View send, Fp8View recv,
                 const std::vector<std::size_t>& counts, cudaStream_t stream,
                 const Options& options) {
  detail::usable_state(comm, "all_gatherv");
  check_fp8_pair(send, recv);
  detail::check_counts(counts, comm.size(), comm.rank(), send.count, recv.count, 1, "send.count",
                       "recv.count");
  return gather_parts(comm, "all_gatherv", to_string(send.dtype()), send.count,
                      fp8_parts(send, recv, counts), stream, options);
}

Plan all_gatherv(const Communicator& comm, ConstNvfp4View send, Nvfp4View recv,
                 const std::vector<std::size_t>& counts, cudaStream_t stream,
                 const Options& options) {
  detail::usable_state(comm, "all_gatherv");
  validate(send, "send", 1);
  validate_gather_recv(recv, "recv", 1);
  detail::check_counts(counts, comm.size(), comm.rank(), send.count, recv.count, kNvfp4BlockSize,
                       "send.count", "recv.count");
  auto const swizzle = detail::swizzled_scales(recv, counts, "all_gatherv");
  return gather_parts(comm, "all_gatherv", "nvfp4", send.count,
                      nvfp4_parts(send, recv, counts, swizzle ? &*swizzle : nullptr), stream,
                      options);
}

}  // namespace symmcomm
