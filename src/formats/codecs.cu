// BF16/FP32 <-> NVFP4 / FP8 conversion kernels (public API in symmcomm/formats/codecs.hpp).
//
// Each thread converts whole 16-element NVFP4 blocks (or 8-element FP8 groups) with 16-byte
// loads and stores, several independent blocks in flight per thread. The element arithmetic is
// the shared host/device code of symmcomm/formats (or hardware conversions proven equal to it),
// so kernels and CPU references agree bit for bit.

#include <cooperative_groups.h>

#include <type_traits>
#include <utility>

#include "core/cuda_utils.hpp"
#include "core/kernel_preload.hpp"
#include "core/launch.cuh"
#include "formats/codecs_internal.hpp"
#include "formats/device_codecs.cuh"
#include "formats/quantize_block.cuh"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/codecs.hpp"
#include "symmcomm/formats/nvfp4.hpp"
#include "symmcomm/formats/scale_layout.hpp"

namespace symmcomm {
namespace detail {
namespace {

constexpr int kUnroll = 2;

// ---- absolute maximum (ScaleMode::Compute) --------------------------------------------------

// The absolute maximum of this warp's share of `groups` 8-element groups of `src` (grid-stride),
// in every lane.
template <class In>
__device__ __forceinline__ float warp_amax(const In* __restrict__ src, std::size_t groups) {
  float m = 0.0f;
  std::size_t const stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < groups;
       i += stride) {
    Vectors<In, 8> in;
    load(src, i, in);
    float x[8];
    to_floats(in, x);
#pragma unroll
    for (int k = 0; k < 8; ++k) m = fmaxf(m, fabsf(x[k]));
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
  }
  return m;
}

template <class In>
__global__ void amax_kernel(const In* __restrict__ src, std::size_t groups,
                            unsigned* __restrict__ amax_bits) {
  float const m = warp_amax(src, groups);
  // Non-negative floats order like their bit patterns.
  if ((threadIdx.x & 31) == 0) atomicMax(amax_bits, __float_as_uint(m));
}

__global__ void nvfp4_finalize_global_scale_kernel(float* slot) {
  *slot = nvfp4_global_scale(*slot);
}
__global__ void fp8_finalize_scale_kernel(float* slot, Fp8Format format) {
  *slot = fp8_scale_from_amax(*slot, format);
}

// scale_from_amax in one cooperative launch (QuantizeLaunch::One): the amax as amax_kernel
// takes it, then CTA 0 finalises it as the one-thread kernels do (`nvfp4`: the NVFP4 global
// scale, else the FP8 scale of `format`). Two grid barriers: the slot cleared before any CTA adds
// to it, the amax complete before it is read. The separate launches' bytes.
template <class In>
__global__ void __launch_bounds__(kThreadsPerCta)
    scale_one_launch_kernel(const In* __restrict__ src, std::size_t groups, float* slot, bool nvfp4,
                            Fp8Format format) {
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  auto* const amax_bits = reinterpret_cast<unsigned*>(slot);
  if (blockIdx.x == 0 && threadIdx.x == 0) *amax_bits = 0u;
  float const m = warp_amax(src, groups);
  grid.sync();  // the slot is 0
  if ((threadIdx.x & 31) == 0) atomicMax(amax_bits, __float_as_uint(m));
  grid.sync();  // the amax is complete
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    float const amax = __uint_as_float(__ldcg(amax_bits));
    *slot = nvfp4 ? nvfp4_global_scale(amax) : fp8_scale_from_amax(amax, format);
  }
}

// ---- NVFP4 --------------------------------------------------------------------------------

// Quantizes `blocks` 16-element blocks of `src` with this global scale, grid-striding.
template <class In>
__device__ __forceinline__ void quantize_nvfp4_blocks(const In* __restrict__ src,
                                                      std::size_t blocks, uint2* __restrict__ data,
                                                      std::uint8_t* __restrict__ scales,
                                                      float global_scale, float* quant_table) {
  float const scale_factor = nvfp4_scale_factor(global_scale);
  fill_quant_table(quant_table, global_scale);
  std::size_t const stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t b0 = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
       b0 < blocks; b0 += stride * kUnroll) {
    Vectors<In, 16> in[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (b0 + u * stride < blocks) load(src, b0 + u * stride, in[u]);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      std::size_t const b = b0 + u * stride;
      if (b < blocks) {
        uint2 packed;
        std::uint8_t scale;
        quantize_one_block(in[u], scale_factor, quant_table, packed, scale);
        data[b] = packed;
        scales[b] = scale;
      }
    }
  }
}

// `scale_slot` holds the global scale (Given) or the tensor's amax (Compute).
template <class In>
__global__ void quantize_nvfp4_kernel(const In* __restrict__ src, std::size_t blocks,
                                      uint2* __restrict__ data, std::uint8_t* __restrict__ scales,
                                      const float* __restrict__ scale_slot, bool slot_is_amax) {
  __shared__ float quant_table[256];
  float const slot = *scale_slot;
  quantize_nvfp4_blocks(src, blocks, data, scales, slot_is_amax ? nvfp4_global_scale(slot) : slot,
                        quant_table);
}

// ScaleMode::Compute in one cooperative launch (QuantizeLaunch::One): every CTA takes the amax
// of its share of `src`, the grid agrees on the tensor's amax in `slot`, then quantizes `src`
// again - from L2 when it fits there. Three grid barriers: the slot cleared before any CTA
// adds to it, the amax complete before any CTA reads it, every CTA's read done before CTA 0
// stores the global scale in its place. Bit for bit the separate launches' result (the same
// maximum, the same global scale, the same block arithmetic).
template <class In>
__global__ void __launch_bounds__(kThreadsPerCta)
    quantize_nvfp4_one_launch_kernel(const In* __restrict__ src, std::size_t blocks,
                                     uint2* __restrict__ data, std::uint8_t* __restrict__ scales,
                                     float* slot) {
  __shared__ float quant_table[256];
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  auto* const amax_bits = reinterpret_cast<unsigned*>(slot);
  if (blockIdx.x == 0 && threadIdx.x == 0) *amax_bits = 0u;
  std::size_t const groups = blocks * 2;  // 8-element loads
  float const m = warp_amax(src, groups);
  grid.sync();  // the slot is 0
  if ((threadIdx.x & 31) == 0) atomicMax(amax_bits, __float_as_uint(m));
  grid.sync();  // the amax is complete
  float const global_scale = nvfp4_global_scale(__uint_as_float(__ldcg(amax_bits)));
  grid.sync();  // every CTA has read it
  if (blockIdx.x == 0 && threadIdx.x == 0) *slot = global_scale;
  quantize_nvfp4_blocks(src, blocks, data, scales, global_scale, quant_table);
}

// One thread writes 16 bytes of output (8 bf16 or 4 fp32 elements): a warp's store then covers
// 512 contiguous bytes (whole sectors), instead of each thread writing a whole block in two
// strided stores that leave every sector half-written per instruction.
template <class Out>
__global__ void dequantize_nvfp4_kernel(const std::uint8_t* __restrict__ data,
                                        const std::uint8_t* __restrict__ scales,
                                        const float* __restrict__ global_scale_ptr,
                                        std::size_t items, Out* __restrict__ dst) {
  constexpr int kElems = 16 / static_cast<int>(sizeof(Out));  // per thread
  __shared__ float dequant_table[256];
  fill_dequant_table(dequant_table, *global_scale_ptr);
  std::size_t const stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i0 = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i0 < items;
       i0 += stride * kUnroll) {
    std::uint32_t packed[kUnroll];
    std::uint8_t scale[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      std::size_t const i = i0 + u * stride;
      if (i < items) {
        if constexpr (kElems == 8) {
          packed[u] = reinterpret_cast<const std::uint32_t*>(data)[i];
        } else {
          packed[u] = reinterpret_cast<const std::uint16_t*>(data)[i];
        }
        scale[u] = scales[i * kElems / kNvfp4BlockSize];
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      std::size_t const i = i0 + u * stride;
      if (i < items) {
        float const mult = dequant_table[scale[u]];
        float v[kElems];
#pragma unroll
        for (int k = 0; k < kElems; ++k) v[k] = e2m1_from_word(packed[u], k) * mult;
        store_floats<kElems>(dst, i * kElems, v);
      }
    }
  }
}

// ---- FP8 ----------------------------------------------------------------------------------

template <class In>
__global__ void quantize_fp8_kernel(const In* __restrict__ src, std::size_t groups,
                                    uint2* __restrict__ dst, const float* __restrict__ scale_slot,
                                    bool slot_is_amax, Fp8Format format) {
  float const slot = *scale_slot;
  float const scale = slot_is_amax ? fp8_scale_from_amax(slot, format) : slot;
  float const inv_scale = 1.0f / scale;
  std::size_t const stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t g0 = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
       g0 < groups; g0 += stride * kUnroll) {
    Vectors<In, 8> in[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (g0 + u * stride < groups) load(src, g0 + u * stride, in[u]);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      std::size_t const g = g0 + u * stride;
      if (g < groups) {
        float x[8];
        to_floats(in[u], x);
        std::uint32_t half[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          half[k] = encode_fp8x2(x[2 * k] * inv_scale, x[2 * k + 1] * inv_scale, format);
        }
        dst[g] = make_uint2(half[0] | (half[1] << 16), half[2] | (half[3] << 16));
      }
    }
  }
}

template <class Out>
__global__ void dequantize_fp8_kernel(const uint2* __restrict__ src, std::size_t groups,
                                      const float* __restrict__ scale_ptr, Fp8Format format,
                                      Out* __restrict__ dst) {
  float const scale = *scale_ptr;
  std::size_t const stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t g = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; g < groups;
       g += stride) {
    uint2 const codes = src[g];
    float v[8];
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      float2 const a = decode_fp8x2(static_cast<std::uint16_t>(codes.x >> (16 * k)), format);
      float2 const b = decode_fp8x2(static_cast<std::uint16_t>(codes.y >> (16 * k)), format);
      v[2 * k] = a.x * scale;
      v[2 * k + 1] = a.y * scale;
      v[4 + 2 * k] = b.x * scale;
      v[4 + 2 * k + 1] = b.y * scale;
    }
    store_floats<8>(dst, g * 8, v);
  }
}

void check_device_pointer(const void* p, std::size_t count, const char* name) {
  SYMMCOMM_EXPECTS(count == 0 || p != nullptr, name << " is null but count is " << count);
  SYMMCOMM_EXPECTS(reinterpret_cast<std::uintptr_t>(p) % kVectorAlignment == 0,
                   name << " " << p << " is not " << kVectorAlignment << "-byte aligned");
}

template <class In>
void launch_amax(const In* src, std::size_t count, float* slot, cudaStream_t stream) {
  SYMMCOMM_CUDA_TRY(cudaMemsetAsync(slot, 0, sizeof(float), stream));
  std::size_t const groups = count / 8;
  amax_kernel<In><<<grid_for(groups, 4), kThreadsPerCta, 0, stream>>>(
      src, groups, reinterpret_cast<unsigned*>(slot));
  SYMMCOMM_CHECK_LAUNCH();
}

// CTAs of `kernel` (kThreadsPerCta threads, no dynamic shared memory) that can all be resident on
// the current device at once - a cooperative launch's limit -, 0 where the device cannot launch
// cooperatively. Cached per kernel and device.
unsigned cooperative_grid_limit(const void* kernel) {
  int device = 0;
  SYMMCOMM_CUDA_TRY(cudaGetDevice(&device));
  int cooperative = 0;
  SYMMCOMM_CUDA_TRY(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  int const limit = resident_blocks_per_sm(kernel, kThreadsPerCta) * current_device_sm_count();
  return cooperative != 0 && limit > 0 ? static_cast<unsigned>(limit) : 0u;
}

// Launches `kernel` cooperatively with the amax pass's grid for `groups` 8-element groups, capped
// at what can be resident; false (nothing launched) where the device cannot.
bool launch_cooperative(const void* kernel, std::size_t groups, void** args, cudaStream_t stream) {
  unsigned const limit = cooperative_grid_limit(kernel);
  if (limit == 0) return false;
  unsigned grid = grid_for(groups, 4);
  if (grid > limit) grid = limit;
  SYMMCOMM_CUDA_TRY(
      cudaLaunchCooperativeKernel(kernel, dim3(grid), dim3(kThreadsPerCta), args, 0, stream));
  return true;
}

// The one-launch computed-scale quantize; false (nothing launched) where the device cannot.
template <class In>
bool quantize_nvfp4_one_launch(const In* src, Nvfp4View dst, cudaStream_t stream) {
  std::size_t blocks = dst.count / kNvfp4BlockSize;
  auto* data = reinterpret_cast<uint2*>(dst.data);
  std::uint8_t* scales = dst.block_scales;
  float* slot = dst.global_scale;
  void* args[] = {&src, &blocks, &data, &scales, &slot};
  return launch_cooperative(reinterpret_cast<const void*>(quantize_nvfp4_one_launch_kernel<In>),
                            blocks * 2, args, stream);
}

template <class In>
void quantize_nvfp4_impl(const In* src, Nvfp4View dst, ScaleMode mode, QuantizeLaunch launch,
                         cudaStream_t stream) {
  validate(dst, "dst");
  check_device_pointer(src, dst.count, "src");
  if (dst.count == 0) return;
  require_cuda_device("codec");  // after the argument checks
  bool const compute = mode == ScaleMode::Compute;
  if (compute && launch == QuantizeLaunch::One && quantize_nvfp4_one_launch(src, dst, stream)) {
    return;
  }
  if (compute) launch_amax(src, dst.count, dst.global_scale, stream);
  std::size_t const blocks = dst.count / kNvfp4BlockSize;
  quantize_nvfp4_kernel<In><<<grid_for(blocks), kThreadsPerCta, 0, stream>>>(
      src, blocks, reinterpret_cast<uint2*>(dst.data), dst.block_scales, dst.global_scale, compute);
  SYMMCOMM_CHECK_LAUNCH();
  if (compute) {
    nvfp4_finalize_global_scale_kernel<<<1, 1, 0, stream>>>(dst.global_scale);
    SYMMCOMM_CHECK_LAUNCH();
  }
}

template <class Out>
void dequantize_nvfp4_impl(ConstNvfp4View src, Out* dst, cudaStream_t stream) {
  validate(src, "src");
  check_device_pointer(dst, src.count, "dst");
  if (src.count == 0) return;
  require_cuda_device("codec");  // after the argument checks
  std::size_t const items = src.count / (16 / sizeof(Out));
  dequantize_nvfp4_kernel<Out><<<grid_for(items), kThreadsPerCta, 0, stream>>>(
      src.data, src.block_scales, src.global_scale, items, dst);
  SYMMCOMM_CHECK_LAUNCH();
}

template <class In>
void quantize_fp8_impl(const In* src, Fp8View dst, ScaleMode mode, cudaStream_t stream) {
  validate(dst, "dst");
  check_device_pointer(src, dst.count, "src");
  SYMMCOMM_EXPECTS(dst.count % 8 == 0, "dst.count "
                                           << dst.count
                                           << " is not a multiple of 8 (FP8 kernels convert "
                                              "8 elements per access)");
  if (dst.count == 0) return;
  require_cuda_device("codec");  // after the argument checks
  bool const compute = mode == ScaleMode::Compute;
  if (compute) launch_amax(src, dst.count, dst.scale, stream);
  std::size_t const groups = dst.count / 8;
  quantize_fp8_kernel<In><<<grid_for(groups), kThreadsPerCta, 0, stream>>>(
      src, groups, reinterpret_cast<uint2*>(dst.data), dst.scale, compute, dst.format);
  SYMMCOMM_CHECK_LAUNCH();
  if (compute) {
    fp8_finalize_scale_kernel<<<1, 1, 0, stream>>>(dst.scale, dst.format);
    SYMMCOMM_CHECK_LAUNCH();
  }
}

template <class Out>
void dequantize_fp8_impl(ConstFp8View src, Out* dst, cudaStream_t stream) {
  validate(src, "src");
  check_device_pointer(dst, src.count, "dst");
  SYMMCOMM_EXPECTS(src.count % 8 == 0, "src.count " << src.count << " is not a multiple of 8");
  if (src.count == 0) return;
  require_cuda_device("codec");  // after the argument checks
  std::size_t const groups = src.count / 8;
  dequantize_fp8_kernel<Out><<<grid_for(groups), kThreadsPerCta, 0, stream>>>(
      reinterpret_cast<const uint2*>(src.data), groups, src.scale, src.format, dst);
  SYMMCOMM_CHECK_LAUNCH();
}

// Loaded with the rest of this module when a communicator is made (core/kernel_preload.hpp).
[[maybe_unused]] const bool kModuleRegistered = register_kernel_module(
    reinterpret_cast<const void*>(&nvfp4_finalize_global_scale_kernel), "formats/codecs.cu");

}  // namespace

void scale_from_amax(const bf16* src, std::size_t count, float* slot, DataType type,
                     QuantizeLaunch launch, cudaStream_t stream) {
  check_device_pointer(src, count, "src");
  SYMMCOMM_EXPECTS(slot != nullptr, "scale slot is null");
  bool nvfp4 = type == DataType::Nvfp4;
  Fp8Format format = nvfp4 ? Fp8Format::E4M3 : fp8_format_of(type);
  if (count > 0 && launch == QuantizeLaunch::One) {
    std::size_t groups = count / 8;
    void* args[] = {&src, &groups, &slot, &nvfp4, &format};
    if (launch_cooperative(reinterpret_cast<const void*>(scale_one_launch_kernel<bf16>), groups,
                           args, stream)) {
      return;
    }
  }
  if (count == 0) {
    // An empty tensor quantizes with the scale of an all-zero one.
    SYMMCOMM_CUDA_TRY(cudaMemsetAsync(slot, 0, sizeof(float), stream));
  } else {
    launch_amax(src, count, slot, stream);
  }
  if (nvfp4) {
    nvfp4_finalize_global_scale_kernel<<<1, 1, 0, stream>>>(slot);
  } else {
    fp8_finalize_scale_kernel<<<1, 1, 0, stream>>>(slot, format);
  }
  SYMMCOMM_CHECK_LAUNCH();
}

void scale_from_amax(const bf16* src, std::size_t count, float* slot, DataType type,
                     cudaStream_t stream) {
  scale_from_amax(src, count, slot, type, default_quantize_launch(count), stream);
}

void quantize_nvfp4(const bf16* src, Nvfp4View dst, ScaleMode mode, QuantizeLaunch launch,
                    cudaStream_t stream) {
  quantize_nvfp4_impl(src, dst, mode, launch, stream);
}

}  // namespace detail

void quantize_nvfp4(const bf16* src, Nvfp4View dst, ScaleMode mode, cudaStream_t stream) {
  detail::quantize_nvfp4_impl(src, dst, mode, detail::default_quantize_launch(dst.count), stream);
}
void quantize_nvfp4(const float* src, Nvfp4View dst, ScaleMode mode, cudaStream_t stream) {
  detail::quantize_nvfp4_impl(src, dst, mode, detail::default_quantize_launch(dst.count), stream);
}
void dequantize_nvfp4(ConstNvfp4View src, bf16* dst, cudaStream_t stream) {
  detail::dequantize_nvfp4_impl(src, dst, stream);
}
void dequantize_nvfp4(ConstNvfp4View src, float* dst, cudaStream_t stream) {
  detail::dequantize_nvfp4_impl(src, dst, stream);
}
void quantize_fp8(const bf16* src, Fp8View dst, ScaleMode mode, cudaStream_t stream) {
  detail::quantize_fp8_impl(src, dst, mode, stream);
}
void quantize_fp8(const float* src, Fp8View dst, ScaleMode mode, cudaStream_t stream) {
  detail::quantize_fp8_impl(src, dst, mode, stream);
}
void dequantize_fp8(ConstFp8View src, bf16* dst, cudaStream_t stream) {
  detail::dequantize_fp8_impl(src, dst, stream);
}
void dequantize_fp8(ConstFp8View src, float* dst, cudaStream_t stream) {
  detail::dequantize_fp8_impl(src, dst, stream);
}

}  // namespace symmcomm
