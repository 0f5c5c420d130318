// For scripts/check_torch_ops_cpu.sh only, linked into a check build of libsymmcomm_torch.so
// against a PyTorch built without CUDA (no libc10_cuda.so): a stand-in for the one CUDA-stream
// call (it throws: a call that passed every check ends there), and two entry points the check
// calls through ctypes - the operators registered on the CPU key, and a communicator and a MoE
// group that exist only by name - so that the operators' own checks run on CPU tensors. Every
// operator checks its tensors (on a CUDA device, or CPU tensors standing in for device -1's) before
// it takes a stream, and the stream comes before the communicator's handle is used, so the stand-in
// handle is never passed to the library.
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "communicators.hpp"
#include "ops.hpp"

namespace c10 {
namespace cuda {

CUDAStream getCurrentCUDAStream(DeviceIndex) {
  throw std::runtime_error("cpu_check_support: this build of libsymmcomm_torch.so has no CUDA");
}

cudaStream_t CUDAStream::stream() const {
  return nullptr;
}

}  // namespace cuda
}  // namespace c10

extern "C" {

/// The operators of ops.cpp registered on the CPU key of `ns` (schemas defined already);
/// 0, or 1 with the dispatcher's text in `error`.
__attribute__((visibility("default"))) int symmcomm_torch_check_register_cpu(const char* ns,
                                                                             char* error,
                                                                             size_t capacity) {
  try {
    // Leaked, as the library's own registrations are.
    auto* lib =
        new torch::Library(torch::Library::IMPL, ns, c10::DispatchKey::CPU, __FILE__, __LINE__);
    symmcomm::torch_ops::implement(*lib);
    return 0;
  } catch (const std::exception& e) {
    if (capacity > 0) {
      std::strncpy(error, e.what(), capacity - 1);
      error[capacity - 1] = '\0';
    }
    return 1;
  }
}

/// A communicator of `size` ranks, this one `rank`, on `device`, known only by `name`. On device
/// -1 the check build takes CPU tensors for the device's (tensors.cpp), so that a call runs every
/// check; one that passes them all stops at the stand-in stream above, before the handle is used.
__attribute__((visibility("default"))) void symmcomm_torch_check_name_communicator(const char* name,
                                                                                   int rank,
                                                                                   int size,
                                                                                   int device) {
  symmcomm::torch_ops::Communicator entry;
  entry.comm = reinterpret_cast<symmcomm_comm_t>(std::uintptr_t{0x1000});
  entry.rank = rank;
  entry.size = size;
  entry.device = device;
  symmcomm::torch_ops::communicators().set(name, entry);
}

/// A MoE group of shape `config` (capacity resolved), `local_experts` experts here of
/// `expert_scale_bytes` block-scale bytes each, on `device`, known only by `name` (no buffers: a
/// call that passes every check stops at the stand-in stream before it would use them).
__attribute__((visibility("default"))) void symmcomm_torch_check_name_moe_group(
    const char* name, const symmcomm_moe_config_t* config, int local_experts,
    size_t expert_scale_bytes, int device) {
  symmcomm::torch_ops::MoeGroupEntry entry;
  entry.group = reinterpret_cast<symmcomm_moe_t>(std::uintptr_t{0x2000});
  entry.config = *config;
  entry.buffers.local_experts = local_experts;
  entry.buffers.capacity = config->capacity;
  entry.buffers.expert_scale_bytes = expert_scale_bytes;
  entry.device = device;
  symmcomm::torch_ops::moe_groups().set(name, entry);
}

}  // extern "C"
