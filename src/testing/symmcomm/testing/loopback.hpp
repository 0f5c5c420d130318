#pragma once
/// @file loopback.hpp
/// @brief symmcomm's own symmetric kernels (Path::LsaKernel) run over N *virtual ranks* on one
/// GPU: for testing and benchmarking those kernels, and an engine's integration with them,
/// without several GPUs.
///
/// Each function takes one view per virtual rank (index r = virtual rank r; 1..8 ranks), all on
/// the current device, and launches the same kernel code that production runs over NCCL
/// windows once per virtual rank, in rank order, on `stream`. Peer buffers are addressed
/// through a pointer table instead of ncclGetLsaPointer, and the team barriers are no-ops:
/// stream order already separates the ranks. Layouts, arguments and results are those of the
/// collective call with the same name (all_gather.hpp, reduce_scatter.hpp).
///
/// **Stream:** enqueues N kernels on `stream`; no allocation, no host synchronisation.
/// @throws LogicError for bad arguments (naming the argument, virtual rank and value).

#include <cuda_runtime_api.h>

#include <vector>

#include "symmcomm/collectives/options.hpp"
#include "symmcomm/formats/views.hpp"
#include "symmcomm/limits.hpp"

namespace symmcomm::loopback {

/// @brief Most virtual ranks one call supports.
inline constexpr int kMaxVirtualRanks = kMaxLoopbackRanks;

/// @brief NVFP4 all-gather of data, block scales and global scales in one launch per rank.
/// send[r].count may differ between ranks (variable counts, multiples of 16): rank r's elements
/// land after those of ranks < r; recv[r].count == sum of send counts; recv[r].global_scale
/// holds one float per rank. Receive views with swizzled block scales (the same layout on every
/// rank) get them in the GEMMs' tile layout, as the LSA path of symmcomm::all_gather writes.
void all_gather(const std::vector<Nvfp4View>& send, const std::vector<Nvfp4View>& recv,
                cudaStream_t stream);
/// @brief FP8 all-gather of codes and per-rank scales (variable counts allowed).
void all_gather(const std::vector<Fp8View>& send, const std::vector<Fp8View>& recv,
                cudaStream_t stream);
/// @brief BF16 all-gather (variable counts allowed).
void all_gather(const std::vector<Bf16Span>& send, const std::vector<Bf16Span>& recv,
                cudaStream_t stream);

/// @brief One-shot NVFP4 reduce-scatter: rank r sums shard r (recv[r].count elements, a
/// multiple of 16) of every rank's send, dequantized with that rank's scales, in fp32.
/// Variable shard sizes allowed (send[r].count == sum of recv counts).
void reduce_scatter(const std::vector<Nvfp4View>& send, const std::vector<Bf16Span>& recv,
                    cudaStream_t stream);
void reduce_scatter(const std::vector<Nvfp4View>& send, const std::vector<Fp32Span>& recv,
                    cudaStream_t stream);
/// @brief One-shot FP8 reduce-scatter into BF16 or FP32.
void reduce_scatter(const std::vector<Fp8View>& send, const std::vector<Bf16Span>& recv,
                    cudaStream_t stream);
void reduce_scatter(const std::vector<Fp8View>& send, const std::vector<Fp32Span>& recv,
                    cudaStream_t stream);

/// @brief Fused quantize + all-gather: rank r quantizes input[r] (bf16) to NVFP4 with the
/// global scale at device pointer scale[r] and writes it straight into every rank's recv
/// (data, block scales - swizzled where the receive views say so - and scale[r]'s value at
/// recv.global_scale[r]).
void quantize_all_gather(const std::vector<Bf16Span>& input, const std::vector<const float*>& scale,
                         const std::vector<Nvfp4View>& recv, cudaStream_t stream);
/// @brief Fused quantize + all-gather to FP8 of recv.format with the scale at scale[r].
void quantize_all_gather(const std::vector<Bf16Span>& input, const std::vector<const float*>& scale,
                         const std::vector<Fp8View>& recv, cudaStream_t stream);

}  // namespace symmcomm::loopback
