#pragma once
// Copies and fills ordered with the stream that uses the memory (tests, benchmarks).
//
// Why: a pageable host-to-device cudaMemcpy may return before its DMA has landed, and it runs
// on the legacy stream, which does not order work on a cudaStreamNonBlocking stream; a plain
// cudaMemset is asynchronous on the legacy stream too. A kernel enqueued next on a
// non-blocking stream can then read the old bytes (symmcomm-bench's in-place check failed 1
// run in 6-20 that way). These helpers enqueue on the stream that will use the memory and,
// where the host hands over or reads host memory, wait for that stream.
//
// scripts/check_stream_order.sh refuses cudaMemcpy( / cudaMemset( in bench/, tests/ and
// examples/ unless the line says `host-synchronous:` and why.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "symmcomm/error.hpp"

namespace symmcomm::support {

/// Copies `bytes` from `src` to `dst` (any direction) on `stream` and waits for that stream:
/// the copy is ordered after the stream's earlier work (a download sees the results of
/// kernels enqueued there) and before anything enqueued after, and the host may reuse or read
/// its memory on return. nullptr is the legacy stream.
inline void copy_on(cudaStream_t stream, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  SYMMCOMM_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
  SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(stream));
}

/// Uploads `host` to `dst` on `stream` (see copy_on).
template <class T>
void upload_on(cudaStream_t stream, void* dst, const std::vector<T>& host) {
  copy_on(stream, dst, host.data(), host.size() * sizeof(T));
}

/// Uploads one value to `dst` on `stream` (see copy_on).
template <class T>
void upload_value_on(cudaStream_t stream, void* dst, const T& value) {
  copy_on(stream, dst, &value, sizeof(T));
}

/// `count` elements of T at `src`, downloaded on `stream` after the stream's earlier work.
template <class T>
std::vector<T> download_on(cudaStream_t stream, const void* src, std::size_t count) {
  std::vector<T> host(count);
  copy_on(stream, host.data(), src, count * sizeof(T));
  return host;
}

/// Sets `bytes` at `dst` to `byte`, enqueued on `stream` (ordered with what that stream runs
/// next; the host does not wait).
inline void fill_on(cudaStream_t stream, void* dst, int byte, std::size_t bytes) {
  if (bytes == 0) return;
  SYMMCOMM_CUDA_TRY(cudaMemsetAsync(dst, byte, bytes, stream));
}

}  // namespace symmcomm::support
