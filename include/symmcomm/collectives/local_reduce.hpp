#pragma once
/// @file local_reduce.hpp
/// @brief Local reduction of quantized shards: the second half of the quantized reduce-scatter
/// fallback (after an all-to-all of shards), and a building block of our own kernels. Each
/// output element is sum over ranks r of decode(shard_r) * scale_r, accumulated in fp32 in rank
/// order, then rounded once to the output type.
///
/// **Stream:** enqueues one kernel on `stream`; no allocation, no synchronisation.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "symmcomm/formats/shards.hpp"
#include "symmcomm/formats/views.hpp"

namespace symmcomm {

/// @brief Sums NVFP4 shards of `count` elements (a multiple of 16) into bf16 or fp32.
/// @throws LogicError for bad arguments (null pointers, count, rank count, alignment).
void reduce_nvfp4_shards(const QuantizedShards& shards, std::size_t count, bf16* out,
                         cudaStream_t stream);
/// @brief The same into fp32.
void reduce_nvfp4_shards(const QuantizedShards& shards, std::size_t count, float* out,
                         cudaStream_t stream);
/// @brief Sums FP8 shards of `count` elements (a multiple of 16) into bf16 or fp32.
void reduce_fp8_shards(const QuantizedShards& shards, std::size_t count, Fp8Format format,
                       bf16* out, cudaStream_t stream);
/// @brief The same into fp32.
void reduce_fp8_shards(const QuantizedShards& shards, std::size_t count, Fp8Format format,
                       float* out, cudaStream_t stream);

}  // namespace symmcomm
