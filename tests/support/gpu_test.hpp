#pragma once
// Helpers for GPU tests: skipping where no GPU is present, and a small device buffer owner.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "support/ordered_copy.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm::test {

/// Number of usable CUDA devices (0 when the driver or devices are missing).
inline int gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

/// Why GPU tests cannot run here, or "" when they can.
inline std::string no_gpu_reason() {
  int n = 0;
  cudaError_t const e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no usable CUDA device (") + cudaGetErrorName(e) + ")";
  }
  return n > 0 ? "" : "no CUDA device";
}

/// True when SYMMCOMM_REQUIRE_GPU=1: a GPU machine's scripts set it, so that a broken driver
/// (cudaGetDeviceCount failing) fails the GPU tests instead of skipping them all.
inline bool gpu_required() {
  const char* v = std::getenv("SYMMCOMM_REQUIRE_GPU");
  return v != nullptr && std::string(v) == "1";
}

#define SYMMCOMM_REQUIRE_GPU()                                                    \
  do {                                                                            \
    std::string const reason_ = ::symmcomm::test::no_gpu_reason();                \
    if (!reason_.empty() && ::symmcomm::test::gpu_required()) {                   \
      FAIL() << "SYMMCOMM_REQUIRE_GPU=1 but there is no usable GPU: " << reason_; \
    }                                                                             \
    if (!reason_.empty()) GTEST_SKIP() << "needs a GPU: " << reason_;             \
  } while (0)

#define SYMMCOMM_REQUIRE_GPUS(n)                                                             \
  do {                                                                                       \
    int const have_ = ::symmcomm::test::gpu_count();                                         \
    if (have_ < (n)) GTEST_SKIP() << "needs " << (n) << " GPUs, this machine has " << have_; \
  } while (0)

/// A cudaMalloc'ed array of T, poisoned with 0xAB bytes on creation (waited for, so it is
/// ordered before work on any stream). Uploads, downloads and poison run on the stream given
/// (the legacy stream by default): pass the stream the array is used on when that is a
/// non-blocking stream (support/ordered_copy.hpp says why).
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t count) : count_(count) {
    SYMMCOMM_CUDA_TRY(cudaMalloc(&ptr_, bytes() > 0 ? bytes() : 1));
    poison(0xAB, nullptr);
    SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(nullptr));
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { cudaFree(ptr_); }

  T* get() const { return ptr_; }
  std::size_t count() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }
  void poison(int byte = 0xAB, cudaStream_t stream = nullptr) {
    support::fill_on(stream, ptr_, byte, bytes());
  }
  void upload(const std::vector<T>& host, cudaStream_t stream = nullptr) {
    support::upload_on(stream, ptr_, host);
  }
  std::vector<T> download(cudaStream_t stream = nullptr) const {
    return support::download_on<T>(stream, ptr_, count_);
  }

 private:
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace symmcomm::test
