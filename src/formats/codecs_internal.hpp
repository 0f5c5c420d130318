#pragma once
// Private entry points of the codec kernels (codecs.cu) used by other parts of symmcomm.

#include <cuda_runtime_api.h>

#include <cstddef>

#include "symmcomm/formats/codecs.hpp"
#include "symmcomm/formats/views.hpp"

namespace symmcomm::detail {

/// How ScaleMode::Compute quantizes. Separate: the amax reduction, the quantize and a
/// one-thread finalisation, three launches (and a memset of the slot). One: a single
/// cooperative launch (grid-wide amax, three grid barriers, then the quantize, rereading the
/// input from L2 where it fits); Separate where the device cannot launch cooperatively. Both give
/// the same bytes.
enum class QuantizeLaunch { Separate, One };

/// Largest input (elements) quantized in one launch by default. One launch saves the separate
/// launches' cost at decode sizes and gains nothing at large ones (BM_QuantizeNvfp4Launches
/// measures both; docs/design-notes.md quotes it). The bound stays where the gain is because a
/// cooperative launch needs its whole grid resident at once: beside kernels that spin until this
/// rank's next work (another stream's collective, ranks sharing a GPU in one process) a large grid
/// could wait for ever.
inline constexpr std::size_t kOneLaunchMaxElements = std::size_t{1} << 20;

/// The launch shape ScaleMode::Compute takes for `count` elements by default.
inline constexpr QuantizeLaunch default_quantize_launch(std::size_t count) {
  return count <= kOneLaunchMaxElements ? QuantizeLaunch::One : QuantizeLaunch::Separate;
}

/// Writes to the device float `slot` the scale of `type` (the NVFP4 global scale, or the FP8
/// scale of an FP8 type) that ScaleMode::Compute would choose for `count` bf16 elements at `src` (a
/// multiple of 8): an amax reduction and a finalisation, separate launches (memset, amax,
/// one-thread finalise) or one cooperative launch; the same bytes either way.
void scale_from_amax(const bf16* src, std::size_t count, float* slot, DataType type,
                     QuantizeLaunch launch, cudaStream_t stream);
/// scale_from_amax with default_quantize_launch(count).
void scale_from_amax(const bf16* src, std::size_t count, float* slot, DataType type,
                     cudaStream_t stream);

/// quantize_nvfp4 (symmcomm/formats/codecs.hpp) with the launch shape chosen.
void quantize_nvfp4(const bf16* src, Nvfp4View dst, ScaleMode mode, QuantizeLaunch launch,
                    cudaStream_t stream);

}  // namespace symmcomm::detail
