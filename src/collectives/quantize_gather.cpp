// Fused quantize + all-gather (symmcomm/collectives/all_gather.hpp): one LSA kernel that
// quantizes bf16 and writes every peer's symmetric receive window, or quantize-then-gather.

#include <optional>
#include <type_traits>
#include <vector>

#include "common.hpp"
#include "core/cuda_utils.hpp"
#include "formats/codecs_internal.hpp"
#include "lsa_args.hpp"
#include "scale_swizzle.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/codecs.hpp"
#include "symmcomm/memory/provenance.hpp"

namespace symmcomm {
namespace {

constexpr const char* kOperation = "quantize_all_gather";

template <class Recv>
constexpr bool is_nvfp4() {
  return std::is_same_v<Recv, Nvfp4View>;
}

template <class Recv>
float* recv_scale(const Recv& recv) {
  if constexpr (is_nvfp4<Recv>()) {
    return recv.global_scale;
  } else {
    return recv.scale;
  }
}

// The name the receive side's per-rank scales are planned (and reported) under.
template <class Recv>
constexpr const char* scale_name() {
  return is_nvfp4<Recv>() ? "recv.global_scale" : "recv.scale";
}

// The quantized bytes one rank contributes.
template <class Recv>
std::size_t payload_bytes(std::size_t count) {
  return (is_nvfp4<Recv>() ? count / 2 + count / kNvfp4BlockSize : count) + sizeof(float);
}

// Where this rank's quantized input lies in its scratch: data, then block scales (NVFP4), then
// the scale, each 256-byte aligned.
struct QuantizedLayout {
  std::size_t data_bytes, scale_bytes, total;
};
template <class Recv>
QuantizedLayout quantized_layout(std::size_t count) {
  std::size_t const data = detail::align256(is_nvfp4<Recv>() ? count / 2 : count);
  std::size_t const scales =
      is_nvfp4<Recv>() ? detail::align256(count / kNvfp4BlockSize) : std::size_t{0};
  return QuantizedLayout{data, scales, data + scales + detail::align256(sizeof(float))};
}

// Quantize this rank's input into `into` (null: the workspace), then gather it with all_gather.
template <class Recv>
Plan quantize_then_gather(detail::CommState& state, const Communicator& comm, ConstBf16Span input,
                          Recv recv, const float* scale, cudaStream_t stream,
                          const Options& options, void* into = nullptr) {
  std::size_t const count = input.count;
  QuantizedLayout const layout = quantized_layout<Recv>(count);
  std::size_t const data_bytes = layout.data_bytes;
  std::size_t const scale_bytes = layout.scale_bytes;
  // Swizzled scales on NCCL's path need workspace of their own in the gather: after the copy.
  Options gather_options = options;
  std::size_t extra = 0;
  if constexpr (is_nvfp4<Recv>()) {
    if (recv.scale_layout != ScaleLayout::Linear && into == nullptr) {
      extra = detail::align256(recv.count / kNvfp4BlockSize);
    }
  }
  auto* ws = static_cast<std::uint8_t*>(
      into != nullptr ? into
                      : detail::acquire_workspace(state, options,
                                                  detail::align256(layout.total) + extra, stream));
  if (extra > 0) {
    gather_options.workspace = ws + detail::align256(layout.total);
    gather_options.workspace_bytes = extra;
  }
  auto* slot = reinterpret_cast<float*>(ws + data_bytes + scale_bytes);
  ScaleMode const mode = scale == nullptr ? ScaleMode::Compute : ScaleMode::Given;
  float* const scale_ptr = scale == nullptr ? slot : const_cast<float*>(scale);  // read only
  detail::DeviceGuard guard(state.device);
  if constexpr (is_nvfp4<Recv>()) {
    Nvfp4View const mine{ws, ws + data_bytes, scale_ptr, count};
    quantize_nvfp4(input.data, mine, mode, stream);
    return all_gather(comm, mine, recv, stream, gather_options);
  } else {
    Fp8View const mine{ws, scale_ptr, count, recv.format};
    quantize_fp8(input.data, mine, mode, stream);
    return all_gather(comm, mine, recv, stream, gather_options);
  }
}

template <class Recv>
Plan fused_quantize_gather(const Communicator& comm, ConstBf16Span input, Recv recv,
                           const float* scale, cudaStream_t stream, const Options& options) {
  detail::CommState& state = detail::usable_state(comm, kOperation);
  validate(input, "input");
  if constexpr (is_nvfp4<Recv>()) {
    validate_gather_recv(recv, "recv", 8);
  } else {
    validate(recv, "recv", 8);
  }
  std::size_t const n = static_cast<std::size_t>(state.size);
  std::size_t const me = static_cast<std::size_t>(state.rank);
  SYMMCOMM_EXPECTS(input.count % 16 == 0,
                   "input.count " << input.count << " is not a multiple of 16");
  SYMMCOMM_EXPECTS(recv.count == input.count * n, "recv.count "
                                                      << recv.count << " is not input.count "
                                                      << input.count << " x comm.size() " << n);
  // Swizzled block scales (recv.scale_layout): the fused kernel writes each in its tile;
  // NCCL's path quantizes, then all_gather swizzles after its gather.
  std::optional<detail::SwizzledScales> swizzle;
  if constexpr (is_nvfp4<Recv>()) {
    swizzle = detail::swizzled_scales(recv, std::vector<std::size_t>(n, input.count), kOperation);
  }
  // NCCL's path gathers a copy quantized first: into Options::staging.send when it is big
  // enough (NCCL 2.28 runs its symmetric kernels only with the send side in a window too),
  // else into the workspace.
  std::size_t const need = quantized_layout<Recv>(input.count).total;
  void* const staging = options.staging.send != nullptr && options.staging.send_bytes >= need
                            ? options.staging.send
                            : nullptr;
  detail::PlannedCall call(state, Operation::AllGather, options, kOperation);
  call.types(DataType::Bf16, recv.dtype())
      .per_rank(payload_bytes<Recv>(input.count))
      .lsa_kernel(true)
      .quantize_first(staging, need)
      .buffer(Slot::Input, "input", input.data, input.data_bytes(), false,
              false)  // read by this rank only
      .buffer(Slot::RecvData, "recv.data", recv.data, recv.data_bytes());
  if constexpr (is_nvfp4<Recv>()) {
    call.buffer(Slot::RecvBlockScales, "recv.block_scales", recv.block_scales,
                swizzle ? swizzle->bytes : recv.scale_bytes());
  }
  call.buffer(Slot::RecvScale, scale_name<Recv>(), recv_scale(recv), n * sizeof(float));
  Plan const plan = call.decide(stream);
  if (plan.path != Path::LsaKernel) {
    // Quantize, then all_gather, which plans the gather of the quantized copy itself (the plan
    // returned is that gather's).
    bool const into_staging = staging != nullptr && call.provenance(Slot::StagingSend).symmetric();
    return quantize_then_gather(state, comm, input, recv, scale, stream, options,
                                into_staging ? staging : nullptr);
  }

  detail::DeviceGuard guard(state.device);
  const float* scale_ptr = scale;
  if (scale_ptr == nullptr) {
    auto* slot = static_cast<float*>(detail::acquire_workspace(state, options, 256, stream));
    detail::scale_from_amax(input.data, input.count, slot, recv.dtype(), stream);
    scale_ptr = slot;
  }
  detail::lsa::Peers peers = detail::lsa_peers(state);
  const Provenance& data = call.provenance(Slot::RecvData);
  const Provenance& globals = call.provenance(Slot::RecvScale);
  detail::QuantizedBases base;
  peers.window[0] = data.window;
  base.data = data.offset;
  if constexpr (is_nvfp4<Recv>()) {
    const Provenance& scales = call.provenance(Slot::RecvBlockScales);
    peers.window[1] = scales.window;
    base.block_scales = scales.offset;
  }
  peers.window[2] = globals.window;
  base.scale = globals.offset;
  call.before_enqueue(stream);
  detail::lsa::quantize_gather(
      peers,
      detail::quantize_gather_args(recv.dtype(), input.data, scale_ptr, input.count,
                                   me * input.count, input.count, base,
                                   swizzle ? &*swizzle : nullptr, me, n),
      stream);
  call.record(stream, is_nvfp4<Recv>() ? "nvfp4" : "fp8", input.count);
  return plan;
}

}  // namespace

Plan quantize_all_gather(const Communicator& comm, ConstBf16Span input, Nvfp4View recv,
                         const float* global_scale, cudaStream_t stream, const Options& options) {
  return fused_quantize_gather(comm, input, recv, global_scale, stream, options);
}

Plan quantize_all_gather(const Communicator& comm, ConstBf16Span input, Fp8View recv,
                         const float* scale, cudaStream_t stream, const Options& options) {
  return fused_quantize_gather(comm, input, recv, scale, stream, options);
}

}  // namespace symmcomm
