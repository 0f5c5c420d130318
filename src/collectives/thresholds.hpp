#pragma once
// Private to symmcomm (the planner's table; docs quote its values).
/// @file thresholds.hpp
/// @brief The planner's size thresholds, in one table. Each value says where it came from;
/// the multi-GPU measurements (bench/results/) refine them.

#include <cstddef>

namespace symmcomm::thresholds {

/// Largest payload per rank for which Auto copies plain buffers through symmetric staging
/// scratch (Options::allow_staging). Two extra device copies cost ~2 x (launch + bytes / copy
/// bandwidth); symmetric kernels save most at small sizes, where latency dominates. Provisional
/// (not yet measured on several GPUs): 1 MiB, the size below which vLLM's custom all-reduce
/// stages its input.
inline constexpr std::size_t kStagingMaxBytesPerRank = std::size_t{1} << 20;

/// Largest payload per rank for which Auto prefers symmcomm's LSA all-gather kernel over NCCL's
/// symmetric all-gather when both can run (all buffers symmetric, equal counts). Below it one
/// launch that pushes data, block scales and global scales to every peer replaces NCCL's
/// grouped collectives (one per tensor); above it NCCL's bandwidth kernels are trusted.
/// Provisional: measured only with ranks sharing one GPU; the NVLink comparison belongs to the
/// multi-GPU run (docs/multi-gpu-runbook.md), which refines it. Where NCCL has no equivalent
/// (quantized reduce-scatter, variable counts, fused quantize + gather) Auto takes the LSA kernel
/// at every size. Up to 96 KiB per rank the all-gather runs without barriers
/// (kernels/lsa_ll.hpp). docs/design-notes.md quotes the measurements behind this bound.
inline constexpr std::size_t kLsaAllGatherMaxBytesPerRank = std::size_t{256} << 10;

/// Largest BF16 output per rank for which Auto takes symmcomm's push-model reduce-scatter
/// (kernels/lsa_ll.hpp: no barrier, each rank pushes peers' shards into their scratch lines) over
/// NCCL's symmetric and plain reduce-scatters, when the buffers are symmetric. Measured with
/// 2, 4 and 8 ranks sharing one H200, eager and in CUDA graphs, 1-64 KiB per rank: faster than
/// the better of NCCL's two calls at every size (docs/design-notes.md quotes the range; the run
/// is in bench/results/). Larger shards were not measured on this kernel, so NCCL keeps them.
inline constexpr std::size_t kLsaReduceScatterMaxBytesPerRank = std::size_t{64} << 10;

}  // namespace symmcomm::thresholds
