#pragma once
/// @file codecs.hpp
/// @brief Stream-ordered conversion kernels between BF16/FP32 and NVFP4/FP8.
/// FP32 sources and destinations follow the same rules as BF16 ones.
///
/// **Stream:** every function enqueues kernels on `stream` and returns without synchronising;
/// none allocates. All pointers are device pointers; bf16/fp32 buffers and packed data must be
/// 16-byte aligned (checked; LogicError names the argument).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "symmcomm/formats/views.hpp"

namespace symmcomm {

/// @brief Whether a quantizer uses the scale already stored in the destination view or
/// computes it from the input's absolute maximum (and stores it there).
enum class ScaleMode { Given, Compute };

/// @brief BF16 -> NVFP4. With ScaleMode::Compute, writes `*dst.global_scale` =
/// nvfp4_global_scale(amax(src)) first (one extra read of src): up to 1 Mi elements in one
/// cooperative launch (grid-wide amax, then the quantize from L2), above that as separate
/// launches (amax, quantize, a one-thread finalisation); the same bytes either way.
void quantize_nvfp4(const bf16* src, Nvfp4View dst, ScaleMode mode, cudaStream_t stream);
/// @brief FP32 -> NVFP4 (as above; used to re-quantize fp32 reductions with one rounding).
void quantize_nvfp4(const float* src, Nvfp4View dst, ScaleMode mode, cudaStream_t stream);
/// @brief NVFP4 -> BF16 (rounded to nearest even).
void dequantize_nvfp4(ConstNvfp4View src, bf16* dst, cudaStream_t stream);
/// @brief NVFP4 -> FP32.
void dequantize_nvfp4(ConstNvfp4View src, float* dst, cudaStream_t stream);

/// @brief BF16 -> FP8 with the per-tensor dequantization scale `*dst.scale` (Compute: amax/max).
void quantize_fp8(const bf16* src, Fp8View dst, ScaleMode mode, cudaStream_t stream);
/// @brief FP32 -> FP8 (as above).
void quantize_fp8(const float* src, Fp8View dst, ScaleMode mode, cudaStream_t stream);
/// @brief FP8 -> BF16.
void dequantize_fp8(ConstFp8View src, bf16* dst, cudaStream_t stream);
/// @brief FP8 -> FP32.
void dequantize_fp8(ConstFp8View src, float* dst, cudaStream_t stream);

/// @brief NVFP4 block scales of a [rows, scale_cols] matrix from symmcomm's linear layout
/// (row-major, `rows * scale_cols` bytes at `linear`) into the swizzled 128 x 4 tile layout
/// NVFP4 GEMMs read (symmcomm/formats/scale_layout.hpp: swizzled_scale_bytes(rows, scale_cols)
/// bytes at `swizzled`, padding written as 0). What an engine runs after gathering linear
/// scales. `linear` and `swizzled` must not overlap. @throws LogicError (null pointers,
/// overlap), CudaError (no device).
void swizzle_nvfp4_scales(const std::uint8_t* linear, std::size_t rows, std::size_t scale_cols,
                          std::uint8_t* swizzled, cudaStream_t stream);

}  // namespace symmcomm
