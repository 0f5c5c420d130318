// All-gathers with counts on the device (symmcomm/collectives/ragged.hpp): every rank's count
// and its rows at capacity gathered by NCCL, then compacted by one kernel (kernels/compact.hpp).

#include "symmcomm/collectives/ragged.hpp"

#include <nccl.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "comm/wait_internal.hpp"
#include "common.hpp"
#include "core/cuda_utils.hpp"
#include "kernels/compact.hpp"
#include "kernels/lsa.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/comm/wait.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/nvfp4.hpp"
#include "symmcomm/formats/scale_layout.hpp"

namespace symmcomm {
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

void check_counts(const DeviceCounts& c, int ranks, const char* operation) {
  SYMMCOMM_EXPECTS(c.count != nullptr, operation << ": counts.count is null (this rank's count, "
                                                    "a device int32)");
  SYMMCOMM_EXPECTS(c.counts != nullptr && c.offsets != nullptr,
                   operation << ": counts.counts and counts.offsets must be device arrays of "
                             << ranks << " int32 (they are written)");
  SYMMCOMM_EXPECTS(c.overflow != nullptr,
                   operation << ": counts.overflow is null (a device int32 the call sets when a "
                                "count is outside 0..capacity)");
  SYMMCOMM_EXPECTS(c.capacity <= static_cast<std::size_t>(INT32_MAX),
                   operation << ": counts.capacity " << c.capacity << " exceeds int32 rows");
  SYMMCOMM_EXPECTS(ranks <= detail::compact::kMaxRanks,
                   operation << ": " << ranks << " ranks exceed the " << detail::compact::kMaxRanks
                             << " one compaction handles");
}

void check_rows(std::size_t send_count, std::size_t recv_count, std::size_t row_elements,
                const DeviceCounts& c, int ranks, const char* operation) {
  SYMMCOMM_EXPECTS(row_elements > 0, operation << ": row_elements is 0");
  SYMMCOMM_EXPECTS(send_count == c.capacity * row_elements,
                   operation << ": send.count " << send_count << " is not counts.capacity "
                             << c.capacity << " x row_elements " << row_elements);
  SYMMCOMM_EXPECTS(recv_count == static_cast<std::size_t>(ranks) * c.capacity * row_elements,
                   operation << ": recv.count " << recv_count << " is not comm.size() " << ranks
                             << " x counts.capacity " << c.capacity << " x row_elements "
                             << row_elements);
}

// The caller's extra tensors, checked, after the view's own parts.
void add_items(std::vector<RowPart>& rows, const std::vector<RowItem>& items,
               const DeviceCounts& counts, const char* operation) {
  SYMMCOMM_EXPECTS(items.size() <= kMaxRowItems,
                   operation << ": " << items.size() << " items; at most " << kMaxRowItems);
  for (std::size_t i = 0; i < items.size(); ++i) {
    const RowItem& it = items[i];
    SYMMCOMM_EXPECTS(it.row_bytes > 0,
                     operation << ": items[" << i << "] (" << it.name << ").row_bytes is 0");
    SYMMCOMM_EXPECTS(counts.capacity == 0 || (it.send != nullptr && it.recv != nullptr),
                     operation << ": items[" << i << "] (" << it.name << ") send or recv is null");
    rows.push_back(RowPart{it.name, it.send, it.recv, it.row_bytes});
  }
}

// send.count and recv.count of a device-count reduce-scatter: the gather's shapes mirrored.
void check_scatter_rows(std::size_t send_count, std::size_t recv_count, std::size_t row_elements,
                        const DeviceCounts& c, int ranks, const char* operation) {
  SYMMCOMM_EXPECTS(row_elements > 0, operation << ": row_elements is 0");
  SYMMCOMM_EXPECTS(send_count == static_cast<std::size_t>(ranks) * c.capacity * row_elements,
                   operation << ": send.count " << send_count << " is not comm.size() " << ranks
                             << " x counts.capacity " << c.capacity << " x row_elements "
                             << row_elements);
  SYMMCOMM_EXPECTS(recv_count == c.capacity * row_elements,
                   operation << ": recv.count " << recv_count << " is not counts.capacity "
                             << c.capacity << " x row_elements " << row_elements);
}

// Every device-count call's argument checks, in order: the views, NVFP4 rows of whole blocks,
// the counts, then the shapes (a gather's send is capacity rows, a reduce-scatter's recv).
constexpr const char* kGather = "all_gatherv (device counts)";
constexpr const char* kScatter = "reduce_scatterv (device counts)";

// A gather's NVFP4 recv may hold swizzled block scales; every other view is checked as usual.
template <class View>
void validate_recv(const View& recv, std::size_t alignment) {
  validate(recv, "recv", alignment);
}
void validate_recv(const Nvfp4View& recv, std::size_t alignment) {
  validate_gather_recv(recv, "recv", alignment);
}

template <class Send, class Recv>
void check_args(const Send& send, const Recv& recv, std::size_t row_elements,
                const DeviceCounts& counts, int ranks, const char* operation, bool whole_blocks,
                std::size_t send_alignment = 1, std::size_t recv_alignment = 1) {
  validate(send, "send", send_alignment);
  validate_recv(recv, recv_alignment);
  SYMMCOMM_EXPECTS(!whole_blocks || row_elements % kNvfp4BlockSize == 0,
                   operation << ": row_elements " << row_elements << " is not a multiple of "
                             << kNvfp4BlockSize << " (NVFP4 rows are whole blocks)");
  check_counts(counts, ranks, operation);
  if (operation == kGather) {
    check_rows(send.count, recv.count, row_elements, counts, ranks, operation);
  } else {
    check_scatter_rows(send.count, recv.count, row_elements, counts, ranks, operation);
  }
}

// Each part's rows at capacity (`rows_total` = ranks x capacity of them) in the workspace, part
// after part, 256-byte aligned: their offsets into `at`; returns the bytes they take.
std::size_t padded_layout(const std::vector<RowPart>& rows, std::size_t rows_total,
                          std::vector<std::size_t>& at) {
  std::size_t bytes = 0;
  for (const RowPart& p : rows) {
    at.push_back(bytes);
    bytes += detail::align256(rows_total * p.row_bytes);
  }
  return bytes;
}

// The compaction's arguments for these counts; the caller fills its `parts` parts.
detail::compact::Args compact_args(const DeviceCounts& counts, int ranks, std::size_t parts) {
  detail::compact::Args a;
  a.parts = static_cast<int>(parts);
  a.counts = counts.counts;
  a.ranks = ranks;
  a.capacity = counts.capacity;
  a.offsets = counts.offsets;
  a.overflow = counts.overflow;
  return a;
}

// The LSA kernels' slots: one per distinct window among the buffers a kernel addresses on peers
// (at most kSlots), filled into `peers` as buffers are added.
class WindowSlots {
 public:
  WindowSlots(detail::lsa::Peers& peers, const char* operation)
      : peers_(peers), operation_(operation) {}
  detail::lsa::SymRef ref(const Provenance& p, const char* name) {
    return detail::lsa::SymRef{slot(p, name), p.offset};
  }
  int slot(const Provenance& p, const char* name) {
    for (int s = 0; s < used_; ++s) {
      if (peers_.window[s] == p.window) return s;
    }
    SYMMCOMM_EXPECTS(used_ < detail::lsa::kSlots,
                     operation_ << ": " << name << " is in a " << used_ + 1
                                << "th window; the LSA kernel reaches at most "
                                << detail::lsa::kSlots
                                << " (allocate the buffers from one pool: its arena is one "
                                   "window)");
    peers_.window[used_] = p.window;
    return used_++;
  }

 private:
  detail::lsa::Peers& peers_;
  const char* operation_;
  int used_ = 0;
};

// The count exchange's arguments of a one-launch call (lsa::CountedArgs): the caller's counts,
// its counts array (`all`, in a window) at its slot, the grid fixed by capacity rows of
// `row_bytes`.
void fill_counted(detail::lsa::CountedArgs& a, const DeviceCounts& counts, WindowSlots& slots,
                  const Provenance& all, std::size_t row_bytes) {
  a.count = counts.count;
  a.counts = slots.ref(all, "counts.counts");
  a.offsets = counts.offsets;
  a.overflow = counts.overflow;
  a.capacity = counts.capacity;
  a.grid_bytes = counts.capacity * row_bytes;
}

Plan ragged_gather(const Communicator& comm, const char* type, std::size_t count,
                   const std::vector<RowPart>& rows, const ScalePart& scale,
                   const DeviceCounts& counts, cudaStream_t stream, const Options& options) {
  const char* const operation = kGather;
  detail::CommState& state = detail::usable_state(comm, operation);
  auto const n = static_cast<std::size_t>(state.size);
  std::size_t row_bytes = 0;
  for (const RowPart& p : rows) row_bytes += p.row_bytes;
  std::size_t const per_rank = counts.capacity * row_bytes;
  detail::PlannedCall call(state, Operation::AllGather, options, operation);
  // The LSA kernel addresses on peers every receive part, the counts array and the scale floats,
  // in at most kSlots distinct windows (checked once their provenance is known).
  call.per_rank(per_rank, false)
      .lsa_kernel(rows.size() <= detail::lsa::CountedGatherArgs::kMaxParts);
  int index = 0;
  for (const RowPart& p : rows) {
    call.part(Slot::SendPart, index, p.name, p.send, counts.capacity * p.row_bytes, false);
    call.part(Slot::RecvPart, index++, p.name, p.recv,
              p.swizzled ? swizzled_scale_bytes(n * counts.capacity, p.row_bytes)
                         : n * counts.capacity * p.row_bytes);
  }
  int const counts_part = index;
  call.part(Slot::RecvPart, counts_part, "counts.counts", counts.counts, n * sizeof(std::int32_t));
  if (scale.send != nullptr)
    call.buffer(Slot::RecvScale, scale.name, scale.recv, n * sizeof(float));
  call.device_counts();
  Plan const plan = call.decide(stream);

  detail::DeviceGuard guard(state.device);
  if (plan.path == Path::LsaKernel) {
    // One launch: counts through the window, one barrier, then only the rows that count.
    detail::lsa::Peers peers = detail::lsa_peers(state);
    WindowSlots slots(peers, operation);
    detail::lsa::CountedGatherArgs a;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      a.part[i] = detail::lsa::CountedGatherArgs::Part{
          rows[i].send,
          slots.ref(call.provenance(Slot::RecvPart, static_cast<int>(i)), rows[i].name),
          rows[i].row_bytes, rows[i].swizzled};
    }
    a.parts = static_cast<int>(rows.size());
    fill_counted(a, counts, slots, call.provenance(Slot::RecvPart, counts_part), row_bytes);
    if (scale.send != nullptr) {
      a.scale_src = scale.send;
      a.scale_dst = slots.ref(call.provenance(Slot::RecvScale), scale.name);
    }
    call.before_enqueue(stream);
    detail::lsa::counted_gather(peers, a, stream);
    call.record(stream, type, count);
    return plan;
  }
  call.refuse_in_group("counts on the device: compaction after NCCL's gathers");
  // The rows at capacity land in the workspace, rank after rank, part after part.
  std::vector<std::size_t> at;
  std::size_t const need = padded_layout(rows, n * counts.capacity, at);
  auto* ws = static_cast<std::uint8_t*>(
      detail::acquire_workspace(state, options, need > 0 ? need : 256, stream));
  call.before_enqueue(stream);
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
  detail::compact::Args a = compact_args(counts, state.size, rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    a.part[i] = detail::compact::Part{ws + at[i], static_cast<std::uint8_t*>(rows[i].recv),
                                      rows[i].row_bytes, rows[i].swizzled};
  }
  detail::compact::compact_rows(a, stream);
  call.record(stream, type, count);
  return plan;
}

}  // namespace

Plan all_gatherv(const Communicator& comm, ConstBf16Span send, Bf16Span recv,
                 std::size_t row_elements, const DeviceCounts& counts, cudaStream_t stream,
                 const Options& options) {
  return all_gatherv(comm, send, recv, row_elements, std::vector<RowItem>{}, counts, stream,
                     options);
}

Plan all_gatherv(const Communicator& comm, ConstBf16Span send, Bf16Span recv,
                 std::size_t row_elements, const std::vector<RowItem>& items,
                 const DeviceCounts& counts, cudaStream_t stream, const Options& options) {
  const char* const operation = kGather;
  check_args(send, recv, row_elements, counts, comm.size(), operation, false);
  std::vector<RowPart> rows{
      RowPart{"send.data", send.data, recv.data, row_elements * sizeof(bf16)}};
  add_items(rows, items, counts, operation);
  return ragged_gather(comm, "bf16", send.count, rows, ScalePart{"", nullptr, nullptr}, counts,
                       stream, options);
}

Plan all_gatherv(const Communicator& comm, ConstFp8View send, Fp8View recv,
                 std::size_t row_elements, const DeviceCounts& counts, cudaStream_t stream,
                 const Options& options) {
  const char* const operation = kGather;
  SYMMCOMM_EXPECTS(send.format == recv.format, operation << ": send and recv FP8 formats differ");
  check_args(send, recv, row_elements, counts, comm.size(), operation, false);
  return ragged_gather(comm, to_string(send.dtype()), send.count,
                       {RowPart{"send.data", send.data, recv.data, row_elements}},
                       ScalePart{"send.scale", send.scale, recv.scale}, counts, stream, options);
}

Plan all_gatherv(const Communicator& comm, ConstNvfp4View send, Nvfp4View recv,
                 std::size_t row_elements, const DeviceCounts& counts, cudaStream_t stream,
                 const Options& options) {
  return all_gatherv(comm, send, recv, row_elements, std::vector<RowItem>{}, counts, stream,
                     options);
}

Plan all_gatherv(const Communicator& comm, ConstNvfp4View send, Nvfp4View recv,
                 std::size_t row_elements, const std::vector<RowItem>& items,
                 const DeviceCounts& counts, cudaStream_t stream, const Options& options) {
  const char* const operation = kGather;
  check_args(send, recv, row_elements, counts, comm.size(), operation, true);
  bool const swizzled = recv.scale_layout == ScaleLayout::Swizzled128x4;
  SYMMCOMM_EXPECTS(!swizzled || recv.row_elements == row_elements,
                   operation << ": recv.row_elements " << recv.row_elements
                             << " is not row_elements " << row_elements
                             << " (swizzled block scales are laid out by rows)");
  std::vector<RowPart> rows{RowPart{"send.data", send.data, recv.data, row_elements / 2},
                            RowPart{"send.block_scales", send.block_scales, recv.block_scales,
                                    row_elements / kNvfp4BlockSize, swizzled}};
  add_items(rows, items, counts, operation);
  return ragged_gather(comm, "nvfp4", send.count, rows,
                       ScalePart{"send.global_scale", send.global_scale, recv.global_scale}, counts,
                       stream, options);
}

namespace {

// BF16 rows on symmcomm's one-launch kernel (lsa::counted_reduce): `row_elements` per row.
struct ScatterKernel {
  bool exists = false;
  std::size_t row_elements = 0;
};

// Rows of `send` (compact, `rows` parts) reduce-scattered with the counts on the device: on the
// LSA path by `kernel` (which reads peers' send part 0 through their windows), else laid out at
// capacity in the workspace (zeroed first), then `scatter(padded parts)` runs the reduce-scatter
// over them.
Plan ragged_scatter(
    const Communicator& comm, const char* type, std::size_t count, const std::vector<RowPart>& rows,
    void* recv, std::size_t recv_bytes, std::size_t scatter_workspace, const DeviceCounts& counts,
    cudaStream_t stream, const Options& options, ScatterKernel kernel,
    const std::function<void(const std::vector<std::uint8_t*>&, const Options&)>& scatter) {
  const char* const operation = kScatter;
  detail::CommState& state = detail::usable_state(comm, operation);
  auto const n = static_cast<std::size_t>(state.size);
  std::size_t row_bytes = 0;
  for (const RowPart& p : rows) row_bytes += p.row_bytes;
  detail::PlannedCall call(state, Operation::ReduceScatter, options, operation);
  call.per_rank(counts.capacity * row_bytes, false).lsa_kernel(kernel.exists).device_counts();
  int index = 0;
  for (const RowPart& p : rows) {
    // Peers read the send rows only on the LSA path.
    call.part(Slot::SendPart, index++, p.name, p.send, n * counts.capacity * p.row_bytes,
              kernel.exists);
  }
  if (kernel.exists) {
    call.part(Slot::RecvPart, 0, "counts.counts", counts.counts, n * sizeof(std::int32_t));
  }
  call.buffer(Slot::RecvData, "recv.data", recv, recv_bytes, false);
  Plan const plan = call.decide(stream);
  detail::DeviceGuard guard(state.device);
  if (plan.path == Path::LsaKernel) {
    // One launch: counts through the window, one barrier, then only the rows that count.
    detail::lsa::Peers peers = detail::lsa_peers(state);
    WindowSlots slots(peers, operation);
    detail::lsa::CountedReduceArgs a;
    fill_counted(a, counts, slots, call.provenance(Slot::RecvPart, 0), row_bytes);
    a.send = slots.ref(call.provenance(Slot::SendPart, 0), rows[0].name);
    a.row_elements = kernel.row_elements;
    a.out = static_cast<bf16*>(recv);
    call.before_enqueue(stream);
    detail::lsa::counted_reduce(peers, a, stream);
    call.record(stream, type, count);
    return plan;
  }
  call.refuse_in_group("counts on the device: layout before NCCL's reduce-scatter");
  std::vector<std::size_t> at;
  std::size_t const padded_bytes = padded_layout(rows, n * counts.capacity, at);
  std::size_t const need = padded_bytes + detail::align256(scatter_workspace);
  auto* ws = static_cast<std::uint8_t*>(
      detail::acquire_workspace(state, options, need > 0 ? need : 256, stream));
  call.before_enqueue(stream);
  SYMMCOMM_NCCL_TRY(ncclAllGather(counts.count, counts.counts, 1, ncclInt32, state.comm, stream));
  if (padded_bytes > 0) SYMMCOMM_CUDA_TRY(cudaMemsetAsync(ws, 0, padded_bytes, stream));
  detail::compact::Args a = compact_args(counts, state.size, rows.size());
  std::vector<std::uint8_t*> padded;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    padded.push_back(ws + at[i]);
    a.part[i] = detail::compact::Part{static_cast<const std::uint8_t*>(rows[i].send), ws + at[i],
                                      rows[i].row_bytes};
  }
  a.expand = true;
  detail::compact::compact_rows(a, stream);
  // The reduce-scatter of the padded rows, on the fallback (the workspace is no window), with
  // workspace of its own after the padded rows.
  Options inner;
  inner.path = PathChoice::Fallback;
  inner.pdl_fence = options.pdl_fence;
  inner.workspace = ws + padded_bytes;
  inner.workspace_bytes = need - padded_bytes;
  scatter(padded, inner);
  call.record(stream, type, count);
  return plan;
}

}  // namespace

Plan reduce_scatterv(const Communicator& comm, ConstBf16Span send, Bf16Span recv,
                     std::size_t row_elements, const DeviceCounts& counts, cudaStream_t stream,
                     const Options& options) {
  const char* const operation = kScatter;
  check_args(send, recv, row_elements, counts, comm.size(), operation, false, 1, 1);
  return ragged_scatter(
      comm, "bf16", send.count,
      {RowPart{"send.data", send.data, nullptr, row_elements * sizeof(bf16)}}, recv.data,
      recv.data_bytes(), 0, counts, stream, options, ScatterKernel{true, row_elements},
      [&](const std::vector<std::uint8_t*>& padded, const Options& inner) {
        reduce_scatter(comm, ConstBf16Span{reinterpret_cast<const bf16*>(padded[0]), send.count},
                       recv, stream, inner);
      });
}

Plan reduce_scatterv(const Communicator& comm, ConstNvfp4View send, Bf16Span recv,
                     std::size_t row_elements, const DeviceCounts& counts, cudaStream_t stream,
                     const Options& options) {
  const char* const operation = kScatter;
  check_args(send, recv, row_elements, counts, comm.size(), operation, true, 8, kVectorAlignment);
  std::size_t const inner_ws =
      reduce_scatter_workspace_bytes(DataType::Nvfp4, DataType::Bf16, send.count, comm.size());
  return ragged_scatter(
      comm, "nvfp4", send.count,
      {RowPart{"send.data", send.data, nullptr, row_elements / 2},
       RowPart{"send.block_scales", send.block_scales, nullptr, row_elements / kNvfp4BlockSize}},
      recv.data, recv.data_bytes(), inner_ws, counts, stream, options, ScatterKernel{},
      [&](const std::vector<std::uint8_t*>& padded, const Options& inner) {
        reduce_scatter(comm, ConstNvfp4View{padded[0], padded[1], send.global_scale, send.count},
                       recv, stream, inner);
      });
}

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
