// For scripts/check_torch_ops_cpu.sh only: lets ops.cpp link against a PyTorch built without
// CUDA (no libc10_cuda.so), so that the operators' registration - their C++ signatures against
// symmcomm.ops' schemas - is checked on a machine without a GPU. Never part of a build that runs
// an operator: asking for a stream here throws.
#include <c10/cuda/CUDAStream.h>

#include <stdexcept>

namespace c10 {
namespace cuda {

CUDAStream getCurrentCUDAStream(DeviceIndex) {
  throw std::runtime_error("cuda_stream_stub: this build of libsymmcomm_torch.so has no CUDA");
}

cudaStream_t CUDAStream::stream() const {
  return nullptr;
}

}  // namespace cuda
}  // namespace c10
