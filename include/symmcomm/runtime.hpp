#pragma once
/// @file runtime.hpp
/// @brief Facts about the NCCL library loaded at run time, and guards for its known bugs.

#include <cuda_runtime_api.h>

namespace symmcomm {

/// @brief An NCCL version as (major, minor, patch), comparable.
struct NcclVersion {
  int major = 0;  ///< 2 for every NCCL symmcomm supports
  int minor = 0;  ///< e.g. 28 for 2.28.9
  int patch = 0;  ///< e.g. 9 for 2.28.9
  /// @brief Decodes NCCL's version code (major*10000 + minor*100 + patch for 2.9+).
  static constexpr NcclVersion from_code(int code) noexcept {
    return NcclVersion{code / 10000, (code % 10000) / 100, code % 100};
  }
  /// @brief The version code NCCL would give (NCCL_VERSION_CODE, ncclGetVersion).
  constexpr int code() const noexcept { return major * 10000 + minor * 100 + patch; }
};
/// @brief Older than.
constexpr bool operator<(NcclVersion a, NcclVersion b) noexcept {
  return a.code() < b.code();
}
/// @brief At least as new as.
constexpr bool operator>=(NcclVersion a, NcclVersion b) noexcept {
  return !(a < b);
}
/// @brief The same release.
constexpr bool operator==(NcclVersion a, NcclVersion b) noexcept {
  return a.code() == b.code();
}

/// @brief Oldest NCCL with symmetric windows (`NCCL_WIN_COLL_SYMMETRIC`).
inline constexpr NcclVersion kMinNcclVersion{2, 27, 0};

/// @brief The NCCL version symmcomm was compiled against.
NcclVersion nccl_build_version() noexcept;
/// @brief The NCCL version loaded now (`ncclGetVersion`). @throws NcclError if NCCL cannot tell.
NcclVersion nccl_runtime_version();
/// @brief Throws LogicError when the loaded NCCL is older than kMinNcclVersion or of another
/// major version than the headers; logs a warning when it differs from the build version.
void check_nccl_runtime();

/// @brief Whether symmcomm's device-API code built against NCCL `built` may hand its structs
/// (`ncclDevCommRequirements`, `ncclDevComm`) to the loaded NCCL `loaded`. NCCL 2.28 has no
/// versioned structs: only the exact version built against is safe. From 2.29.2 NCCL stamps the
/// requirements struct with its size and version and accepts structs of older headers, so any
/// loaded NCCL at least as new as the headers is fine (the case of PyTorch's wheel loading its
/// own NCCL); an older one cannot read a newer layout.
constexpr bool nccl_device_api_compatible(NcclVersion loaded, NcclVersion built) noexcept {
  if (built < NcclVersion{2, 29, 2}) return loaded == built;
  return loaded >= built;
}

/// @brief Whether the loaded NCCL runs its symmetric kernels when only the buffer that peers
/// access is in a symmetric window (NCCL >= 2.29: the receive buffer of an all-gather, the send
/// buffer of a reduce-scatter). NCCL 2.28 needs both send and receive buffers registered.
constexpr bool nccl_symmetric_needs_peer_side_only(NcclVersion loaded) noexcept {
  return loaded >= NcclVersion{2, 29, 0};
}

/// @brief True for NCCL versions whose symmetric kernels miss a grid-dependency sync under
/// programmatic dependent launch (2.28.0 to 2.30.6), so they may read stale input.
constexpr bool nccl_has_pdl_stale_input_bug(NcclVersion v) noexcept {
  return v >= NcclVersion{2, 28, 0} && v < NcclVersion{2, 30, 7};
}

/// @brief Enqueues an empty kernel launched *without* programmatic dependent launch: it starts
/// only once everything before it on `stream` has completed, and since it never triggers its
/// dependents early, a kernel after it (even one launched with programmatic stream
/// serialisation, as NCCL's are) cannot start before that either. symmcomm enqueues it before
/// NCCL symmetric collectives when nccl_has_pdl_stale_input_bug() holds for the loaded NCCL
/// (Options::pdl_fence), so NCCL's kernel cannot read a producer's input before the producer
/// finished writing it. Costs one empty kernel of stream time (bench/micro measures it).
/// Capturable.
void enqueue_pdl_fence(cudaStream_t stream);

}  // namespace symmcomm
