// One call's way through symmcomm (call.hpp): which (operation, counts, send dtype, recv dtype)
// rows exist and which executor runs each, the descriptor builders, and run(): the
// communicator checked, the arguments validated once (validate_call.hpp), then the executor,
// which plans once and launches.

#include "call.hpp"

#include <iterator>

#include "call_prerequisites.hpp"
#include "executors.hpp"
#include "replay.hpp"
#include "symmcomm/error.hpp"
#include "validate_call.hpp"

namespace symmcomm::detail {

TensorRef tensor_ref(ConstBf16Span span) noexcept {
  TensorRef t;
  t.dtype = DataType::Bf16;
  t.data = const_cast<bf16*>(span.data);  // read only: a send side
  t.count = span.count;
  return t;
}

TensorRef tensor_ref(ConstFp32Span span) noexcept {
  TensorRef t;
  t.dtype = DataType::Fp32;
  t.data = const_cast<float*>(span.data);
  t.count = span.count;
  return t;
}

TensorRef tensor_ref(const ConstFp8View& view) noexcept {
  TensorRef t;
  t.dtype = view.dtype();
  t.data = const_cast<std::uint8_t*>(view.data);
  t.scales = const_cast<float*>(view.scale);
  t.count = view.count;
  return t;
}

TensorRef tensor_ref(const ConstNvfp4View& view) noexcept {
  TensorRef t;
  t.dtype = DataType::Nvfp4;
  t.data = const_cast<std::uint8_t*>(view.data);
  t.block_scales = const_cast<std::uint8_t*>(view.block_scales);
  t.scales = const_cast<float*>(view.global_scale);
  t.count = view.count;
  t.scale_layout = view.scale_layout;
  t.row_elements = view.row_elements;
  return t;
}

const char* operation_name(const CollectiveCall& call) noexcept {
  switch (call.op) {
    case Collective::AllGather:
      return call.counts == Counts::Equal  ? "all_gather"
             : call.counts == Counts::Host ? "all_gatherv"
                                           : "all_gatherv (device counts)";
    case Collective::ReduceScatter:
      return call.counts == Counts::Equal  ? "reduce_scatter"
             : call.counts == Counts::Host ? "reduce_scatterv"
                                           : "reduce_scatterv (device counts)";
    case Collective::QuantizeAllGather:
      return "quantize_all_gather";
  }
  return "collective";
}

CollectiveCall gather_call(TensorRef send, TensorRef recv) noexcept {
  CollectiveCall c;
  c.op = Collective::AllGather;
  c.send = send;
  c.recv = recv;
  return c;
}

CollectiveCall reduce_scatter_call(TensorRef send, TensorRef recv) noexcept {
  CollectiveCall c;
  c.op = Collective::ReduceScatter;
  c.send = send;
  c.recv = recv;
  return c;
}

CollectiveCall quantize_gather_call(TensorRef input, TensorRef recv, const float* scale) noexcept {
  CollectiveCall c;
  c.op = Collective::QuantizeAllGather;
  c.send = input;
  c.recv = recv;
  c.quantize_scale = scale;
  return c;
}

CollectiveCall with_host_counts(CollectiveCall call, const std::size_t* counts,
                                std::size_t entries) noexcept {
  call.counts = Counts::Host;
  call.host_counts = counts;
  call.host_count_entries = entries;
  return call;
}

CollectiveCall with_device_counts(CollectiveCall call, const DeviceCounts& counts,
                                  std::size_t row_elements) noexcept {
  call.counts = Counts::Device;
  call.device_counts = counts;
  call.row_elements = row_elements;
  return call;
}

namespace {

// A dtype class of a row: one dtype, or any FP8 encoding (then, where both sides are FP8, the
// same one on both).
enum class Kind : std::uint8_t { Bf16, Fp32, Nvfp4, Fp8, SameFp8 };

bool matches(Kind k, DataType t) {
  switch (k) {
    case Kind::Bf16:
      return t == DataType::Bf16;
    case Kind::Fp32:
      return t == DataType::Fp32;
    case Kind::Nvfp4:
      return t == DataType::Nvfp4;
    case Kind::Fp8:
    case Kind::SameFp8:
      return t == DataType::Fp8E4M3 || t == DataType::Fp8E5M2;
  }
  return false;
}

using Executor = Plan (*)(CommState&, const CollectiveCall&, cudaStream_t, const Options&);

// Every call symmcomm runs: operation, where its counts are, send and receive dtypes, and the
// executor. A descriptor that matches no row is refused by name ("reduce_scatter of send nvfp4
// into recv fp8e4m3 is not supported").
struct Row {
  Collective op;
  Counts counts;
  Kind send, recv;
  Executor execute;
};

constexpr Row kRows[] = {
    {Collective::AllGather, Counts::Equal, Kind::Bf16, Kind::Bf16, execute_gather},
    {Collective::AllGather, Counts::Equal, Kind::SameFp8, Kind::SameFp8, execute_gather},
    {Collective::AllGather, Counts::Equal, Kind::Nvfp4, Kind::Nvfp4, execute_gather},
    {Collective::AllGather, Counts::Host, Kind::Bf16, Kind::Bf16, execute_gather},
    {Collective::AllGather, Counts::Host, Kind::SameFp8, Kind::SameFp8, execute_gather},
    {Collective::AllGather, Counts::Host, Kind::Nvfp4, Kind::Nvfp4, execute_gather},
    {Collective::AllGather, Counts::Device, Kind::Bf16, Kind::Bf16, execute_device_count_gather},
    {Collective::AllGather, Counts::Device, Kind::SameFp8, Kind::SameFp8,
     execute_device_count_gather},
    {Collective::AllGather, Counts::Device, Kind::Nvfp4, Kind::Nvfp4, execute_device_count_gather},
    {Collective::ReduceScatter, Counts::Equal, Kind::Bf16, Kind::Bf16, execute_reduce_scatter},
    {Collective::ReduceScatter, Counts::Equal, Kind::Fp32, Kind::Fp32, execute_reduce_scatter},
    {Collective::ReduceScatter, Counts::Equal, Kind::Nvfp4, Kind::Bf16, execute_reduce_scatter},
    {Collective::ReduceScatter, Counts::Equal, Kind::Nvfp4, Kind::Fp32, execute_reduce_scatter},
    {Collective::ReduceScatter, Counts::Equal, Kind::Nvfp4, Kind::Nvfp4, execute_reduce_scatter},
    {Collective::ReduceScatter, Counts::Equal, Kind::Fp8, Kind::Bf16, execute_reduce_scatter},
    {Collective::ReduceScatter, Counts::Equal, Kind::Fp8, Kind::Fp32, execute_reduce_scatter},
    {Collective::ReduceScatter, Counts::Equal, Kind::SameFp8, Kind::SameFp8,
     execute_reduce_scatter},
    {Collective::ReduceScatter, Counts::Host, Kind::Bf16, Kind::Bf16, execute_reduce_scatter},
    {Collective::ReduceScatter, Counts::Host, Kind::Nvfp4, Kind::Bf16, execute_reduce_scatter},
    {Collective::ReduceScatter, Counts::Host, Kind::Fp8, Kind::Bf16, execute_reduce_scatter},
    {Collective::ReduceScatter, Counts::Device, Kind::Bf16, Kind::Bf16,
     execute_device_count_reduce_scatter},
    {Collective::ReduceScatter, Counts::Device, Kind::Nvfp4, Kind::Bf16,
     execute_device_count_reduce_scatter},
    {Collective::QuantizeAllGather, Counts::Equal, Kind::Bf16, Kind::Nvfp4,
     execute_quantize_gather},
    {Collective::QuantizeAllGather, Counts::Equal, Kind::Bf16, Kind::Fp8, execute_quantize_gather},
};

// The row of `call`, or a LogicError naming the call and both dtypes. A raw multi-tensor gather
// (items only) has no dtype and is its own row.
Executor executor_of(const CollectiveCall& call) {
  if (call.items_only) return execute_gather;
  DataType const s = call.send.dtype, r = call.recv.dtype;
  for (const Row& row : kRows) {
    if (row.op != call.op || row.counts != call.counts) continue;
    if (!matches(row.send, s) || !matches(row.recv, r)) continue;
    if (row.send == Kind::SameFp8 && s != r) continue;
    return row.execute;
  }
  const char* const input = call.op == Collective::QuantizeAllGather ? "input" : "send";
  if (call.op == Collective::AllGather && s != r) {
    // A gather moves one dtype; an FP8 pair differs in its encoding.
    SYMMCOMM_FAIL(operation_name(call)
                  << ": send is " << to_string(s) << ", recv " << to_string(r));
  }
  SYMMCOMM_FAIL(operation_name(call) << " of " << input << " " << to_string(s) << " into recv "
                                     << to_string(r) << " is not supported");
}

}  // namespace

Plan run(const Communicator& comm, const CollectiveCall& call, cudaStream_t stream,
         const Options& options) {
  const char* const operation = operation_name(call);
  Executor const execute = executor_of(call);
  // Device-count calls name every argument error before the communicator (their checks need
  // only comm.size()); the others name an empty communicator first, never a count mismatch
  // against comm.size() == 0.
  if (call.counts == Counts::Device) {
    validate_call(call, comm.size(), comm.rank());
    return execute(usable_state(comm, operation), call, stream, options);
  }
  CommState& state = usable_state(comm, operation);
  // The communicator's previous call again (replay.hpp): validated and planned already.
  if (Plan plan; replay_call(state, call, operation, stream, options, plan)) return plan;
  validate_call(call, state.size, state.rank);
  return execute(state, call, stream, options);
}

}  // namespace symmcomm::detail
