// The executors of collectives whose counts are on the device
// (symmcomm/collectives/device_counts.hpp): symmcomm's one-launch LSA kernels, or NCCL's calls
// with every rank's rows at capacity and one more pass on the device (a gather's compaction, a
// reduce-scatter's layout at capacity).

#include "symmcomm/collectives/device_counts.hpp"

#include <nccl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/device_view.hpp"
#include "comm/dev_comm.hpp"
#include "comm/wait_internal.hpp"
#include "core/cuda_utils.hpp"
#include "executors.hpp"
#include "kernels/compact.hpp"
#include "kernels/lsa.hpp"
#include "kernels/lsa_ll_device_counts.hpp"
#include "scratch.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/comm/wait.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/nvfp4.hpp"
#include "symmcomm/formats/scale_layout.hpp"

namespace symmcomm::detail {
namespace {

// One tensor that moves by rows: `row_bytes` per row, capacity rows at `send`.
struct RowPart {
  const char* name;
  const void* send;
  void* recv;
  std::size_t row_bytes;
  bool swizzled = false;  // NVFP4 block scales into the 128 x 4 layout (compact.hpp)
};

// One float per rank gathered as it is (FP8 scale, NVFP4 global scale); null send: none.
struct ScalePart {
  const char* name;
  const float* send;
  float* recv;
};

// Each part's rows at capacity (`rows_total` = ranks x capacity of them) in the workspace, part
// after part, 256-byte aligned: their offsets into `at`; returns the bytes they take.
std::size_t padded_layout(const std::vector<RowPart>& rows, std::size_t rows_total,
                          std::vector<std::size_t>& at) {
  std::size_t bytes = 0;
  for (const RowPart& p : rows) {
    at.push_back(bytes);
    bytes += align256(rows_total * p.row_bytes);
  }
  return bytes;
}

// The compaction's arguments for these counts; the caller fills its `parts` parts.
compact::Args compact_args(const DeviceCounts& counts, int ranks, std::size_t parts) {
  compact::Args a;
  a.parts = static_cast<int>(parts);
  a.counts = counts.counts;
  a.ranks = ranks;
  a.capacity = counts.capacity;
  a.offsets = counts.offsets;
  a.overflow = counts.overflow;
  return a;
}

// This rank's count: counts.count, or, for a reduce-scatter whose counts were gathered before
// the call (count null), its entry of counts.counts (the paths that exchange counts send it
// again, the same value).
const std::int32_t* own_count(const DeviceCounts& counts, int rank) {
  return counts.count != nullptr ? counts.count : counts.counts + rank;
}

// The count exchange's arguments of a one-launch call (lsa::DeviceCountsArgs): the caller's counts,
// its counts array (`all`, in a window) at its slot, the grid fixed by capacity rows of
// `row_bytes`.
void fill_device_counts(lsa::DeviceCountsArgs& a, const DeviceCounts& counts, int rank,
                        DeviceView& view, int counts_part, std::size_t row_bytes) {
  a.count = own_count(counts, rank);
  a.counts = view.ref(Slot::RecvPart, counts_part, "counts.counts");
  a.offsets = counts.offsets;
  a.overflow = counts.overflow;
  a.capacity = counts.capacity;
  a.grid_bytes = counts.capacity * row_bytes;
}

// The row tensors of a device-count call: its own (data; NVFP4 block scales), then the
// caller's row items. A reduce-scatter's rows have no receive side (its output is `recv`).
std::vector<RowPart> row_parts(const CollectiveCall& call) {
  const TensorRef& send = call.send;
  const TensorRef& recv = call.recv;
  bool const gather = call.op == Collective::AllGather;
  std::size_t const row = call.row_elements;
  std::vector<RowPart> rows{RowPart{"send.data", send.data, gather ? recv.data : nullptr,
                                    payload_bytes(send.dtype, row)}};
  if (send.dtype == DataType::Nvfp4) {
    rows.push_back(RowPart{"send.block_scales", send.block_scales,
                           gather ? recv.block_scales : nullptr, row / kNvfp4BlockSize,
                           gather && recv.scale_layout == ScaleLayout::Swizzled128x4});
  }
  for (std::size_t i = 0; i < call.row_item_count; ++i) {
    const RowItem& it = call.row_items[i];
    rows.push_back(RowPart{it.name, it.send, it.recv, it.row_bytes});
  }
  return rows;
}

// A gather's per-rank scale (FP8 scale, NVFP4 global scale), or none (BF16).
ScalePart scale_part(const CollectiveCall& call) {
  if (call.send.dtype == DataType::Nvfp4) {
    return ScalePart{"send.global_scale", call.send.scales, call.recv.scales};
  }
  if (call.send.is_fp8()) return ScalePart{"send.scale", call.send.scales, call.recv.scales};
  return ScalePart{"", nullptr, nullptr};
}

std::size_t total_row_bytes(const std::vector<RowPart>& rows) {
  std::size_t row_bytes = 0;
  for (const RowPart& p : rows) row_bytes += p.row_bytes;
  return row_bytes;
}

// One launch: counts through the window, one barrier, then only the rows that count.
void enqueue_device_counts_gather(const CommState& state, const PlannedCall& planned,
                                  const CollectiveCall& call, const std::vector<RowPart>& rows,
                                  const ScalePart& scale, int counts_part, cudaStream_t stream) {
  DeviceView view(planned);
  lsa::DeviceCountsGatherArgs a;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    a.part[i] = lsa::DeviceCountsGatherArgs::Part{
        rows[i].send, view.ref(Slot::RecvPart, static_cast<int>(i), rows[i].name),
        rows[i].row_bytes, rows[i].swizzled};
  }
  a.parts = static_cast<int>(rows.size());
  fill_device_counts(a, call.device_counts, state.rank, view, counts_part, total_row_bytes(rows));
  if (scale.send != nullptr) {
    a.scale_src = scale.send;
    a.scale_dst = view.ref(Slot::RecvScale, scale.name);
  }
  planned.before_enqueue(stream);
  lsa::device_counts_gather(view.peers(), a, stream);
}

// The counts and scratch of a counts-in-lines call (lsa::LlCountsArgs).
void fill_ll_counts(lsa::LlCountsArgs& a, const CommState& state, const DeviceCounts& counts) {
  a.count = counts.count;
  a.counts = counts.counts;
  a.offsets = counts.offsets;
  a.overflow = counts.overflow;
  a.capacity = counts.capacity;
  fill_ll_scratch(state, a);
}

// The counts-in-lines arguments of a call (lsa::LlDeviceCountsGatherArgs), or parts = 0 where the
// call does not fit that kernel (a swizzled part, too many parts, rows past a slot, switched off).
lsa::LlDeviceCountsGatherArgs ll_device_counts_args(const CommState& state,
                                                    const CollectiveCall& call,
                                                    const std::vector<RowPart>& rows,
                                                    const ScalePart& scale) {
  lsa::LlDeviceCountsGatherArgs a;
  if (rows.size() > static_cast<std::size_t>(lsa::LlDeviceCountsGatherArgs::kMaxParts)) return a;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].swizzled) return lsa::LlDeviceCountsGatherArgs{};
    a.part[i] = lsa::LlDeviceCountsGatherArgs::Part{rows[i].send, rows[i].recv, rows[i].row_bytes};
  }
  a.parts = static_cast<int>(rows.size());
  const DeviceCounts& counts = call.device_counts;
  if (!lsa::ll_device_counts_fits(
          lsa::ll_counts_on(scratch_of(state).has_window(), scratch_of(state).counts_in_lines),
          counts.capacity, lsa::ll_row_lines(a))) {
    return lsa::LlDeviceCountsGatherArgs{};
  }
  a.scale_src = scale.send;
  a.scale_recv = scale.recv;
  fill_ll_counts(a, state, counts);
  return a;
}

// NCCL gathers every rank's count and its rows at capacity into the workspace (rank after rank,
// part after part), then one kernel compacts them.
void enqueue_padded_gather(CommState& state, const PlannedCall& planned, const CollectiveCall& call,
                           const std::vector<RowPart>& rows, const ScalePart& scale,
                           cudaStream_t stream, const Options& options) {
  const DeviceCounts& counts = call.device_counts;
  auto const n = static_cast<std::size_t>(state.size);
  planned.refuse_in_group("counts on the device: compaction after NCCL's gathers");
  std::vector<std::size_t> at;
  std::size_t const need = padded_layout(rows, n * counts.capacity, at);
  auto* ws =
      static_cast<std::uint8_t*>(acquire_workspace(state, options, need > 0 ? need : 256, stream));
  planned.before_enqueue(stream);
  SYMMCOMM_NCCL_TRY(ncclGroupStart());
  ncclResult_t r = ncclAllGather(counts.count, counts.counts, 1, ncclInt32, state.comm, stream);
  for (std::size_t i = 0; i < rows.size() && r == ncclSuccess; ++i) {
    r = ncclAllGather(rows[i].send, ws + at[i], counts.capacity * rows[i].row_bytes, ncclUint8,
                      state.comm, stream);
  }
  if (r == ncclSuccess && scale.send != nullptr) {
    r = ncclAllGather(scale.send, scale.recv, 1, ncclFloat32, state.comm, stream);
  }
  ncclResult_t const end = ncclGroupEnd();
  SYMMCOMM_NCCL_TRY(r);
  SYMMCOMM_NCCL_TRY(end);
  compact::Args a = compact_args(counts, state.size, rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    a.part[i] = compact::Part{ws + at[i], static_cast<std::uint8_t*>(rows[i].recv),
                              rows[i].row_bytes, rows[i].swizzled};
  }
  compact::compact_rows(a, stream);
}

}  // namespace

Plan execute_device_count_gather(CommState& state, const CollectiveCall& call, cudaStream_t stream,
                                 const Options& options) {
  const char* const operation = operation_name(call);
  const DeviceCounts& counts = call.device_counts;
  auto const n = static_cast<std::size_t>(state.size);
  std::vector<RowPart> const rows = row_parts(call);
  ScalePart const scale = scale_part(call);
  PlannedCall planned(state, Operation::AllGather, options, operation);
  // The LSA kernel addresses on peers every receive part, the counts array and the scale floats,
  // in at most kSlots distinct windows (checked once their provenance is known).
  planned.per_rank(counts.capacity * total_row_bytes(rows), false)
      .lsa_kernel(rows.size() <= lsa::DeviceCountsGatherArgs::kMaxParts);
  int index = 0;
  for (const RowPart& p : rows) {
    planned.part(Slot::SendPart, index, p.name, p.send, counts.capacity * p.row_bytes, false);
    planned.part(Slot::RecvPart, index++, p.name, p.recv,
                 p.swizzled ? swizzled_scale_bytes(n * counts.capacity, p.row_bytes)
                            : n * counts.capacity * p.row_bytes);
  }
  int const counts_part = index;
  planned.part(Slot::RecvPart, counts_part, "counts.counts", counts.counts,
               n * sizeof(std::int32_t));
  if (scale.send != nullptr) {
    planned.buffer(Slot::RecvScale, scale.name, scale.recv, n * sizeof(float));
  }
  // Counts in the scratch lines where the call fits that kernel, else the one-launch kernel.
  lsa::LlDeviceCountsGatherArgs const ll = ll_device_counts_args(state, call, rows, scale);
  planned.device_counts(ll.parts > 0);
  Plan const plan = planned.decide(stream);
  DeviceGuard guard(state.device);
  if (plan.path == Path::LsaKernel) {
    if (plan.counts_in_lines) {
      planned.before_enqueue(stream);
      lsa::ll_device_counts_gather(ll, state.lsa_launch_share(), stream);
    } else {
      enqueue_device_counts_gather(state, planned, call, rows, scale, counts_part, stream);
    }
  } else {
    enqueue_padded_gather(state, planned, call, rows, scale, stream, options);
  }
  planned.record(stream, to_string(call.send.dtype), call.send.count);
  return plan;
}

namespace {

// One launch (lsa::device_counts_reduce): counts through the window, one barrier, then each rank
// reads only its rows from every peer's send parts (BF16 values, or NVFP4 codes and block
// scales with every rank's global scale).
void enqueue_device_counts_reduce(const CommState& state, const PlannedCall& planned,
                                  const CollectiveCall& call, const std::vector<RowPart>& rows,
                                  cudaStream_t stream) {
  DeviceView view(planned);
  lsa::DeviceCountsReduceArgs a;
  fill_device_counts(a, call.device_counts, state.rank, view, 0, total_row_bytes(rows));
  a.type = call.send.dtype;
  a.send = view.ref(Slot::SendPart, 0, rows[0].name);
  if (a.type == DataType::Nvfp4) {
    a.block_scales = view.ref(Slot::SendPart, 1, rows[1].name);
    a.scale = view.ref(Slot::SendScale, "send.global_scale");
  }
  a.row_elements = call.row_elements;
  a.out = static_cast<bf16*>(call.recv.data);
  planned.before_enqueue(stream);
  lsa::device_counts_reduce(view.peers(), a, stream);
}

// Counts in the scratch lines (lsa::ll_device_counts_reduce: switched on, and the rows fit a slot).
void enqueue_ll_device_counts_reduce(const CommState& state, const PlannedCall& planned,
                                     const CollectiveCall& call, cudaStream_t stream) {
  lsa::LlDeviceCountsReduceArgs a;
  a.type = call.send.dtype;
  a.send = call.send.data;
  a.block_scales = static_cast<const std::uint8_t*>(call.send.block_scales);
  a.scale = call.send.scales;
  a.out = static_cast<bf16*>(call.recv.data);
  a.row_elements = call.row_elements;
  fill_ll_counts(a, state, call.device_counts);
  planned.before_enqueue(stream);
  lsa::ll_device_counts_reduce(a, state.lsa_launch_share(), stream);
}

// The compact rows laid out at capacity in the workspace (zeroed first), then reduce-scattered
// on the fallback (the workspace is no window) with workspace of its own after the rows.
void enqueue_padded_reduce(CommState& state, const PlannedCall& planned, const CollectiveCall& call,
                           const std::vector<RowPart>& rows, cudaStream_t stream,
                           const Options& options) {
  const DeviceCounts& counts = call.device_counts;
  auto const n = static_cast<std::size_t>(state.size);
  planned.refuse_in_group("counts on the device: layout before NCCL's reduce-scatter");
  bool const nvfp4 = call.send.dtype == DataType::Nvfp4;
  std::size_t const scatter_workspace =
      nvfp4 ? reduce_scatter_workspace_bytes(DataType::Nvfp4, DataType::Bf16, call.send.count,
                                             state.size)
            : 0;
  std::vector<std::size_t> at;
  std::size_t const padded_bytes = padded_layout(rows, n * counts.capacity, at);
  std::size_t const need = padded_bytes + align256(scatter_workspace);
  auto* ws =
      static_cast<std::uint8_t*>(acquire_workspace(state, options, need > 0 ? need : 256, stream));
  planned.before_enqueue(stream);
  // In place where the counts were gathered before the call (own_count).
  SYMMCOMM_NCCL_TRY(ncclAllGather(own_count(counts, state.rank), counts.counts, 1, ncclInt32,
                                  state.comm, stream));
  if (padded_bytes > 0) SYMMCOMM_CUDA_TRY(cudaMemsetAsync(ws, 0, padded_bytes, stream));
  compact::Args a = compact_args(counts, state.size, rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    a.part[i] = compact::Part{static_cast<const std::uint8_t*>(rows[i].send), ws + at[i],
                              rows[i].row_bytes};
  }
  a.expand = true;
  compact::compact_rows(a, stream);
  TensorRef padded = call.send;
  padded.data = ws + at[0];
  if (nvfp4) padded.block_scales = ws + at[1];
  Options inner;
  inner.workspace = ws + padded_bytes;
  inner.workspace_bytes = need - padded_bytes;
  enqueue_reduce_scatter_fallback(state, reduce_scatter_call(padded, call.recv), stream, inner,
                                  planned);
}

}  // namespace

Plan execute_device_count_reduce_scatter(CommState& state, const CollectiveCall& call,
                                         cudaStream_t stream, const Options& options) {
  const char* const operation = operation_name(call);
  const DeviceCounts& counts = call.device_counts;
  auto const n = static_cast<std::size_t>(state.size);
  std::vector<RowPart> const rows = row_parts(call);
  // symmcomm's one-launch kernel sums BF16 rows, and NVFP4 rows whose codes it can load 8 bytes
  // and whose bf16 output it can store 16 bytes at a time; other NVFP4 rows take the fallback.
  bool const nvfp4 = call.send.dtype == DataType::Nvfp4;
  bool const kernel = call.send.dtype == DataType::Bf16 ||
                      (nvfp4 && reinterpret_cast<std::uintptr_t>(call.send.data) % 8 == 0 &&
                       reinterpret_cast<std::uintptr_t>(call.recv.data) % 16 == 0);
  PlannedCall planned(state, Operation::ReduceScatter, options, operation);
  bool const lines = kernel && lsa::ll_device_counts_reduce_fits(
                                   lsa::ll_counts_on(scratch_of(state).has_window(),
                                                     scratch_of(state).counts_in_lines),
                                   call.send.dtype, counts.capacity, call.row_elements);
  planned.per_rank(counts.capacity * total_row_bytes(rows), false)
      .lsa_kernel(kernel)
      .device_counts(lines, counts.count == nullptr);
  int index = 0;
  for (const RowPart& p : rows) {
    // Peers read the send rows only on the LSA path.
    planned.part(Slot::SendPart, index++, p.name, p.send, n * counts.capacity * p.row_bytes,
                 kernel);
  }
  if (kernel) {
    planned.part(Slot::RecvPart, 0, "counts.counts", counts.counts, n * sizeof(std::int32_t));
    if (nvfp4)
      planned.buffer(Slot::SendScale, "send.global_scale", call.send.scales, sizeof(float));
  }
  planned.buffer(Slot::RecvData, "recv.data", call.recv.data, call.recv.data_bytes(), false);
  Plan const plan = planned.decide(stream);
  DeviceGuard guard(state.device);
  if (plan.path == Path::LsaKernel) {
    if (plan.counts_in_lines) {
      enqueue_ll_device_counts_reduce(state, planned, call, stream);
    } else {
      enqueue_device_counts_reduce(state, planned, call, rows, stream);
    }
  } else {
    enqueue_padded_reduce(state, planned, call, rows, stream, options);
  }
  planned.record(stream, to_string(call.send.dtype), call.send.count);
  return plan;
}

}  // namespace symmcomm::detail

namespace symmcomm {

bool overflowed(const Communicator& comm, const DeviceCounts& counts, cudaStream_t stream,
                bool clear) {
  SYMMCOMM_EXPECTS(counts.overflow != nullptr, "overflowed: counts.overflow is null");
  detail::CommState& state = detail::usable_state(comm, "overflowed");
  detail::DeviceGuard guard(state.device);
  std::int32_t flag = 0;
  detail::copy_to_host_after(state, &flag, counts.overflow, sizeof flag, stream,
                             default_wait_timeout(), "overflowed");
  if (clear && flag != 0) {
    SYMMCOMM_CUDA_TRY(cudaMemsetAsync(counts.overflow, 0, sizeof flag, stream));
  }
  return flag != 0;
}

}  // namespace symmcomm
