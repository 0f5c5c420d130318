// libsymmcomm_torch.so's C entry points (symmcomm_torch.h): the operators' registrations, one
// torch::Library per namespace on the CUDA key, and the communicators' names.
#include <c10/util/Exception.h>
#include <torch/library.h>
#include <torch/version.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "communicators.hpp"
#include "ops.hpp"
#include "symmcomm_torch.h"

namespace symmcomm::torch_ops {
namespace {

#define SYMMCOMM_TORCH_NAME(op) #op ","
constexpr char kOperators[] = SYMMCOMM_TORCH_OPERATORS(SYMMCOMM_TORCH_NAME);
#undef SYMMCOMM_TORCH_NAME

/// torch::Library per namespace. Never destroyed: a registration outlives static destruction,
/// as PyTorch's own do (its dispatcher may go first).
std::mutex libraries_mutex;
std::map<std::string, std::unique_ptr<torch::Library>>& libraries() {
  static auto* all = new std::map<std::string, std::unique_ptr<torch::Library>>();
  return *all;
}

std::unique_ptr<torch::Library> implement_on_cuda(const std::string& ns) {
  auto lib = std::make_unique<torch::Library>(torch::Library::IMPL, ns, c10::DispatchKey::CUDA,
                                              __FILE__, __LINE__);
  implement(*lib);
  return lib;
}

int fail(char* error, size_t capacity, const char* text) {
  if (error != nullptr && capacity > 0) {
    size_t const n = std::min(std::strlen(text), capacity - 1);
    std::memcpy(error, text, n);
    error[n] = '\0';
  }
  return 1;
}

template <class Fn>
int guarded(char* error, size_t capacity, Fn&& fn) {
  try {
    fn();
    return 0;
  } catch (const c10::Error& e) {
    return fail(error, capacity, e.what_without_backtrace());
  } catch (const std::exception& e) {
    return fail(error, capacity, e.what());
  } catch (...) {
    return fail(error, capacity, "unknown exception");
  }
}

}  // namespace
}  // namespace symmcomm::torch_ops

using namespace symmcomm::torch_ops;

extern "C" {

int symmcomm_torch_abi_version(void) {
  return SYMMCOMM_TORCH_ABI_VERSION;
}

const char* symmcomm_torch_built_against(void) {
  return TORCH_VERSION;
}

const void* symmcomm_torch_c_library(void) {
  return reinterpret_cast<const void*>(&symmcomm_abi_version);
}

const char* symmcomm_torch_operators(void) {
  return kOperators;
}

int symmcomm_torch_register(const char* ns, char* error, size_t capacity) {
  if (ns == nullptr || *ns == '\0') return fail(error, capacity, "ns must be a non-empty string");
  return guarded(error, capacity, [&] {
    std::lock_guard<std::mutex> lock(libraries_mutex);
    auto& all = libraries();
    if (all.count(ns) != 0) return;
    // A failure destroys the partly filled library, taking back what it had registered.
    all.emplace(ns, implement_on_cuda(ns));
  });
}

int symmcomm_torch_set_communicator(const char* name, symmcomm_comm_t comm, char* error,
                                    size_t capacity) {
  if (name == nullptr || *name == '\0') {
    return fail(error, capacity, "name must be a non-empty string");
  }
  Communicator entry;
  entry.comm = comm;
  if (symmcomm_comm_info(comm, &entry.rank, &entry.size, &entry.device, nullptr) !=
      SYMMCOMM_SUCCESS) {
    return fail(error, capacity, symmcomm_last_error());
  }
  return guarded(error, capacity, [&] { communicators().set(name, entry); });
}

int symmcomm_torch_remove_communicator(const char* name) {
  return name != nullptr && communicators().remove(name) ? 1 : 0;
}

int symmcomm_torch_set_moe_group(const char* name, symmcomm_moe_t group,
                                 const symmcomm_moe_config_t* config, int device, char* error,
                                 size_t capacity) {
  if (name == nullptr || *name == '\0') {
    return fail(error, capacity, "name must be a non-empty string");
  }
  if (config == nullptr) return fail(error, capacity, "config must not be NULL");
  MoeGroupEntry entry;
  entry.group = group;
  entry.config = *config;
  entry.device = device;
  if (symmcomm_moe_buffers(group, &entry.buffers) != SYMMCOMM_SUCCESS) {
    return fail(error, capacity, symmcomm_last_error());
  }
  entry.config.capacity = entry.buffers.capacity;
  return guarded(error, capacity, [&] { moe_groups().set(name, entry); });
}

int symmcomm_torch_remove_moe_group(const char* name) {
  return name != nullptr && moe_groups().remove(name) ? 1 : 0;
}

}  // extern "C"
