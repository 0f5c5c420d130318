#pragma once
/// @file reduce_scatter.hpp
/// @brief Reduce-scatters (sum): BF16/FP32 natively through NCCL, and NVFP4/FP8 with per-rank
/// scales: every rank's shard is dequantized, accumulated in fp32 and rounded once, to bf16,
/// fp32 or re-quantized NVFP4/FP8 (scale computed from the sum). Never a reduction in fp8/fp4
/// along a ring.
///
/// Same rules as all_gather.hpp (collective, stream-ordered, capturable, plan returned; its
/// **Ordering** rule says when inputs may be written and buffers reused, and which in-place
/// forms exist: BF16/FP32 only, receive = this rank's shard of the send). Rank r
/// receives elements [r * recv.count, (r + 1) * recv.count) of the sum; send.count ==
/// recv.count * comm.size(). NVFP4 and FP8 sends carry their own scale (send.global_scale /
/// send.scale: one float). NVFP4 and FP8 shard sizes must be multiples of 16 elements.
///
/// Quantized fallback: an all-to-all of quantized shards (grouped ncclSend/ncclRecv) into a
/// workspace, then a local fp32 reduce. Its workspace comes from Options::workspace, or from
/// the communicator (grown outside graph capture; concurrent calls on several streams of one
/// communicator need their own Options::workspace). It launches a kernel after its NCCL calls,
/// so it refuses to run inside a symmcomm::Group (NCCL would enqueue its calls only at the end
/// of the group): one thread driving several ranks must use one thread per rank for it.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "symmcomm/collectives/options.hpp"
#include "symmcomm/formats/views.hpp"

namespace symmcomm {

/// @brief BF16 sum.
Plan reduce_scatter(const Communicator& comm, ConstBf16Span send, Bf16Span recv,
                    cudaStream_t stream, const Options& options = {});
/// @brief FP32 sum.
Plan reduce_scatter(const Communicator& comm, ConstFp32Span send, Fp32Span recv,
                    cudaStream_t stream, const Options& options = {});
/// @brief NVFP4 sum into BF16.
Plan reduce_scatter(const Communicator& comm, ConstNvfp4View send, Bf16Span recv,
                    cudaStream_t stream, const Options& options = {});
/// @brief NVFP4 sum into FP32.
Plan reduce_scatter(const Communicator& comm, ConstNvfp4View send, Fp32Span recv,
                    cudaStream_t stream, const Options& options = {});
/// @brief NVFP4 sum re-quantized to NVFP4 (recv.global_scale computed from the sum).
Plan reduce_scatter(const Communicator& comm, ConstNvfp4View send, Nvfp4View recv,
                    cudaStream_t stream, const Options& options = {});
/// @brief FP8 sum into BF16 (send and recv formats may differ only for FP8 outputs below).
Plan reduce_scatter(const Communicator& comm, ConstFp8View send, Bf16Span recv, cudaStream_t stream,
                    const Options& options = {});
/// @brief FP8 sum into FP32.
Plan reduce_scatter(const Communicator& comm, ConstFp8View send, Fp32Span recv, cudaStream_t stream,
                    const Options& options = {});
/// @brief FP8 sum re-quantized to FP8 of recv.format (recv.scale computed from the sum).
Plan reduce_scatter(const Communicator& comm, ConstFp8View send, Fp8View recv, cudaStream_t stream,
                    const Options& options = {});

/// @brief BF16 sum with `counts[r]` elements for rank r (grouped ncclReduce; fallback path).
Plan reduce_scatterv(const Communicator& comm, ConstBf16Span send, Bf16Span recv,
                     const std::vector<std::size_t>& counts, cudaStream_t stream,
                     const Options& options = {});
/// @brief NVFP4 sum into BF16 with `counts[r]` elements (multiples of 16) for rank r.
Plan reduce_scatterv(const Communicator& comm, ConstNvfp4View send, Bf16Span recv,
                     const std::vector<std::size_t>& counts, cudaStream_t stream,
                     const Options& options = {});
/// @brief FP8 sum into BF16 with `counts[r]` elements (multiples of 16) for rank r.
Plan reduce_scatterv(const Communicator& comm, ConstFp8View send, Bf16Span recv,
                     const std::vector<std::size_t>& counts, cudaStream_t stream,
                     const Options& options = {});

/// @brief Workspace bytes the quantized fallback needs for a reduce-scatter of `send_count`
/// elements of `send_type` (NVFP4 or FP8) into `recv_type` on `comm_size` ranks.
std::size_t reduce_scatter_workspace_bytes(DataType send_type, DataType recv_type,
                                           std::size_t send_count, int comm_size);

}  // namespace symmcomm
