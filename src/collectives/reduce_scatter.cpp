// The reduce-scatter executor (executors.hpp): NCCL's own sum for BF16/FP32; for NVFP4/FP8 with
// per-rank scales, symmcomm's one-shot LSA kernel, or an all-to-all of quantized shards
// followed by a local fp32 reduction (never a reduction in the low-precision type along a
// ring).

#include "symmcomm/collectives/reduce_scatter.hpp"

#include <nccl.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "collectives/device_view.hpp"
#include "comm/dev_comm.hpp"
#include "core/cuda_utils.hpp"
#include "executors.hpp"
#include "kernels/lsa_ll.hpp"
#include "scratch.hpp"
#include "symmcomm/collectives/local_reduce.hpp"
#include "symmcomm/comm/group.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/codecs.hpp"

namespace symmcomm::detail {
namespace {

// ---- native (BF16 / FP32) -------------------------------------------------------------------

ncclDataType_t nccl_type(DataType t) {
  return t == DataType::Fp32 ? ncclFloat32 : ncclBfloat16;
}

// NCCL's sum of equal shards (plain or symmetric: NCCL decides from its own window lookup).
void enqueue_native(const CommState& state, const CollectiveCall& call, cudaStream_t stream) {
  SYMMCOMM_NCCL_TRY(ncclReduceScatter(call.send.data, call.recv.data, call.recv.count,
                                      nccl_type(call.send.dtype), ncclSum, state.comm, stream));
}

Plan native_reduce_scatter(CommState& state, const CollectiveCall& call, cudaStream_t stream,
                           const Options& options) {
  const char* const operation = operation_name(call);
  DataType const type = call.send.dtype;
  ncclDataType_t const element = nccl_type(type);
  std::size_t const n = static_cast<std::size_t>(state.size);
  bool const equal = call.counts == Counts::Equal;
  std::size_t const send_bytes = call.send.data_bytes(), recv_bytes = call.recv.data_bytes();
  // symmcomm's push-model kernel for small BF16 sums (kernels/lsa_ll.hpp); Auto takes it up to
  // thresholds::kLsaReduceScatterMaxBytesPerRank, where it was measured faster than NCCL.
  bool const push = equal && type == DataType::Bf16 &&
                    lsa::ll_reduce_fits(scratch_of(state).has_window(), type, call.recv.count);
  PlannedCall planned(state, Operation::ReduceScatter, options, operation);
  planned.types(type, type)
      .per_rank(recv_bytes, equal)
      .lsa_kernel(push)
      .staging_usable(equal && staging_usable(state, options, send_bytes, recv_bytes))
      .buffer(Slot::SendData, "send.data", call.send.data, send_bytes)
      .buffer(Slot::RecvData, "recv.data", call.recv.data, recv_bytes);
  Plan const plan = planned.decide(stream);
  DeviceGuard guard(state.device);
  planned.before_enqueue(stream);
  ReplayLaunch launched;
  if (plan.path == Path::LsaKernel) {
    lsa::LlReduceArgs a;
    a.send = call.send.data;
    a.out = call.recv.data;
    a.shard = call.recv.count;
    fill_ll_scratch(state, a);
    launched = ll_launch<lsa::LlReduceArgs, lsa::ll_reduce_scatter>(a).now(state, stream);
  } else if (plan.staged) {
    planned.refuse_in_group("staged path");
    SYMMCOMM_CUDA_TRY(cudaMemcpyAsync(options.staging.send, call.send.data, send_bytes,
                                      cudaMemcpyDeviceToDevice, stream));
    SYMMCOMM_NCCL_TRY(ncclReduceScatter(options.staging.send, options.staging.recv, call.recv.count,
                                        element, ncclSum, state.comm, stream));
    SYMMCOMM_CUDA_TRY(cudaMemcpyAsync(call.recv.data, options.staging.recv, recv_bytes,
                                      cudaMemcpyDeviceToDevice, stream));
  } else if (equal) {
    enqueue_native(state, call, stream);
  } else {
    // One ncclReduce per root: rank r's shard of counts[r] elements.
    std::size_t const element_bytes = payload_bytes(type, 1);
    const auto* send = static_cast<const char*>(call.send.data);
    std::size_t displacement = 0;
    Group group;
    for (std::size_t r = 0; r < n; ++r) {
      std::size_t const c = call.host_counts[r];
      if (c > 0) {
        SYMMCOMM_NCCL_TRY(ncclReduce(send + displacement * element_bytes, call.recv.data, c,
                                     element, ncclSum, static_cast<int>(r), state.comm, stream));
      }
      displacement += c;
    }
    group.end();
  }
  planned.record(stream, to_string(type), call.send.count);
  if (launched.fn != nullptr) {
    keep_call(state, call, options, planned, launched, to_string(type), call.send.count);
  }
  return plan;
}

// ---- quantized (NVFP4 / FP8) --------------------------------------------------------------

// Where the output of a quantized reduce-scatter goes.
struct QuantizedOutput {
  DataType type;         // Bf16, Fp32, Nvfp4 or an FP8 type
  void* data = nullptr;  // bf16/fp32 data, or packed codes
  std::uint8_t* block_scales = nullptr;
  float* scale = nullptr;  // NVFP4 global scale / FP8 scale (written)
  std::size_t count = 0;
  const char* name = "recv";
};

// A quantized input: NVFP4 (data, block scales, global scale) or FP8 (codes, scale).
struct QuantizedInput {
  DataType type = DataType::Nvfp4;  ///< Nvfp4, Fp8E4M3 or Fp8E5M2
  const std::uint8_t* data = nullptr;
  const std::uint8_t* block_scales = nullptr;  ///< NVFP4 only
  const float* scale = nullptr;
  std::size_t count = 0;
  bool nvfp4() const { return type == DataType::Nvfp4; }
  Fp8Format fp8_format() const { return fp8_format_of(type); }
  std::size_t data_bytes(std::size_t elements) const { return payload_bytes(type, elements); }
};

struct WorkspaceLayout {
  std::size_t data = 0, scales = 0, globals = 0, temp = 0, total = 0;
};

WorkspaceLayout layout_for(DataType send_type, DataType recv_type, std::size_t shard_count,
                           std::size_t n) {
  WorkspaceLayout l;
  bool const nvfp4 = send_type == DataType::Nvfp4;
  std::size_t const shard_bytes = payload_bytes(send_type, shard_count);
  l.data = 0;
  l.scales = detail::align256(n * shard_bytes);
  l.globals = l.scales + detail::align256(nvfp4 ? n * (shard_count / kNvfp4BlockSize) : 0);
  l.temp = l.globals + detail::align256(n * sizeof(float));
  bool const requantize = recv_type != DataType::Bf16 && recv_type != DataType::Fp32;
  l.total = l.temp + (requantize ? detail::align256(shard_count * sizeof(float)) : 0);
  return l;
}

// Writes the fp32 sum produced by `reduce_into` to `out`: directly for bf16/fp32 outputs, else
// into fp32 scratch re-quantized with a scale computed from the sum.
template <class ReduceInto>
void write_output(const QuantizedOutput& out, float* temp, ReduceInto&& reduce_into,
                  cudaStream_t stream) {
  switch (out.type) {
    case DataType::Bf16:
      reduce_into(static_cast<bf16*>(out.data));
      break;
    case DataType::Fp32:
      reduce_into(static_cast<float*>(out.data));
      break;
    case DataType::Nvfp4:
      reduce_into(temp);
      quantize_nvfp4(
          temp,
          Nvfp4View{static_cast<std::uint8_t*>(out.data), out.block_scales, out.scale, out.count},
          ScaleMode::Compute, stream);
      break;
    case DataType::Fp8E4M3:
    case DataType::Fp8E5M2:
      reduce_into(temp);
      quantize_fp8(temp,
                   Fp8View{static_cast<std::uint8_t*>(out.data), out.scale, out.count,
                           fp8_format_of(out.type)},
                   ScaleMode::Compute, stream);
      break;
  }
}

bool requantizes(DataType t) {
  return t != DataType::Bf16 && t != DataType::Fp32;
}

// One-shot: every rank reads its shard from each peer's symmetric send buffer (lsa.cu).
// The name the send side's per-rank scale is planned (and reported) under.
const char* send_scale_name(const QuantizedInput& in) {
  return in.nvfp4() ? "send.global_scale" : "send.scale";
}

// Push (kernels/lsa_ll.hpp): each rank writes the shards its peers own into their scratch lines
// and sums its own; no barrier, and the send buffers are read only by their own rank. Returns
// the launch.
detail::ReplayLaunch push_reduce_scatter(const detail::CommState& state, const QuantizedInput& in,
                                         void* out, bool out_fp32, std::size_t shard,
                                         cudaStream_t stream) {
  detail::lsa::LlReduceArgs a;
  a.type = in.type;
  a.send = in.data;
  a.block_scales = in.block_scales;
  a.scale = in.scale;
  a.out = out;
  a.out_fp32 = out_fp32;
  a.shard = shard;
  detail::fill_ll_scratch(state, a);
  return detail::ll_launch<detail::lsa::LlReduceArgs, detail::lsa::ll_reduce_scatter>(a).now(
      state, stream);
}

// Whether symmcomm's LSA path sums this call with the push-model kernel: equal shards that fit
// a scratch slot, written to a 16-byte aligned output.
bool push_fits(const detail::CommState& state, const QuantizedInput& in, std::size_t shard,
               bool equal_shards) {
  return equal_shards &&
         detail::lsa::ll_reduce_fits(scratch_of(state).has_window(), in.type, shard);
}

// Returns the launch where the call was that one launch alone (a BF16 or FP32 output the
// kernel writes directly); else a launch without a function.
detail::ReplayLaunch lsa_reduce_scatter(detail::CommState& state, const QuantizedInput& in,
                                        const QuantizedOutput& out, const detail::PlannedCall& call,
                                        std::size_t my_displacement, bool equal_shards,
                                        cudaStream_t stream, const Options& options) {
  detail::ReplayLaunch alone;
  float* temp = nullptr;
  if (requantizes(out.type)) {
    temp = static_cast<float*>(
        detail::acquire_workspace(state, options, out.count * sizeof(float), stream));
  }
  detail::DeviceGuard guard(state.device);
  if (push_fits(state, in, out.count, equal_shards)) {
    auto push_into = [&](auto* dst) {
      bool const fp32 = std::is_same_v<std::remove_pointer_t<decltype(dst)>, float>;
      if (reinterpret_cast<std::uintptr_t>(dst) % 16 == 0) {
        alone = push_reduce_scatter(state, in, dst, fp32, out.count, stream);
        return;
      }
      // An output the kernel's 16-byte stores cannot reach: the sum goes through the
      // workspace and is copied after (the same bits).
      std::size_t const bytes = out.count * (fp32 ? sizeof(float) : sizeof(bf16));
      void* aligned = detail::acquire_workspace(state, options, bytes, stream);
      push_reduce_scatter(state, in, aligned, fp32, out.count, stream);
      SYMMCOMM_CUDA_TRY(cudaMemcpyAsync(dst, aligned, bytes, cudaMemcpyDeviceToDevice, stream));
    };
    write_output(out, temp, push_into, stream);
    return requantizes(out.type) ? detail::ReplayLaunch{} : alone;
  }
  detail::DeviceView view(call);
  detail::QuantizedBases base;
  base.data = view.bind(0, Slot::SendData);
  if (in.nvfp4()) base.block_scales = view.bind(1, Slot::SendBlockScales);
  base.scale = view.bind(2, Slot::SendScale);
  detail::lsa::ReduceArgs a = detail::reduce_args(in.type, base, my_displacement, out.count,
                                                  in.count / static_cast<std::size_t>(state.size));
  auto reduce_into = [&](auto* dst) {
    a.out = dst;
    a.out_fp32 = std::is_same_v<std::remove_pointer_t<decltype(dst)>, float>;
    alone = detail::peers_launch<detail::lsa::ReduceArgs, detail::lsa::reduce>(view.peers(), a)
                .now(state, stream);
  };
  write_output(out, temp, reduce_into, stream);
  return requantizes(out.type) ? detail::ReplayLaunch{} : alone;
}

// All-to-all of quantized shards into a workspace, then a local fp32 reduction.
void fallback_reduce_scatter(detail::CommState& state, const QuantizedInput& in,
                             const QuantizedOutput& out,
                             const std::vector<std::size_t>& shard_counts,
                             const std::vector<std::size_t>& displ, cudaStream_t stream,
                             const Options& options, const detail::PlannedCall& call) {
  std::size_t const n = static_cast<std::size_t>(state.size);
  call.refuse_in_group("quantized reduction");
  WorkspaceLayout const layout = layout_for(in.type, out.type, out.count, n);
  auto* ws = static_cast<char*>(detail::acquire_workspace(state, options, layout.total, stream));
  auto* ws_data = reinterpret_cast<std::uint8_t*>(ws + layout.data);
  auto* ws_scales = reinterpret_cast<std::uint8_t*>(ws + layout.scales);
  auto* ws_globals = reinterpret_cast<float*>(ws + layout.globals);
  std::size_t const my_count = out.count;

  detail::DeviceGuard guard(state.device);
  {
    // All-to-all of shards: shard r of every rank goes to rank r; scales travel with them.
    Group group;
    SYMMCOMM_NCCL_TRY(ncclAllGather(in.scale, ws_globals, 1, ncclFloat32, state.comm, stream));
    for (std::size_t r = 0; r < n; ++r) {
      int const peer = static_cast<int>(r);
      if (shard_counts[r] > 0) {
        SYMMCOMM_NCCL_TRY(ncclSend(in.data + in.data_bytes(displ[r]),
                                   in.data_bytes(shard_counts[r]), ncclUint8, peer, state.comm,
                                   stream));
        if (in.nvfp4()) {
          SYMMCOMM_NCCL_TRY(ncclSend(in.block_scales + displ[r] / kNvfp4BlockSize,
                                     shard_counts[r] / kNvfp4BlockSize, ncclUint8, peer, state.comm,
                                     stream));
        }
      }
      if (my_count > 0) {
        SYMMCOMM_NCCL_TRY(ncclRecv(ws_data + r * in.data_bytes(my_count), in.data_bytes(my_count),
                                   ncclUint8, peer, state.comm, stream));
        if (in.nvfp4()) {
          SYMMCOMM_NCCL_TRY(ncclRecv(ws_scales + r * (my_count / kNvfp4BlockSize),
                                     my_count / kNvfp4BlockSize, ncclUint8, peer, state.comm,
                                     stream));
        }
      }
    }
    group.end();
  }
  QuantizedShards shards;
  shards.ranks = state.size;
  for (std::size_t r = 0; r < n; ++r) {
    shards.data[r] = ws_data + r * in.data_bytes(my_count);
    shards.block_scales[r] = in.nvfp4() ? ws_scales + r * (my_count / kNvfp4BlockSize) : nullptr;
    shards.scale[r] = ws_globals + r;
  }
  auto reduce_into = [&](auto* dst) {
    if (in.nvfp4()) {
      reduce_nvfp4_shards(shards, my_count, dst, stream);
    } else {
      reduce_fp8_shards(shards, my_count, in.fp8_format(), dst, stream);
    }
  };
  write_output(out, reinterpret_cast<float*>(ws + layout.temp), reduce_into, stream);
}

QuantizedInput input_of(const TensorRef& t) {
  return QuantizedInput{t.dtype, static_cast<const std::uint8_t*>(t.data),
                        static_cast<const std::uint8_t*>(t.block_scales), t.scales, t.count};
}
QuantizedOutput output_of(const TensorRef& t) {
  return QuantizedOutput{t.dtype,  t.data,  static_cast<std::uint8_t*>(t.block_scales),
                         t.scales, t.count, "recv"};
}

std::vector<std::size_t> shard_counts_of(const CollectiveCall& call, std::size_t n) {
  if (call.counts == Counts::Host) {
    return std::vector<std::size_t>(call.host_counts, call.host_counts + n);
  }
  return std::vector<std::size_t>(n, call.recv.count);
}

Plan quantized_reduce_scatter(CommState& state, const CollectiveCall& call, cudaStream_t stream,
                              const Options& options) {
  const char* const operation = operation_name(call);
  QuantizedInput const in = input_of(call.send);
  QuantizedOutput const out = output_of(call.recv);
  std::size_t const n = static_cast<std::size_t>(state.size);
  std::size_t const me = static_cast<std::size_t>(state.rank);
  std::vector<std::size_t> const shard_counts = shard_counts_of(call, n);
  PlannedCall planned(state, Operation::ReduceScatter, options, operation);
  planned.types(in.type, out.type)
      .per_rank(in.data_bytes(out.count), call.counts == Counts::Equal)
      .lsa_kernel(true)
      .buffer(Slot::SendData, "send.data", in.data, in.data_bytes(in.count));
  if (in.nvfp4()) {
    planned.buffer(Slot::SendBlockScales, "send.block_scales", in.block_scales,
                   in.count / kNvfp4BlockSize);
  }
  planned.buffer(Slot::SendScale, send_scale_name(in), in.scale, sizeof(float))
      .buffer(Slot::RecvData, "recv.data", out.data, payload_bytes(out.type, out.count),
              false);  // written by this rank only
  Plan const plan = planned.decide(stream);
  auto const displ = displacements(shard_counts);
  planned.before_enqueue(stream);
  ReplayLaunch launched;
  if (plan.path == Path::LsaKernel) {
    bool const equal_shards = std::all_of(shard_counts.begin(), shard_counts.end(),
                                          [&](std::size_t c) { return c == out.count; });
    launched =
        lsa_reduce_scatter(state, in, out, planned, displ[me], equal_shards, stream, options);
  } else {
    fallback_reduce_scatter(state, in, out, shard_counts, displ, stream, options, planned);
  }
  planned.record(stream, to_string(in.type), in.count);
  if (launched.fn != nullptr) {
    keep_call(state, call, options, planned, launched, to_string(in.type), in.count);
  }
  return plan;
}

}  // namespace

Plan execute_reduce_scatter(CommState& state, const CollectiveCall& call, cudaStream_t stream,
                            const Options& options) {
  if (nccl_reduces_natively(call.send.dtype, call.recv.dtype)) {
    return native_reduce_scatter(state, call, stream, options);
  }
  return quantized_reduce_scatter(state, call, stream, options);
}

void enqueue_reduce_scatter_fallback(CommState& state, const CollectiveCall& call,
                                     cudaStream_t stream, const Options& options,
                                     const PlannedCall& planned) {
  DeviceGuard guard(state.device);
  if (nccl_reduces_natively(call.send.dtype, call.recv.dtype)) {
    enqueue_native(state, call, stream);
    return;
  }
  auto const n = static_cast<std::size_t>(state.size);
  std::vector<std::size_t> const shard_counts = shard_counts_of(call, n);
  fallback_reduce_scatter(state, input_of(call.send), output_of(call.recv), shard_counts,
                          displacements(shard_counts), stream, options, planned);
}

}  // namespace symmcomm::detail

namespace symmcomm {

std::size_t reduce_scatter_workspace_bytes(DataType send_type, DataType recv_type,
                                           std::size_t send_count, int comm_size) {
  SYMMCOMM_EXPECTS(send_type == DataType::Nvfp4 || send_type == DataType::Fp8E4M3 ||
                       send_type == DataType::Fp8E5M2,
                   "send_type " << to_string(send_type) << " needs no workspace (NCCL reduces it)");
  SYMMCOMM_EXPECTS(comm_size > 0, "comm_size " << comm_size << " is not positive");
  std::size_t const n = static_cast<std::size_t>(comm_size);
  return detail::layout_for(send_type, recv_type, send_count / n, n).total;
}

}  // namespace symmcomm
