// The one argument check of every collective call (validate_call.hpp): each operation's rules,
// with the texts users see (the argument named, its value quoted).

#include "validate_call.hpp"

#include <cstdint>
#include <sstream>
#include <string>

#include "kernels/compact.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/shards.hpp"

namespace symmcomm::detail {
namespace {

// `t` (named `name`) well formed with data aligned to `alignment` bytes; `gather_recv`: an
// NVFP4 gather's receive tensor, which may hold swizzled block scales.
void validate_tensor(const TensorRef& t, const char* name, std::size_t alignment,
                     bool gather_recv = false) {
  switch (t.dtype) {
    case DataType::Nvfp4:
      if (gather_recv) {
        validate_gather_recv(t.nvfp4(), name, alignment);
      } else {
        validate(ConstNvfp4View(t.nvfp4()), name, alignment);
      }
      return;
    case DataType::Fp8E4M3:
    case DataType::Fp8E5M2:
      validate(ConstFp8View(t.fp8()), name, alignment);
      return;
    case DataType::Bf16:
      validate(t.span<const bf16>(), name, alignment);
      return;
    case DataType::Fp32:
      validate(t.span<const float>(), name, alignment);
      return;
  }
}

void check_gathered_count(std::size_t send_count, std::size_t recv_count, int n) {
  SYMMCOMM_EXPECTS(
      recv_count == send_count * static_cast<std::size_t>(n),
      "recv.count " << recv_count << " is not send.count " << send_count << " x comm.size() " << n);
}

void check_gather(const CollectiveCall& call, int ranks, int rank) {
  if (call.items_only) {
    SYMMCOMM_EXPECTS(call.item_count > 0, "all_gather: items is empty");
    return;
  }
  std::size_t const alignment = call.send.dtype == DataType::Bf16 ? 2 : 1;
  validate_tensor(call.send, "send", alignment);
  validate_tensor(call.recv, "recv", alignment, true);
  if (call.counts == Counts::Equal) {
    check_gathered_count(call.send.count, call.recv.count, ranks);
  } else {
    check_counts(call.host_counts, call.host_count_entries, ranks, rank, call.send.count,
                 call.recv.count, call.send.dtype == DataType::Nvfp4 ? kNvfp4BlockSize : 1,
                 "send.count", "recv.count");
  }
}

void check_reduce_scatter(const CollectiveCall& call, int ranks, int rank) {
  const char* const operation = operation_name(call);
  auto const n = static_cast<std::size_t>(ranks);
  DataType const in = call.send.dtype;
  bool const native = in == DataType::Bf16 || in == DataType::Fp32;
  if (native) {
    std::size_t const element = payload_bytes(in, 1);
    validate_tensor(call.send, "send", element);
    validate_tensor(call.recv, "recv", element);
  } else {
    validate_tensor(call.send, "send", in == DataType::Nvfp4 ? 8 : 16);
    validate_tensor(call.recv, "recv", kVectorAlignment);
    SYMMCOMM_EXPECTS(ranks <= QuantizedShards::kMaxRanks,
                     operation << ": " << n << " ranks exceed the " << QuantizedShards::kMaxRanks
                               << " a quantized reduction supports");
  }
  if (call.counts == Counts::Host) {
    check_counts(call.host_counts, call.host_count_entries, ranks, rank, call.recv.count,
                 call.send.count, native ? 1 : 16, "recv.count", "send.count");
    return;
  }
  SYMMCOMM_EXPECTS(call.send.count == call.recv.count * n,
                   "send.count " << call.send.count << " is not recv.count " << call.recv.count
                                 << " x comm.size() " << n);
  SYMMCOMM_EXPECTS(native || call.recv.count % 16 == 0,
                   "recv.count " << call.recv.count
                                 << " is not a multiple of 16 (quantized shards are reduced 16 "
                                    "elements at a time)");
}

void check_quantize_gather(const CollectiveCall& call, int ranks) {
  validate_tensor(call.send, "input", kVectorAlignment);
  validate_tensor(call.recv, "recv", 8, true);
  auto const n = static_cast<std::size_t>(ranks);
  SYMMCOMM_EXPECTS(call.send.count % 16 == 0,
                   "input.count " << call.send.count << " is not a multiple of 16");
  SYMMCOMM_EXPECTS(call.recv.count == call.send.count * n,
                   "recv.count " << call.recv.count << " is not input.count " << call.send.count
                                 << " x comm.size() " << n);
}

// ---- counts on the device ------------------------------------------------------------------

void check_device_counts(const DeviceCounts& c, int ranks, bool gather, const char* operation) {
  // A reduce-scatter may take its counts gathered before the call (count null).
  SYMMCOMM_EXPECTS(!gather || c.count != nullptr,
                   operation << ": counts.count is null (this rank's count, a device int32)");
  SYMMCOMM_EXPECTS(c.counts != nullptr && c.offsets != nullptr,
                   operation << ": counts.counts and counts.offsets must be device arrays of "
                             << ranks << " int32 (they are written)");
  SYMMCOMM_EXPECTS(c.overflow != nullptr,
                   operation << ": counts.overflow is null (a device int32 the call sets when a "
                                "count is outside 0..capacity)");
  SYMMCOMM_EXPECTS(c.capacity <= static_cast<std::size_t>(INT32_MAX),
                   operation << ": counts.capacity " << c.capacity << " exceeds int32 rows");
  SYMMCOMM_EXPECTS(ranks <= compact::kMaxRanks, operation << ": " << ranks << " ranks exceed the "
                                                          << compact::kMaxRanks
                                                          << " one compaction handles");
}

// send.count and recv.count in rows: a gather's send holds capacity rows and its recv ranks x
// capacity; a reduce-scatter's the other way round.
void check_rows(const CollectiveCall& call, int ranks, const char* operation) {
  std::size_t const row = call.row_elements;
  std::size_t const capacity = call.device_counts.capacity;
  SYMMCOMM_EXPECTS(row > 0, operation << ": row_elements is 0");
  bool const gather = call.op == Collective::AllGather;
  std::size_t const one = capacity * row;
  std::size_t const all = static_cast<std::size_t>(ranks) * capacity * row;
  auto const rank_rows = [&](std::ostream& os) {
    os << " is not comm.size() " << ranks << " x counts.capacity " << capacity << " x row_elements "
       << row;
  };
  auto const own_rows = [&](std::ostream& os) {
    os << " is not counts.capacity " << capacity << " x row_elements " << row;
  };
  std::size_t const send_want = gather ? one : all;
  std::size_t const recv_want = gather ? all : one;
  if (call.send.count != send_want) {
    std::ostringstream os;
    os << operation << ": send.count " << call.send.count;
    gather ? own_rows(os) : rank_rows(os);
    SYMMCOMM_FAIL(os.str());
  }
  if (call.recv.count != recv_want) {
    std::ostringstream os;
    os << operation << ": recv.count " << call.recv.count;
    gather ? rank_rows(os) : own_rows(os);
    SYMMCOMM_FAIL(os.str());
  }
}

void check_row_items(const CollectiveCall& call, const char* operation) {
  SYMMCOMM_EXPECTS(call.row_item_count <= kMaxRowItems,
                   operation << ": " << call.row_item_count << " items; at most " << kMaxRowItems);
  for (std::size_t i = 0; i < call.row_item_count; ++i) {
    const RowItem& it = call.row_items[i];
    SYMMCOMM_EXPECTS(it.row_bytes > 0,
                     operation << ": items[" << i << "] (" << it.name << ").row_bytes is 0");
    SYMMCOMM_EXPECTS(call.device_counts.capacity == 0 || (it.send != nullptr && it.recv != nullptr),
                     operation << ": items[" << i << "] (" << it.name << ") send or recv is null");
  }
}

// In order: the tensors, NVFP4 rows of whole blocks, the counts, the shapes, then what only
// gathers have (swizzled rows, row items).
void check_device_count_call(const CollectiveCall& call, int ranks) {
  const char* const operation = operation_name(call);
  bool const gather = call.op == Collective::AllGather;
  bool const nvfp4 = call.send.dtype == DataType::Nvfp4;
  std::size_t const send_alignment = !gather && nvfp4 ? 8 : 1;
  std::size_t const recv_alignment = !gather && nvfp4 ? kVectorAlignment : 1;
  validate_tensor(call.send, "send", send_alignment);
  validate_tensor(call.recv, "recv", recv_alignment, gather);
  SYMMCOMM_EXPECTS(!nvfp4 || call.row_elements % kNvfp4BlockSize == 0,
                   operation << ": row_elements " << call.row_elements << " is not a multiple of "
                             << kNvfp4BlockSize << " (NVFP4 rows are whole blocks)");
  check_device_counts(call.device_counts, ranks, gather, operation);
  check_rows(call, ranks, operation);
  if (!gather) return;
  SYMMCOMM_EXPECTS(call.recv.scale_layout != ScaleLayout::Swizzled128x4 ||
                       call.recv.row_elements == call.row_elements,
                   operation << ": recv.row_elements " << call.recv.row_elements
                             << " is not row_elements " << call.row_elements
                             << " (swizzled block scales are laid out by rows)");
  check_row_items(call, operation);
}

}  // namespace

void check_counts(const std::size_t* counts, std::size_t entries, int ranks, int rank,
                  std::size_t mine, std::size_t total, std::size_t multiple, const char* mine_name,
                  const char* total_name) {
  SYMMCOMM_EXPECTS(entries == static_cast<std::size_t>(ranks),
                   "counts has " << entries << " entries for " << ranks << " ranks");
  std::size_t sum = 0;
  for (std::size_t r = 0; r < entries; ++r) {
    SYMMCOMM_EXPECTS(counts[r] % multiple == 0,
                     "counts[" << r << "] = " << counts[r] << " is not a multiple of " << multiple);
    sum += counts[r];
  }
  auto const me = static_cast<std::size_t>(rank);
  SYMMCOMM_EXPECTS(counts[me] == mine, mine_name << " " << mine << " differs from counts[" << rank
                                                 << "] = " << counts[me]);
  SYMMCOMM_EXPECTS(sum == total,
                   total_name << " " << total << " differs from the sum of counts " << sum);
}

void validate_call(const CollectiveCall& call, int ranks, int rank) {
  if (call.counts == Counts::Device) {
    check_device_count_call(call, ranks);
    return;
  }
  switch (call.op) {
    case Collective::AllGather:
      check_gather(call, ranks, rank);
      return;
    case Collective::ReduceScatter:
      check_reduce_scatter(call, ranks, rank);
      return;
    case Collective::QuantizeAllGather:
      check_quantize_gather(call, ranks);
      return;
  }
}

}  // namespace symmcomm::detail
