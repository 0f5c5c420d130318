#pragma once
/// @file build_info.hpp
/// @brief What this build of symmcomm carries for which GPUs: the CUDA architectures it was
/// compiled for, and whether a GPU of a given compute capability runs its kernels from
/// precompiled SASS, from PTX compiled just in time at first load, or not at all.

#include <cstdint>

namespace symmcomm {

/// @brief How the library's kernels run on a GPU.
enum class DeviceCode : std::uint8_t {
  Sass,     ///< precompiled machine code for this architecture (or an older minor of its major)
  Ptx,      ///< PTX the driver compiles at first load (slow start, every kernel)
  None,     ///< nothing this GPU can run: every kernel launch fails
  Unknown,  ///< built for "native" or a CMake keyword: the list is not known here
};
/// @brief "sass", "ptx-jit", "none" or "unknown".
const char* to_string(DeviceCode code) noexcept;

/// @brief The CUDA architectures the library was compiled for, as CMake listed them, comma
/// separated ("90-real,100-real,120": -real SASS only, -virtual PTX only, bare both).
const char* built_cuda_architectures() noexcept;

/// @brief How this build runs on a GPU of compute capability `major`.`minor`: SASS built for
/// sm_XY runs on sm_XZ with Z >= Y (arch-specific "a" builds only on sm_XY itself); PTX for
/// compute_XY is compiled by the driver for any later GPU.
DeviceCode device_code(int major, int minor) noexcept;
/// @brief As device_code(), for an explicit architecture list in the format of
/// built_cuda_architectures() (what the library's own answer is made of; tests use it).
DeviceCode device_code(const char* architectures, int major, int minor) noexcept;

}  // namespace symmcomm
