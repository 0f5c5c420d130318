#pragma once
// Private entry points of the codec kernels (codecs.cu) used by other parts of symmcomm.

#include <cuda_runtime_api.h>

#include <cstddef>

#include "symmcomm/formats/views.hpp"

namespace symmcomm::detail {

/// Writes to the device float `slot` the scale of `type` (the NVFP4 global scale, or the FP8
/// scale of an FP8 type) that ScaleMode::Compute would choose for `count` bf16 elements at `src` (a
/// multiple of 8). Two kernels on `stream`: an amax reduction and a one-thread finalisation.
void scale_from_amax(const bf16* src, std::size_t count, float* slot, DataType type,
                     cudaStream_t stream);

}  // namespace symmcomm::detail
