#include "core/cuda_utils.hpp"

#include <string>

#include "symmcomm/error.hpp"

namespace symmcomm::detail {

DeviceGuard::DeviceGuard(int device) {
  SYMMCOMM_CUDA_TRY(cudaGetDevice(&previous_));
  if (previous_ != device) {
    SYMMCOMM_CUDA_TRY(cudaSetDevice(device));
    switched_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  if (switched_) SYMMCOMM_CUDA_LOG_ON_ERROR(cudaSetDevice(previous_));
}

bool capture_in_progress(cudaStream_t stream) noexcept {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaError_t const e = cudaStreamIsCapturing(stream, &status);
  if (e == cudaErrorStreamCaptureImplicit) {
    (void)cudaGetLastError();
    return true;  // a global-mode capture elsewhere makes the legacy stream unusable
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  if (status != cudaStreamCaptureStatusNone) return true;
  if (stream != nullptr && stream != cudaStreamLegacy) {
    // Also refuse while another stream is captured in global mode (registration would break it).
    return capture_in_progress(nullptr);
  }
  return false;
}

void require_cuda_device(const char* what) {
  struct Answer {
    cudaError_t error;
    int devices;
  };
  static Answer const answer = [] {
    Answer a{cudaSuccess, 0};
    a.error = cudaGetDeviceCount(&a.devices);
    if (a.error != cudaSuccess) (void)cudaGetLastError();
    return a;
  }();
  if (answer.error == cudaSuccess && answer.devices > 0) return;
  std::string const why =
      answer.error != cudaSuccess ? cudaGetErrorString(answer.error) : std::string("0 devices");
  throw CudaError(answer.error == cudaSuccess ? cudaErrorNoDevice : answer.error,
                  std::string("symmcomm: ") + what + ": no CUDA device (" + why + ")");
}

int device_of_pointer(const void* ptr) noexcept {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, ptr) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged) {
    return -1;
  }
  return attributes.device;
}

}  // namespace symmcomm::detail
