// The gather executor (executors.hpp): every gather becomes a list of byte parts (GatherPart)
// moved in one launch of symmcomm's LSA kernel, one NCCL group, or through symmetric staging.

#include <nccl.h>

#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include "collectives/device_view.hpp"
#include "comm/dev_comm.hpp"
#include "core/cuda_utils.hpp"
#include "executors.hpp"
#include "kernels/lsa_ll.hpp"
#include "replay.hpp"
#include "scale_swizzle.hpp"
#include "scratch.hpp"
#include "symmcomm/comm/group.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/codecs.hpp"

namespace symmcomm::detail {
namespace {

// The small-message all-gather's arguments for these parts (lsa_ll.hpp): each part's bytes from
// this rank as a segment of lines, in order.
lsa::LlGatherArgs ll_args(const CommState& state, const std::vector<GatherPart>& parts) {
  lsa::LlGatherArgs a;
  fill_ll_scratch(state, a);
  for (const GatherPart& p : parts) {
    std::size_t const bytes = p.bytes[static_cast<std::size_t>(state.rank)];
    a.segment[a.segments++] = lsa::LlSegment{p.send, p.recv, bytes, a.lines};
    a.lines += lsa::ll_lines(bytes);
  }
  return a;
}

bool equal_counts(const std::vector<GatherPart>& parts) {
  for (const GatherPart& p : parts) {
    for (std::size_t b : p.bytes) {
      if (b != p.bytes[0]) return false;
    }
  }
  return true;
}

bool any_swizzled(const std::vector<GatherPart>& parts) {
  for (const GatherPart& p : parts) {
    if (p.swizzle != nullptr) return true;
  }
  return false;
}

std::size_t total_bytes(const GatherPart& p) {
  return std::accumulate(p.bytes.begin(), p.bytes.end(), std::size_t{0});
}

// The planning of a gather of `parts`: every part's send (only this rank reads it: the LSA
// kernel pushes it to peers) and receive side.
const Plan& plan_gather(PlannedCall& call, const CommState& state,
                        const std::vector<GatherPart>& parts, cudaStream_t stream,
                        const Options& options) {
  auto const me = static_cast<std::size_t>(state.rank);
  std::size_t send_total = 0, recv_total = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const GatherPart& p = parts[i];
    send_total += p.bytes[me];
    call.part(Slot::SendPart, static_cast<int>(i), p.send_name, p.send, p.bytes[me], false);
  }
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const GatherPart& p = parts[i];
    std::size_t const total = total_bytes(p);
    recv_total += total;
    call.part(Slot::RecvPart, static_cast<int>(i), p.recv_name, p.recv,
              p.swizzle != nullptr ? p.swizzle->bytes : total);
  }
  bool const equal = equal_counts(parts);
  call.per_rank(send_total, equal)
      .staging_usable(!any_swizzled(parts) && equal &&
                      staging_usable(state, options, send_total, recv_total))
      .lsa_kernel(parts.size() <= lsa::kSlots);
  return call.decide(stream);
}

// Pack this rank's parts, gather once through symmetric scratch, unpack with 2-D copies.
void enqueue_staged(const CommState& state, const std::vector<GatherPart>& parts,
                    cudaStream_t stream, const Options& options) {
  std::size_t send_total = 0;
  for (const GatherPart& p : parts) send_total += p.bytes[0];
  auto* staged_send = static_cast<char*>(options.staging.send);
  auto* staged_recv = static_cast<char*>(options.staging.recv);
  std::size_t offset = 0;
  for (const GatherPart& p : parts) {
    SYMMCOMM_CUDA_TRY(cudaMemcpyAsync(staged_send + offset, p.send, p.bytes[0],
                                      cudaMemcpyDeviceToDevice, stream));
    offset += p.bytes[0];
  }
  SYMMCOMM_NCCL_TRY(
      ncclAllGather(staged_send, staged_recv, send_total, ncclUint8, state.comm, stream));
  offset = 0;
  for (const GatherPart& p : parts) {
    if (p.bytes[0] > 0) {
      SYMMCOMM_CUDA_TRY(cudaMemcpy2DAsync(p.recv, p.bytes[0], staged_recv + offset, send_total,
                                          p.bytes[0], static_cast<std::size_t>(state.size),
                                          cudaMemcpyDeviceToDevice, stream));
    }
    offset += p.bytes[0];
  }
}

// NCCL's calls: one all-gather per part with equal counts, else one broadcast per root (what
// NCCL offers for all-gatherv); part i lands at recv[i].
void enqueue_nccl(const CommState& state, const std::vector<GatherPart>& parts,
                  const std::vector<void*>& recv, cudaStream_t stream) {
  int const n = state.size;
  int const me = state.rank;
  bool const equal = equal_counts(parts);
  Group group;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const GatherPart& p = parts[i];
    if (equal) {
      if (p.bytes[0] == 0) continue;
      SYMMCOMM_NCCL_TRY(ncclAllGather(p.send, recv[i], p.bytes[0], ncclUint8, state.comm, stream));
      continue;
    }
    std::size_t displacement = 0;
    for (int r = 0; r < n; ++r) {
      std::size_t const b = p.bytes[static_cast<std::size_t>(r)];
      char* dst = static_cast<char*>(recv[i]) + displacement;
      if (b > 0) {
        SYMMCOMM_NCCL_TRY(
            ncclBroadcast(r == me ? p.send : dst, dst, b, ncclUint8, r, state.comm, stream));
      }
      displacement += b;
    }
  }
  group.end();
}

// One launch pushes every part of this rank to every peer's window (lsa.cu), or, small and
// unswizzled, lines with flags through the communicator's scratch without barriers
// (lsa_ll.hpp). Returns the launch.
ReplayLaunch enqueue_lsa(const CommState& state, const PlannedCall& planned,
                         const std::vector<GatherPart>& parts, cudaStream_t stream) {
  if (equal_counts(parts) && !any_swizzled(parts)) {  // (at most kSlots parts here)
    lsa::LlGatherArgs const small = ll_args(state, parts);
    std::size_t send_total = 0;
    for (const GatherPart& p : parts) send_total += p.bytes[static_cast<std::size_t>(state.rank)];
    if (lsa::ll_fits(scratch_of(state).has_window(), send_total, small.lines)) {
      return ll_launch<lsa::LlGatherArgs, lsa::ll_gather>(small).now(state, stream);
    }
  }
  DeviceView view(planned);
  std::vector<std::size_t> base(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    base[i] = view.bind(static_cast<int>(i), Slot::RecvPart, static_cast<int>(i));
  }
  lsa::GatherArgs const args = gather_args(parts, base, static_cast<std::size_t>(state.rank),
                                           static_cast<std::size_t>(state.size));
  return peers_launch<lsa::GatherArgs, lsa::gather>(view.peers(), args).now(state, stream);
}

}  // namespace

void enqueue_gather(CommState& state, const PlannedCall& planned,
                    const std::vector<GatherPart>& parts, cudaStream_t stream,
                    const Options& options, ReplayLaunch* launched) {
  const Plan& plan = planned.plan();
  DeviceGuard guard(state.device);
  bool const nccl_swizzles = any_swizzled(parts) && plan.path != Path::LsaKernel;
  // NCCL's paths gather swizzled parts linearly into the workspace and swizzle after: a kernel
  // that must follow NCCL's work, which a symmcomm::Group would defer past it.
  std::vector<void*> recv;  // where NCCL's paths land each part (not the LSA kernel's business)
  if (plan.path != Path::LsaKernel) {
    recv.reserve(parts.size());
    for (const GatherPart& p : parts) recv.push_back(p.recv);
  }
  if (nccl_swizzles) {
    planned.refuse_in_group("block scales swizzled after NCCL's gather");
    std::vector<std::size_t> at(parts.size(), 0);  // each swizzled part's workspace offset
    std::size_t need = 0;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (parts[i].swizzle == nullptr) continue;
      at[i] = need;
      need += align256(total_bytes(parts[i]));
    }
    auto* ws = static_cast<char*>(acquire_workspace(state, options, need, stream));
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (parts[i].swizzle != nullptr) recv[i] = ws + at[i];
    }
  }
  planned.before_enqueue(stream);
  if (plan.path == Path::LsaKernel) {
    ReplayLaunch const launch = enqueue_lsa(state, planned, parts, stream);
    if (launched != nullptr) *launched = launch;
  } else if (plan.staged) {
    planned.refuse_in_group("staged path");
    enqueue_staged(state, parts, stream, options);
  } else {
    enqueue_nccl(state, parts, recv, stream);
  }
  if (!nccl_swizzles) return;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (const SwizzledScales* sw = parts[i].swizzle) {
      swizzle_nvfp4_scales(static_cast<const std::uint8_t*>(recv[i]), sw->total_rows,
                           sw->scale_cols, static_cast<std::uint8_t*>(parts[i].recv), stream);
    }
  }
}

std::vector<GatherPart> tensor_parts(const TensorRef& send, const TensorRef& recv,
                                     std::size_t ranks, const std::size_t* counts,
                                     const SwizzledScales* swizzle) {
  // Every rank's count is send.count unless `counts` gives them: per-rank sizes inline (no
  // allocation per part at the rank counts of an LSA team), filled only for host counts.
  std::size_t const each = counts == nullptr ? send.count : 0;
  RankSizes data(ranks, payload_bytes(send.dtype, each));
  RankSizes scales(ranks, each / kNvfp4BlockSize);
  if (counts != nullptr) {
    for (std::size_t r = 0; r < ranks; ++r) {
      data[r] = payload_bytes(send.dtype, counts[r]);
      scales[r] = counts[r] / kNvfp4BlockSize;
    }
  }
  std::vector<GatherPart> parts;
  parts.reserve(3);
  parts.push_back(GatherPart{"send.data", send.data, "recv.data", recv.data, data});
  if (send.dtype == DataType::Nvfp4) {
    parts.push_back(GatherPart{"send.block_scales", send.block_scales, "recv.block_scales",
                               recv.block_scales, scales, swizzle});
    parts.push_back(GatherPart{"send.global_scale", send.scales, "recv.global_scale", recv.scales,
                               RankSizes(ranks, sizeof(float))});
  } else if (send.is_fp8()) {
    parts.push_back(GatherPart{"send.scale", send.scales, "recv.scale", recv.scales,
                               RankSizes(ranks, sizeof(float))});
  }
  return parts;
}

Plan execute_gather(CommState& state, const CollectiveCall& call, cudaStream_t stream,
                    const Options& options) {
  const char* const operation = operation_name(call);
  auto const n = static_cast<std::size_t>(state.size);
  std::vector<GatherPart> parts;
  const char* type = "bytes";
  std::size_t count = 0;
  std::optional<SwizzledScales> swizzle;
  if (!call.items_only) {
    const std::size_t* const counts = call.counts == Counts::Host ? call.host_counts : nullptr;
    if (call.recv.dtype == DataType::Nvfp4 && call.recv.scale_layout != ScaleLayout::Linear) {
      swizzle = swizzled_scales(call.recv.nvfp4(),
                                counts != nullptr ? std::vector<std::size_t>(counts, counts + n)
                                                  : std::vector<std::size_t>(n, call.send.count),
                                operation);
    }
    parts = tensor_parts(call.send, call.recv, n, counts, swizzle ? &*swizzle : nullptr);
    type = to_string(call.send.dtype);
    count = call.send.count;
  }
  for (std::size_t i = 0; i < call.item_count; ++i) {
    const GatherItem& item = call.items[i];
    parts.push_back(
        GatherPart{item.name, item.send, item.name, item.recv, RankSizes(n, item.bytes_per_rank)});
    if (call.items_only) count += item.bytes_per_rank;
  }
  PlannedCall planned(state, Operation::AllGather, options, operation);
  plan_gather(planned, state, parts, stream, options);
  ReplayLaunch launched;
  enqueue_gather(state, planned, parts, stream, options, &launched);
  planned.record(stream, type, count);
  if (launched.fn != nullptr) keep_call(state, call, options, planned, launched, type, count);
  return planned.plan();
}

}  // namespace symmcomm::detail
