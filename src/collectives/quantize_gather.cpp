// The fused quantize + all-gather executor (executors.hpp): one LSA kernel that quantizes bf16
// and writes every peer's symmetric receive window, or quantize-then-gather under the same
// plan (the gather of the quantized copy is not planned again).

#include <optional>
#include <vector>

#include "collectives/device_view.hpp"
#include "core/cuda_utils.hpp"
#include "executors.hpp"
#include "formats/codecs_internal.hpp"
#include "scale_swizzle.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/codecs.hpp"
#include "symmcomm/memory/provenance.hpp"

namespace symmcomm::detail {
namespace {

// Where this rank's quantized input lies in its scratch: data, then block scales (NVFP4), then
// the scale, each 256-byte aligned.
struct QuantizedLayout {
  std::size_t data_bytes, scale_bytes, total;
};
QuantizedLayout quantized_layout(DataType type, std::size_t count) {
  bool const nvfp4 = type == DataType::Nvfp4;
  std::size_t const data = align256(payload_bytes(type, count));
  std::size_t const scales = nvfp4 ? align256(count / kNvfp4BlockSize) : std::size_t{0};
  return QuantizedLayout{data, scales, data + scales + align256(sizeof(float))};
}

// The quantized bytes one rank contributes.
std::size_t contributed_bytes(DataType type, std::size_t count) {
  return payload_bytes(type, count) + (type == DataType::Nvfp4 ? count / kNvfp4BlockSize : 0) +
         sizeof(float);
}

// NCCL's path under `planned`: quantize this rank's input into `into` (null: the workspace),
// then gather the quantized copy into recv.
void quantize_then_gather(CommState& state, const CollectiveCall& call, const PlannedCall& planned,
                          const SwizzledScales* swizzle, cudaStream_t stream,
                          const Options& options, void* into) {
  const TensorRef& input = call.send;
  const TensorRef& recv = call.recv;
  std::size_t const count = input.count;
  QuantizedLayout const layout = quantized_layout(recv.dtype, count);
  // Swizzled scales on NCCL's path need workspace of their own in the gather: after the copy.
  Options gather_options = options;
  std::size_t const extra =
      swizzle != nullptr && into == nullptr ? align256(recv.count / kNvfp4BlockSize) : 0;
  auto* ws = static_cast<std::uint8_t*>(
      into != nullptr ? into
                      : acquire_workspace(state, options, align256(layout.total) + extra, stream));
  if (extra > 0) {
    gather_options.workspace = ws + align256(layout.total);
    gather_options.workspace_bytes = extra;
  }
  auto* slot = reinterpret_cast<float*>(ws + layout.data_bytes + layout.scale_bytes);
  ScaleMode const mode = call.quantize_scale == nullptr ? ScaleMode::Compute : ScaleMode::Given;
  // Read only under ScaleMode::Given.
  float* const scale =
      call.quantize_scale == nullptr ? slot : const_cast<float*>(call.quantize_scale);
  TensorRef mine;
  mine.dtype = recv.dtype;
  mine.data = ws;
  mine.block_scales = recv.dtype == DataType::Nvfp4 ? ws + layout.data_bytes : nullptr;
  mine.scales = scale;
  mine.count = count;
  DeviceGuard guard(state.device);
  if (recv.dtype == DataType::Nvfp4) {
    quantize_nvfp4(static_cast<const bf16*>(input.data), mine.nvfp4(), mode, stream);
  } else {
    quantize_fp8(static_cast<const bf16*>(input.data), mine.fp8(), mode, stream);
  }
  enqueue_gather(state, planned,
                 tensor_parts(mine, recv, static_cast<std::size_t>(state.size), nullptr, swizzle),
                 stream, gather_options);
}

// symmcomm's LSA kernel: quantizes and writes every peer's receive window in one pass.
void fused(CommState& state, const CollectiveCall& call, const PlannedCall& planned,
           const SwizzledScales* swizzle, cudaStream_t stream, const Options& options) {
  const TensorRef& input = call.send;
  const TensorRef& recv = call.recv;
  auto const n = static_cast<std::size_t>(state.size);
  auto const me = static_cast<std::size_t>(state.rank);
  DeviceGuard guard(state.device);
  // No scale given: the launcher computes it into a workspace slot after its checks.
  float* const slot = call.quantize_scale == nullptr
                          ? static_cast<float*>(acquire_workspace(state, options, 256, stream))
                          : nullptr;
  const float* const scale = slot != nullptr ? slot : call.quantize_scale;
  DeviceView view(planned);
  QuantizedBases base;
  base.data = view.bind(0, Slot::RecvData);
  if (recv.dtype == DataType::Nvfp4) base.block_scales = view.bind(1, Slot::RecvBlockScales);
  base.scale = view.bind(2, Slot::RecvScale);
  planned.before_enqueue(stream);
  lsa::quantize_gather(
      view.peers(),
      quantize_gather_args(recv.dtype, static_cast<const bf16*>(input.data), scale, input.count,
                           me * input.count, input.count, base, swizzle, me, n),
      stream, slot);
}

}  // namespace

Plan execute_quantize_gather(CommState& state, const CollectiveCall& call, cudaStream_t stream,
                             const Options& options) {
  const char* const operation = operation_name(call);
  const TensorRef& input = call.send;
  const TensorRef& recv = call.recv;
  bool const nvfp4 = recv.dtype == DataType::Nvfp4;
  auto const n = static_cast<std::size_t>(state.size);
  // Swizzled block scales (recv.scale_layout): the fused kernel writes each in its tile;
  // NCCL's path quantizes, then swizzles after its gather.
  std::optional<SwizzledScales> swizzle;
  if (nvfp4) {
    swizzle = swizzled_scales(recv.nvfp4(), std::vector<std::size_t>(n, input.count), operation);
  }
  // NCCL's path gathers a copy quantized first: into Options::staging.send when it is big
  // enough (NCCL 2.28 runs its symmetric kernels only with the send side in a window too),
  // else into the workspace.
  std::size_t const need = quantized_layout(recv.dtype, input.count).total;
  void* const staging = options.staging.send != nullptr && options.staging.send_bytes >= need
                            ? options.staging.send
                            : nullptr;
  PlannedCall planned(state, Operation::AllGather, options, operation);
  planned.types(DataType::Bf16, recv.dtype)
      .per_rank(contributed_bytes(recv.dtype, input.count))
      .lsa_kernel(true)
      .quantize_first(staging, need)
      .buffer(Slot::Input, "input", input.data, input.data_bytes(), false,
              false)  // read by this rank only
      .buffer(Slot::RecvData, "recv.data", recv.data, recv.data_bytes());
  if (nvfp4) {
    planned.buffer(Slot::RecvBlockScales, "recv.block_scales", recv.block_scales,
                   swizzle ? swizzle->bytes : recv.nvfp4().scale_bytes());
  }
  planned.buffer(Slot::RecvScale, nvfp4 ? "recv.global_scale" : "recv.scale", recv.scales,
                 n * sizeof(float));
  Plan const plan = planned.decide(stream);
  const SwizzledScales* const sw = swizzle ? &*swizzle : nullptr;
  if (plan.path == Path::LsaKernel) {
    fused(state, call, planned, sw, stream, options);
  } else {
    bool const into_staging =
        staging != nullptr && planned.provenance(Slot::StagingSend).symmetric();
    quantize_then_gather(state, call, planned, sw, stream, options,
                         into_staging ? staging : nullptr);
  }
  planned.record(stream, to_string(recv.dtype), input.count);
  return plan;
}

}  // namespace symmcomm::detail
