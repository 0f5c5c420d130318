#pragma once
// Private entry points of the codec kernels (codecs.cu) used by other parts of symmcomm.

#include <cuda_runtime_api.h>

#include <cstddef>

#include "symmcomm/formats/codecs.hpp"
#include "symmcomm/formats/views.hpp"

namespace symmcomm::detail {

/// Writes to the device float `slot` the scale of `type` (the NVFP4 global scale, or the FP8
/// scale of an FP8 type) that ScaleMode::Compute would choose for `count` bf16 elements at `src` (a
/// multiple of 8). Two kernels on `stream`: an amax reduction and a one-thread finalisation.
void scale_from_amax(const bf16* src, std::size_t count, float* slot, DataType type,
                     cudaStream_t stream);

/// How ScaleMode::Compute quantizes. Separate: the amax reduction, the quantize and a
/// one-thread finalisation, three launches (and a memset of the slot). One: a single
/// cooperative launch (grid-wide amax, three grid barriers, then the quantize, rereading the
/// input from L2 where it fits); Separate where the device cannot launch cooperatively. Both give
/// the same bytes. The public quantize_nvfp4 uses Separate until the one-launch kernel is
/// measured against it on the H200 (BM_QuantizeNvfp4Launches).
enum class QuantizeLaunch { Separate, One };

/// quantize_nvfp4 (symmcomm/formats/codecs.hpp) with the launch shape chosen.
void quantize_nvfp4(const bf16* src, Nvfp4View dst, ScaleMode mode, QuantizeLaunch launch,
                    cudaStream_t stream);

}  // namespace symmcomm::detail
