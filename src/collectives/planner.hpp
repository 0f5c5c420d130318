#pragma once
// Private to symmcomm (collectives/planned_call.cpp plans every call through it).
/// @file planner.hpp
/// @brief The planner: a pure function of (operation, buffers' provenance, communicator
/// capabilities, sizes, options) returning the path a collective takes and why.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "symmcomm/collectives/options.hpp"
#include "symmcomm/formats/traits.hpp"

namespace symmcomm {

/// @brief Which buffer of a call a PlannedBuffer is: what the collectives look buffers up by
/// (their names are for messages only). A gather's parts are Part slots with an index.
enum class Slot : std::uint8_t {
  SendData,
  SendBlockScales,
  SendScale,  ///< NVFP4 global scale or FP8 scale of the send side
  RecvData,
  RecvBlockScales,
  RecvScale,    ///< one per rank for gathers
  Input,        ///< the bf16 input of a fused quantize + all-gather
  StagingSend,  ///< Options::staging.send holding that call's quantized copy
  SendPart,     ///< part `part` of a gather's send side (all_gather's byte-range parts)
  RecvPart,     ///< part `part` of a gather's receive side
};

/// @brief A buffer a collective touches, with its provenance already looked up.
struct PlannedBuffer {
  const char* name = "";  ///< as messages and plans name it ("recv.block_scales", ...)
  Slot slot = Slot::SendData;
  int part = -1;  ///< SendPart / RecvPart: the part's index
  const void* ptr = nullptr;
  std::size_t bytes = 0;
  Provenance provenance{};
  /// True when symmcomm's LSA kernel addresses this buffer on peers (so it must lie in a
  /// symmetric window for that path); false for buffers only the calling rank touches, e.g.
  /// an all-gather's send (pushed to peers) or a reduce-scatter's output.
  bool peer_accessed = true;
  /// True when NCCL's paths touch this buffer; false for the bf16 input of a fused quantize +
  /// all-gather, which only symmcomm's quantization reads (NCCL gathers the quantized copy).
  bool nccl_accessed = true;
};

/// @brief Everything the planner decides from.
struct PlanRequest {
  Operation operation = Operation::AllGather;
  DataType send_type = DataType::Bf16;
  DataType recv_type = DataType::Bf16;
  std::vector<PlannedBuffer> buffers;  ///< send buffers first, then receive buffers
  const Capabilities* capabilities = nullptr;
  int comm_size = 1;
  bool equal_counts = true;
  std::size_t bytes_per_rank = 0;  ///< payload bytes each rank contributes
  PathChoice choice = PathChoice::Auto;
  bool staging_usable = false;  ///< allow_staging with symmetric scratch big enough
  bool lsa_kernel_available = false;
  /// A fused quantize + all-gather (send_type bf16, recv_type quantized): symmcomm's LSA kernel
  /// quantizes on the way to peers' windows; NCCL's path gathers a quantized copy made first,
  /// either in a buffer of the request (Options::staging.send, nccl_accessed) or, when
  /// `quantized_send_bytes` is non-zero, in symmcomm's workspace (never in a window).
  bool quantize_first = false;
  std::size_t quantized_send_bytes = 0;  ///< the workspace bytes of that copy (0: in a buffer)
  /// A call whose counts are on the device (device_counts.hpp), `bytes_per_rank` at capacity:
  /// symmcomm's one-launch LSA kernel where it can run (Auto's choice), else the fallback
  /// (every rank's rows at capacity through NCCL, with one more pass on the device).
  bool device_counts = false;
  /// With device_counts: the rows fit the counts-in-lines kernels
  /// (kernels/lsa_ll_device_counts.hpp: switched on and within a scratch slot), which the LSA path
  /// then takes (Plan:: counts_in_lines).
  bool counts_in_lines = false;
  /// With counts_in_lines: a reduce-scatter whose counts were gathered before the call
  /// (DeviceCounts::count null), so its rows go out without a count exchange (Plan::
  /// counts_gathered).
  bool counts_gathered = false;
};

/// @brief True when NCCL itself can run this reduction (a plain sum without per-rank scales).
constexpr bool nccl_reduces_natively(DataType send, DataType recv) noexcept {
  return send == recv && (send == DataType::Bf16 || send == DataType::Fp32);
}

/// @brief Decides the path. @throws LogicError when a forced path cannot be taken, naming the
/// first buffer (or capability) that prevents it.
Plan plan_collective(const PlanRequest& request);

}  // namespace symmcomm
