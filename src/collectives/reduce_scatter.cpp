// Reduce-scatter executors: NCCL's own sum for BF16/FP32; for NVFP4/FP8 with per-rank scales,
// an all-to-all of quantized shards followed by a local fp32 reduction (never a reduction in
// the low-precision type along a ring).

#include "symmcomm/collectives/reduce_scatter.hpp"

#include <nccl.h>

#include "common.hpp"
#include "core/cuda_utils.hpp"
#include "lsa_args.hpp"
#include "symmcomm/collectives/local_reduce.hpp"
#include "symmcomm/comm/group.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/codecs.hpp"

namespace symmcomm {
namespace {

// ---- native (BF16 / FP32) -------------------------------------------------------------------

template <class T>
Plan native_reduce_scatter(const Communicator& comm, Span<const T> send, Span<T> recv,
                           const std::vector<std::size_t>* counts, cudaStream_t stream,
                           const Options& options) {
  constexpr DataType type = std::is_same_v<T, float> ? DataType::Fp32 : DataType::Bf16;
  constexpr ncclDataType_t nccl_type = std::is_same_v<T, float> ? ncclFloat32 : ncclBfloat16;
  const char* const operation = counts != nullptr ? "reduce_scatterv" : "reduce_scatter";
  validate(send, "send", sizeof(T));
  validate(recv, "recv", sizeof(T));
  detail::CommState& state = detail::usable_state(comm, operation);
  std::size_t const n = static_cast<std::size_t>(state.size);
  if (counts != nullptr) {
    detail::check_counts(*counts, state.size, state.rank, recv.count, send.count, 1, "recv.count",
                         "send.count");
  } else {
    SYMMCOMM_EXPECTS(send.count == recv.count * n, "send.count "
                                                       << send.count << " is not recv.count "
                                                       << recv.count << " x comm.size() " << n);
  }
  detail::PlannedCall call(state, Operation::ReduceScatter, options, operation);
  call.types(type, type)
      .per_rank(recv.data_bytes(), counts == nullptr)
      .staging_usable(counts == nullptr &&
                      detail::staging_usable(state, options, send.data_bytes(), recv.data_bytes()))
      .buffer(Slot::SendData, "send.data", send.data, send.data_bytes())
      .buffer(Slot::RecvData, "recv.data", recv.data, recv.data_bytes());
  Plan const plan = call.decide(stream);  // no LSA kernel for native sums: NCCL's own paths
  detail::DeviceGuard guard(state.device);
  call.before_enqueue(stream);
  if (plan.staged) {
    call.refuse_in_group("staged path");
    SYMMCOMM_CUDA_TRY(cudaMemcpyAsync(options.staging.send, send.data, send.data_bytes(),
                                      cudaMemcpyDeviceToDevice, stream));
    SYMMCOMM_NCCL_TRY(ncclReduceScatter(options.staging.send, options.staging.recv, recv.count,
                                        nccl_type, ncclSum, state.comm, stream));
    SYMMCOMM_CUDA_TRY(cudaMemcpyAsync(recv.data, options.staging.recv, recv.data_bytes(),
                                      cudaMemcpyDeviceToDevice, stream));
  } else if (counts == nullptr) {
    SYMMCOMM_NCCL_TRY(ncclReduceScatter(send.data, recv.data, recv.count, nccl_type, ncclSum,
                                        state.comm, stream));
  } else {
    auto const displ = detail::displacements(*counts);
    Group group;
    for (std::size_t r = 0; r < n; ++r) {
      if ((*counts)[r] == 0) continue;
      SYMMCOMM_NCCL_TRY(ncclReduce(send.data + displ[r], recv.data, (*counts)[r], nccl_type,
                                   ncclSum, static_cast<int>(r), state.comm, stream));
    }
    group.end();
  }
  call.record(stream, to_string(type), send.count);
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

void lsa_reduce_scatter(detail::CommState& state, const QuantizedInput& in,
                        const QuantizedOutput& out, const detail::PlannedCall& call,
                        std::size_t my_displacement, cudaStream_t stream, const Options& options) {
  float* temp = nullptr;
  if (requantizes(out.type)) {
    temp = static_cast<float*>(
        detail::acquire_workspace(state, options, out.count * sizeof(float), stream));
  }
  detail::DeviceGuard guard(state.device);
  detail::lsa::Peers peers = detail::lsa_peers(state);
  const Provenance& data = call.provenance(Slot::SendData);
  const Provenance& scale = call.provenance(Slot::SendScale);
  detail::QuantizedBases base;
  peers.window[0] = data.window;
  base.data = data.offset;
  if (in.nvfp4()) {
    const Provenance& scales = call.provenance(Slot::SendBlockScales);
    peers.window[1] = scales.window;
    base.block_scales = scales.offset;
  }
  peers.window[2] = scale.window;
  base.scale = scale.offset;
  detail::lsa::ReduceArgs a = detail::reduce_args(in.type, base, my_displacement, out.count,
                                                  in.count / static_cast<std::size_t>(state.size));
  auto reduce_into = [&](auto* dst) {
    a.out = dst;
    a.out_fp32 = std::is_same_v<std::remove_pointer_t<decltype(dst)>, float>;
    detail::lsa::reduce(peers, a, stream);
  };
  write_output(out, temp, reduce_into, stream);
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

Plan quantized_reduce_scatter(const Communicator& comm, const QuantizedInput& in,
                              const QuantizedOutput& out, const std::vector<std::size_t>* counts,
                              cudaStream_t stream, const Options& options) {
  const char* const operation = counts != nullptr ? "reduce_scatterv" : "reduce_scatter";
  detail::CommState& state = detail::usable_state(comm, operation);
  std::size_t const n = static_cast<std::size_t>(state.size);
  std::size_t const me = static_cast<std::size_t>(state.rank);
  SYMMCOMM_EXPECTS(state.size <= QuantizedShards::kMaxRanks,
                   operation << ": " << n << " ranks exceed the " << QuantizedShards::kMaxRanks
                             << " a quantized reduction supports");
  std::vector<std::size_t> shard_counts;
  if (counts != nullptr) {
    detail::check_counts(*counts, state.size, state.rank, out.count, in.count, 16,
                         (std::string(out.name) + ".count").c_str(), "send.count");
    shard_counts = *counts;
  } else {
    SYMMCOMM_EXPECTS(in.count == out.count * n, "send.count " << in.count << " is not " << out.name
                                                              << ".count " << out.count
                                                              << " x comm.size() " << n);
    SYMMCOMM_EXPECTS(out.count % 16 == 0, out.name << ".count " << out.count
                                                   << " is not a multiple of 16 (quantized "
                                                      "shards are reduced 16 elements at a time)");
    shard_counts.assign(n, out.count);
  }
  std::size_t const out_data_bytes = payload_bytes(out.type, out.count);
  detail::PlannedCall call(state, Operation::ReduceScatter, options, operation);
  call.types(in.type, out.type)
      .per_rank(in.data_bytes(out.count), counts == nullptr)
      .lsa_kernel(true)
      .buffer(Slot::SendData, "send.data", in.data, in.data_bytes(in.count));
  if (in.nvfp4()) {
    call.buffer(Slot::SendBlockScales, "send.block_scales", in.block_scales,
                in.count / kNvfp4BlockSize);
  }
  call.buffer(Slot::SendScale, send_scale_name(in), in.scale, sizeof(float))
      .buffer(Slot::RecvData, "recv.data", out.data, out_data_bytes,
              false);  // written by this rank only
  Plan const plan = call.decide(stream);
  auto const displ = detail::displacements(shard_counts);
  call.before_enqueue(stream);
  if (plan.path == Path::LsaKernel) {
    lsa_reduce_scatter(state, in, out, call, displ[me], stream, options);
  } else {
    fallback_reduce_scatter(state, in, out, shard_counts, displ, stream, options, call);
  }
  call.record(stream, to_string(in.type), in.count);
  return plan;
}

QuantizedInput input_of(const ConstNvfp4View& v) {
  validate(v, "send", 8);
  return QuantizedInput{v.dtype(), v.data, v.block_scales, v.global_scale, v.count};
}
QuantizedInput input_of(const ConstFp8View& v) {
  validate(v, "send", 16);
  return QuantizedInput{v.dtype(), v.data, nullptr, v.scale, v.count};
}
QuantizedOutput output_of(const Bf16Span& s) {
  validate(s, "recv");
  return QuantizedOutput{DataType::Bf16, s.data, nullptr, nullptr, s.count, "recv"};
}
QuantizedOutput output_of(const Fp32Span& s) {
  validate(s, "recv");
  return QuantizedOutput{DataType::Fp32, s.data, nullptr, nullptr, s.count, "recv"};
}
QuantizedOutput output_of(const Nvfp4View& v) {
  validate(v, "recv");
  return QuantizedOutput{v.dtype(), v.data, v.block_scales, v.global_scale, v.count, "recv"};
}
QuantizedOutput output_of(const Fp8View& v) {
  validate(v, "recv");
  return QuantizedOutput{v.dtype(), v.data, nullptr, v.scale, v.count, "recv"};
}

}  // namespace

Plan reduce_scatter(const Communicator& comm, ConstBf16Span send, Bf16Span recv,
                    cudaStream_t stream, const Options& options) {
  return native_reduce_scatter(comm, send, recv, nullptr, stream, options);
}
Plan reduce_scatter(const Communicator& comm, ConstFp32Span send, Fp32Span recv,
                    cudaStream_t stream, const Options& options) {
  return native_reduce_scatter(comm, send, recv, nullptr, stream, options);
}
Plan reduce_scatter(const Communicator& comm, ConstNvfp4View send, Bf16Span recv,
                    cudaStream_t stream, const Options& options) {
  return quantized_reduce_scatter(comm, input_of(send), output_of(recv), nullptr, stream, options);
}
Plan reduce_scatter(const Communicator& comm, ConstNvfp4View send, Fp32Span recv,
                    cudaStream_t stream, const Options& options) {
  return quantized_reduce_scatter(comm, input_of(send), output_of(recv), nullptr, stream, options);
}
Plan reduce_scatter(const Communicator& comm, ConstNvfp4View send, Nvfp4View recv,
                    cudaStream_t stream, const Options& options) {
  return quantized_reduce_scatter(comm, input_of(send), output_of(recv), nullptr, stream, options);
}
Plan reduce_scatter(const Communicator& comm, ConstFp8View send, Bf16Span recv, cudaStream_t stream,
                    const Options& options) {
  return quantized_reduce_scatter(comm, input_of(send), output_of(recv), nullptr, stream, options);
}
Plan reduce_scatter(const Communicator& comm, ConstFp8View send, Fp32Span recv, cudaStream_t stream,
                    const Options& options) {
  return quantized_reduce_scatter(comm, input_of(send), output_of(recv), nullptr, stream, options);
}
Plan reduce_scatter(const Communicator& comm, ConstFp8View send, Fp8View recv, cudaStream_t stream,
                    const Options& options) {
  return quantized_reduce_scatter(comm, input_of(send), output_of(recv), nullptr, stream, options);
}
Plan reduce_scatterv(const Communicator& comm, ConstBf16Span send, Bf16Span recv,
                     const std::vector<std::size_t>& counts, cudaStream_t stream,
                     const Options& options) {
  return native_reduce_scatter(comm, send, recv, &counts, stream, options);
}
Plan reduce_scatterv(const Communicator& comm, ConstNvfp4View send, Bf16Span recv,
                     const std::vector<std::size_t>& counts, cudaStream_t stream,
                     const Options& options) {
  return quantized_reduce_scatter(comm, input_of(send), output_of(recv), &counts, stream, options);
}
Plan reduce_scatterv(const Communicator& comm, ConstFp8View send, Bf16Span recv,
                     const std::vector<std::size_t>& counts, cudaStream_t stream,
                     const Options& options) {
  return quantized_reduce_scatter(comm, input_of(send), output_of(recv), &counts, stream, options);
}

std::size_t reduce_scatter_workspace_bytes(DataType send_type, DataType recv_type,
                                           std::size_t send_count, int comm_size) {
  SYMMCOMM_EXPECTS(send_type == DataType::Nvfp4 || send_type == DataType::Fp8E4M3 ||
                       send_type == DataType::Fp8E5M2,
                   "send_type " << to_string(send_type) << " needs no workspace (NCCL reduces it)");
  SYMMCOMM_EXPECTS(comm_size > 0, "comm_size " << comm_size << " is not positive");
  std::size_t const n = static_cast<std::size_t>(comm_size);
  return layout_for(send_type, recv_type, send_count / n, n).total;
}

}  // namespace symmcomm
