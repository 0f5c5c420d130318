#pragma once
// Private to symmcomm (and its own tests and tools, which add src/ to their include path).
/// @file cuda_utils.hpp
/// @brief Small CUDA helpers shared by symmcomm's layers: a current-device guard and a check for
/// stream capture.

#include <cuda_runtime_api.h>

namespace symmcomm::detail {

/// @brief Makes `device` current for the guard's lifetime and restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  bool switched_ = false;
};

/// @brief True when `stream` is being captured into a CUDA graph, or when any capture in
/// global mode is under way (where NCCL registration and cudaMalloc are illegal).
bool capture_in_progress(cudaStream_t stream) noexcept;

/// Throws CudaError "<what>: no CUDA device (<CUDA's reason>)" when the process sees no CUDA
/// device (no GPU, or a driver too old for the runtime); answered once per process.
void require_cuda_device(const char* what);

/// @brief The CUDA device that owns `ptr`, or -1 for host or unknown memory.
int device_of_pointer(const void* ptr) noexcept;

}  // namespace symmcomm::detail
