#pragma once
/// @file all_gather.hpp
/// @brief Typed all-gathers: BF16, FP8 (with each rank's scale) and NVFP4 (packed data, block
/// scales and each rank's global scale in one call), several tensors at once, and variable
/// counts per rank (all_gatherv).
///
/// Common rules:
/// - **Collective**: every rank calls with matching arguments, in the same order.
/// - **Stream:** enqueued on `stream`; no host synchronisation, no allocation: capturable in a
///   CUDA graph.
/// - **Ordering** (every collective of symmcomm, every path; docs/engine-integration.md
///   section 7): write the inputs in stream order on `stream` (a kernel or cudaMemcpyAsync on
///   `stream`, or an event it waits on; a plain cudaMemcpy runs on the legacy stream, which does
///   not order work on a cudaStreamNonBlocking stream, and may return before its DMA lands).
///   Once the call has completed on this rank's `stream` (later work on `stream`, or an event
///   recorded after the call), this rank may overwrite its send buffers and read or overwrite
///   its receive buffers, whether or not its peers have finished theirs; peers touch them only
///   while this rank's call runs. In place: an all-gather's send may be this rank's part of
///   the receive buffer (each tensor: `recv + rank * part`), a BF16/FP32 reduce-scatter's
///   receive may be this rank's shard of its send (`send + rank * recv.count`); no other
///   overlap of send and receive buffers is allowed.
/// - The path comes from the buffers' provenance (the planner, src/collectives/planner.hpp) and is
/// returned; it is
///   counted in the communicator's stats() and logged with its reason at SYMMCOMM_LOG=debug.
/// - Receive layout: rank r's elements follow rank r-1's. For NVFP4 the receive view's block
///   scales are linear unless the view's scale_layout asks for the GEMMs' swizzled 128x4
///   layout (Nvfp4View::with_swizzled_scales, views.hpp); other views and send sides are
///   linear. A gathered NVFP4 or FP8 view has one scale per rank:
///   `recv.global_scale` (`recv.scale`) points to comm.size() floats, rank r's at index r.
/// - NCCL's symmetric kernels need equal counts: all_gatherv takes the fallback path
///   (grouped ncclBroadcast), or our LSA kernel where available.
///
/// @throws LogicError for bad arguments (naming the argument and value) or a forced path that
/// cannot be taken; NcclError/CudaError when NCCL or CUDA fail.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "symmcomm/collectives/options.hpp"
#include "symmcomm/formats/views.hpp"

namespace symmcomm {

/// @brief One raw tensor of a multi-tensor gather: `bytes_per_rank` bytes at `send`; rank r's
/// land at `recv + r * bytes_per_rank`.
struct GatherItem {
  const void* send = nullptr;      ///< this rank's bytes (device pointer)
  void* recv = nullptr;            ///< room for comm.size() x bytes_per_rank (device pointer)
  std::size_t bytes_per_rank = 0;  ///< bytes each rank contributes
  const char* name = "item";       ///< used in error messages and plans
};

/// @brief BF16 all-gather: recv.count == send.count * comm.size().
Plan all_gather(const Communicator& comm, ConstBf16Span send, Bf16Span recv, cudaStream_t stream,
                const Options& options = {});
/// @brief FP8 all-gather of codes and each rank's scale (recv.scale: comm.size() floats).
Plan all_gather(const Communicator& comm, ConstFp8View send, Fp8View recv, cudaStream_t stream,
                const Options& options = {});
/// @brief NVFP4 all-gather of packed data, block scales and each rank's global scale
/// (recv.global_scale: comm.size() floats), in one NCCL group.
Plan all_gather(const Communicator& comm, ConstNvfp4View send, Nvfp4View recv, cudaStream_t stream,
                const Options& options = {});
/// @brief NVFP4 all-gather plus extra tensors (top-k ids and weights) in the same NCCL group.
Plan all_gather(const Communicator& comm, ConstNvfp4View send, Nvfp4View recv,
                const std::vector<GatherItem>& extras, cudaStream_t stream,
                const Options& options = {});
/// @brief Several raw tensors in one NCCL group.
Plan all_gather(const Communicator& comm, const std::vector<GatherItem>& items, cudaStream_t stream,
                const Options& options = {});

/// @brief BF16 all-gather with `counts[r]` elements from rank r (host vector of comm.size());
/// send.count == counts[rank], recv.count == sum(counts).
Plan all_gatherv(const Communicator& comm, ConstBf16Span send, Bf16Span recv,
                 const std::vector<std::size_t>& counts, cudaStream_t stream,
                 const Options& options = {});
/// @brief FP8 all-gatherv (codes; recv.scale: comm.size() floats).
Plan all_gatherv(const Communicator& comm, ConstFp8View send, Fp8View recv,
                 const std::vector<std::size_t>& counts, cudaStream_t stream,
                 const Options& options = {});
/// @brief NVFP4 all-gatherv (counts multiples of 16; recv.global_scale: comm.size() floats).
Plan all_gatherv(const Communicator& comm, ConstNvfp4View send, Nvfp4View recv,
                 const std::vector<std::size_t>& counts, cudaStream_t stream,
                 const Options& options = {});

/// @brief Fused quantize + all-gather: each rank quantizes its bf16 `input` (count a multiple of
/// 16) to NVFP4 and every rank receives all ranks' quantized tensors in `recv` (layout as the
/// NVFP4 all_gather: recv.count == input.count * comm.size(), recv.global_scale holds one
/// float per rank). `global_scale` is this rank's global scale (device pointer), or null to
/// compute it from the input's absolute maximum (ScaleMode::Compute: two small kernels first).
///
/// On the lsa-kernel path (recv in symmetric windows, LSA team spanning the communicator) one
/// kernel quantizes and writes straight into every peer's window; `input` may be any device
/// memory. Otherwise the input is quantized into the workspace (Options::workspace or the
/// communicator's) and gathered by all_gather; the returned plan is that gather's.
Plan quantize_all_gather(const Communicator& comm, ConstBf16Span input, Nvfp4View recv,
                         const float* global_scale, cudaStream_t stream,
                         const Options& options = {});
/// @brief Fused quantize + all-gather to FP8 of recv.format with this rank's `scale` (device
/// pointer; null: computed from the input, ScaleMode::Compute).
Plan quantize_all_gather(const Communicator& comm, ConstBf16Span input, Fp8View recv,
                         const float* scale, cudaStream_t stream, const Options& options = {});

}  // namespace symmcomm
