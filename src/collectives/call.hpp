#pragma once
// Private: one collective call as one descriptor. Every entry point (the typed C++ overloads in
// entry_points.cpp, the C ABI) builds a CollectiveCall and hands it to run(), which checks the
// communicator and the arguments once, plans once and runs the executor of the chosen path
// (docs/architecture.md draws the whole path).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/device_counts.hpp"
#include "symmcomm/collectives/options.hpp"
#include "symmcomm/formats/views.hpp"

namespace symmcomm::detail {

/// One tensor of a call: the C++ twin of the C ABI's symmcomm_tensor_t (dtype, scale layout,
/// data, NVFP4 block scales, the per-rank fp32 scale(s), count, row elements). Send sides are
/// read only; the pointers are non-const so that one type carries both sides.
struct TensorRef {
  DataType dtype = DataType::Bf16;
  void* data = nullptr;
  void* block_scales = nullptr;  ///< NVFP4 only
  float* scales = nullptr;       ///< NVFP4 global scale(s), FP8 scale(s); null otherwise
  std::size_t count = 0;         ///< elements
  ScaleLayout scale_layout = ScaleLayout::Linear;
  std::size_t row_elements = 0;  ///< NVFP4 with swizzled block scales

  /// Bytes of packed data.
  constexpr std::size_t data_bytes() const noexcept { return payload_bytes(dtype, count); }
  constexpr bool is_fp8() const noexcept {
    return dtype == DataType::Fp8E4M3 || dtype == DataType::Fp8E5M2;
  }
  /// The typed views of this tensor (the caller knows its dtype).
  Nvfp4View nvfp4() const noexcept {
    return Nvfp4View{static_cast<std::uint8_t*>(data),
                     static_cast<std::uint8_t*>(block_scales),
                     scales,
                     count,
                     scale_layout,
                     row_elements};
  }
  Fp8View fp8() const noexcept {
    return Fp8View{static_cast<std::uint8_t*>(data), scales, count, fp8_format_of(dtype)};
  }
  template <class T>
  Span<T> span() const noexcept {
    return Span<T>{static_cast<T*>(data), count};
  }
};

/// The tensor behind a typed view.
TensorRef tensor_ref(ConstBf16Span span) noexcept;
TensorRef tensor_ref(ConstFp32Span span) noexcept;
TensorRef tensor_ref(const ConstFp8View& view) noexcept;
TensorRef tensor_ref(const ConstNvfp4View& view) noexcept;

/// The operations a descriptor can describe.
enum class Collective : std::uint8_t { AllGather, ReduceScatter, QuantizeAllGather };
/// Where a call's per-rank counts are: none (equal counts), a host array, the device.
enum class Counts : std::uint8_t { Equal, Host, Device };

/// One collective call: what it does and on which tensors (never how: that is Options).
struct CollectiveCall {
  Collective op = Collective::AllGather;
  Counts counts = Counts::Equal;
  TensorRef send;  ///< QuantizeAllGather: the bf16 input
  TensorRef recv;
  /// Counts::Host: element counts of every rank (checked to hold comm.size() entries).
  const std::size_t* host_counts = nullptr;
  std::size_t host_count_entries = 0;
  /// Counts::Device: the device-side counts and the elements of one row.
  DeviceCounts device_counts{};
  std::size_t row_elements = 0;
  /// Extra tensors gathered in the same call: raw byte tensors (equal counts; with
  /// `items_only` they are the whole call) or row tensors (device counts).
  const GatherItem* items = nullptr;
  std::size_t item_count = 0;
  const RowItem* row_items = nullptr;
  std::size_t row_item_count = 0;
  bool items_only = false;
  /// QuantizeAllGather: this rank's scale (device pointer), null to compute it.
  const float* quantize_scale = nullptr;
};

/// The name errors, plans and logs give the call ("all_gatherv (device counts)", ...).
const char* operation_name(const CollectiveCall& call) noexcept;

/// Descriptor builders (the typed entry points and the C ABI use them).
CollectiveCall gather_call(TensorRef send, TensorRef recv) noexcept;
CollectiveCall reduce_scatter_call(TensorRef send, TensorRef recv) noexcept;
CollectiveCall quantize_gather_call(TensorRef input, TensorRef recv, const float* scale) noexcept;
/// `call` with host counts (all_gatherv, reduce_scatterv).
CollectiveCall with_host_counts(CollectiveCall call, const std::size_t* counts,
                                std::size_t entries) noexcept;
/// `call` with counts on the device and rows of `row_elements`.
CollectiveCall with_device_counts(CollectiveCall call, const DeviceCounts& counts,
                                  std::size_t row_elements) noexcept;

/// Checks, plans and runs `call` (see the top of this file). @throws LogicError naming the
/// argument and its value, or as the collective's documentation says.
Plan run(const Communicator& comm, const CollectiveCall& call, cudaStream_t stream,
         const Options& options);

}  // namespace symmcomm::detail
