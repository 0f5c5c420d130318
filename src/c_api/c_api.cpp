// The C ABI (symmcomm/c_api.h): versions, communicators, pools, provenance and the PyTorch
// allocator entry points (codecs and collectives: c_api_collectives.cpp). Every entry point
// translates C++ exceptions into status codes and a thread-local error text
// (c_api_internal.hpp).

#include "symmcomm/c_api.h"

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "c_api_internal.hpp"
#include "core/cuda_utils.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/logging.hpp"
#include "symmcomm/memory/symm_allocator.hpp"
#include "symmcomm/memory/verify.hpp"
#include "symmcomm/system_report.hpp"
#include "symmcomm/version.hpp"

using namespace symmcomm::c_api;

namespace {

// No heap object lives in the first page: a smaller "address" is an integer, not a pointer.
constexpr std::uintptr_t kLowestPointer = 4096;

// SYMMCOMM_SEGV_BACKTRACE=1: print a native backtrace when the process crashes (for crashes
// inside foreign libraries, e.g. a mismatched NCCL in a PyTorch process), then die as before.
void print_backtrace_and_die(int sig) {
  void* frames[64];
  int const n = backtrace(frames, 64);
  static const char kHeader[] = "symmcomm: fatal signal; native backtrace:\n";
  ssize_t const w = write(STDERR_FILENO, kHeader, sizeof(kHeader) - 1);
  (void)w;
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  signal(sig, SIG_DFL);
  raise(sig);
}

const bool segv_backtrace_installed = [] {
  const char* env = std::getenv("SYMMCOMM_SEGV_BACKTRACE");
  if (env == nullptr || std::strcmp(env, "1") != 0) return false;
  signal(SIGSEGV, print_backtrace_and_die);
  signal(SIGABRT, print_backtrace_and_die);
  return true;
}();

// Pools serving the PyTorch allocator, by device.
std::mutex torch_mutex;
std::array<symmcomm_pool_t, 64> torch_pools{};

}  // namespace

extern "C" {

const char* symmcomm_last_error(void) {
  return last_error.c_str();
}
const char* symmcomm_version(void) {
  return symmcomm::kVersion;
}

int symmcomm_abi_version(void) {
  return SYMMCOMM_C_ABI_VERSION;
}

symmcomm_status_t symmcomm_system_report(int json, int probe_ranks, char* text, size_t capacity,
                                         size_t* needed) {
  return guarded([&] {
    SYMMCOMM_EXPECTS(text != nullptr || capacity == 0, "text is NULL but capacity is " << capacity);
    SYMMCOMM_EXPECTS(probe_ranks >= 0 && probe_ranks <= 64,
                     "probe_ranks " << probe_ranks << " is outside 0..64");
    std::string const report = symmcomm::system_report(
        json != 0 ? symmcomm::ReportFormat::Json : symmcomm::ReportFormat::Text, probe_ranks);
    if (needed != nullptr) *needed = report.size() + 1;
    if (capacity > 0) {
      std::size_t const n = std::min(report.size(), capacity - 1);
      std::memcpy(text, report.data(), n);
      text[n] = '\0';
    }
  });
}

size_t symmcomm_unique_id_bytes(void) {
  return sizeof(ncclUniqueId);
}

symmcomm_status_t symmcomm_get_unique_id(void* id_out) {
  return guarded([&] {
    SYMMCOMM_EXPECTS(id_out != nullptr, "id_out is NULL");
    ncclUniqueId id;
    SYMMCOMM_NCCL_TRY(ncclGetUniqueId(&id));
    std::memcpy(id_out, &id, sizeof(id));
  });
}

symmcomm_status_t symmcomm_comm_init(int nranks, const void* id, int rank, int device,
                                     symmcomm_comm_t* out) {
  return guarded([&] {
    SYMMCOMM_EXPECTS(out != nullptr, "out is NULL");
    SYMMCOMM_EXPECTS(id != nullptr, "id is NULL");
    SYMMCOMM_EXPECTS(nranks > 0, "nranks " << nranks << " is not positive");
    SYMMCOMM_EXPECTS(rank >= 0 && rank < nranks,
                     "rank " << rank << " is outside 0.." << nranks - 1);
    int visible = 0;
    cudaError_t const e = cudaGetDeviceCount(&visible);
    SYMMCOMM_EXPECTS(e == cudaSuccess && visible > 0, "no CUDA device is visible");
    SYMMCOMM_EXPECTS(device >= 0 && device < visible,
                     "device " << device << " is not one of the " << visible << " visible");
    symmcomm::check_nccl_runtime();
    ncclUniqueId nccl_id;
    std::memcpy(&nccl_id, id, sizeof(nccl_id));
    symmcomm::detail::DeviceGuard guard(device);
    ncclComm_t raw = nullptr;
    SYMMCOMM_NCCL_TRY(ncclCommInitRank(&raw, nranks, nccl_id, rank));
    auto handle = std::make_unique<symmcomm_comm_s>();
    handle->comm = symmcomm::Communicator::own(raw);
    *out = handle.release();
  });
}

symmcomm_status_t symmcomm_comm_wrap(ncclComm_t nccl_comm, int probe, symmcomm_comm_t* out) {
  return guarded([&] {
    SYMMCOMM_EXPECTS(out != nullptr, "out is NULL");
    SYMMCOMM_EXPECTS(nccl_comm != nullptr, "nccl_comm is NULL");
    // Values that cannot be the address of NCCL's heap-allocated communicator are refused here
    // rather than dereferenced; any other value is trusted (it cannot be validated).
    auto const address = reinterpret_cast<std::uintptr_t>(nccl_comm);
    SYMMCOMM_EXPECTS(address >= kLowestPointer && address % alignof(void*) == 0,
                     "nccl_comm " << static_cast<const void*>(nccl_comm)
                                  << " cannot be the address of an ncclComm_t (below "
                                  << kLowestPointer << " or not " << alignof(void*)
                                  << "-byte aligned)");
    auto handle = std::make_unique<symmcomm_comm_s>();
    handle->comm =
        symmcomm::Communicator::borrow(nccl_comm, probe != 0 ? symmcomm::Communicator::Probe::Yes
                                                             : symmcomm::Communicator::Probe::No);
    *out = handle.release();
  });
}

symmcomm_status_t symmcomm_comm_release(symmcomm_comm_t comm) {
  return guarded([&] {
    delete comm;  // NULL: nothing to release, as free(NULL)
  });
}

symmcomm_status_t symmcomm_comm_info(symmcomm_comm_t comm, int* rank, int* size, int* device,
                                     int* symmetric) {
  return guarded([&] {
    auto const& c = comm_of(comm);
    if (rank != nullptr) *rank = c.rank();
    if (size != nullptr) *size = c.size();
    if (device != nullptr) *device = c.device();
    if (symmetric != nullptr) *symmetric = c.capabilities().symmetric_memory ? 1 : 0;
  });
}

symmcomm_status_t symmcomm_pool_create(symmcomm_comm_t comm, size_t initial_bytes,
                                       size_t growth_bytes, int allow_growth,
                                       symmcomm_pool_t* out) {
  return guarded([&] {
    SYMMCOMM_EXPECTS(out != nullptr, "out is NULL");
    auto const& c = comm_of(comm);
    symmcomm::PoolOptions options;
    options.initial_bytes = initial_bytes;
    options.allow_growth = allow_growth != 0;
    if (growth_bytes > 0) options.growth_bytes = growth_bytes;
    auto handle = std::make_unique<symmcomm_pool_s>();
    handle->device = c.device();
    handle->pool = std::make_unique<symmcomm::SymmAllocator>(c, options);
    *out = handle.release();
  });
}

symmcomm_status_t symmcomm_pool_destroy(symmcomm_pool_t pool) {
  return guarded([&] {
    if (pool == nullptr) return;  // nothing to destroy, as free(NULL)
    {
      std::lock_guard lock(torch_mutex);
      for (auto& p : torch_pools) {
        if (p == pool) p = nullptr;
      }
    }
    delete pool;
  });
}

symmcomm_status_t symmcomm_pool_reserve(symmcomm_pool_t pool, size_t bytes) {
  return guarded([&] { deref(pool, "pool").pool->reserve(bytes); });
}

symmcomm_status_t symmcomm_pool_allocate(symmcomm_pool_t pool, size_t bytes, size_t alignment,
                                         cudaStream_t stream, void** out) {
  return guarded([&] {
    SYMMCOMM_EXPECTS(out != nullptr, "out is NULL");
    *out = deref(pool, "pool").pool->allocate(bytes, alignment, stream);
  });
}

symmcomm_status_t symmcomm_pool_free(symmcomm_pool_t pool, void* ptr) {
  return guarded([&] { deref(pool, "pool").pool->deallocate(ptr); });
}

symmcomm_status_t symmcomm_pool_free_async(symmcomm_pool_t pool, void* ptr, cudaStream_t stream) {
  return guarded([&] { deref(pool, "pool").pool->deallocate(ptr, stream); });
}

symmcomm_status_t symmcomm_pool_stats(symmcomm_pool_t pool, size_t* reserved_bytes,
                                      size_t* in_use_bytes, size_t* arenas,
                                      size_t* live_allocations) {
  return guarded([&] {
    auto const s = deref(pool, "pool").pool->stats();
    if (reserved_bytes != nullptr) *reserved_bytes = s.reserved_bytes;
    if (in_use_bytes != nullptr) *in_use_bytes = s.in_use_bytes;
    if (arenas != nullptr) *arenas = s.arena_count;
    if (live_allocations != nullptr) *live_allocations = s.live_allocations;
  });
}

symmcomm_status_t symmcomm_verify(symmcomm_comm_t comm, cudaStream_t stream) {
  return guarded([&] { symmcomm::verify_symmetric(comm_of(comm), stream); });
}

symmcomm_status_t symmcomm_provenance(symmcomm_comm_t comm, const void* ptr, size_t bytes,
                                      int* symmetric, size_t* window_offset) {
  return guarded([&] {
    SYMMCOMM_EXPECTS(symmetric != nullptr, "symmetric is NULL");
    auto const p = symmcomm::provenance_of(comm_of(comm), ptr, bytes);
    *symmetric = p.symmetric() ? 1 : 0;
    if (window_offset != nullptr) *window_offset = p.offset;
    if (!p.symmetric()) last_error = p.describe("ptr", ptr, bytes);
  });
}

symmcomm_status_t symmcomm_torch_set_pool(symmcomm_pool_t pool) {
  return guarded([&] {
    SYMMCOMM_EXPECTS(pool != nullptr, "pool is NULL");
    SYMMCOMM_EXPECTS(pool->device >= 0 && pool->device < static_cast<int>(torch_pools.size()),
                     "pool device " << pool->device << " is out of range");
    std::lock_guard lock(torch_mutex);
    torch_pools[static_cast<std::size_t>(pool->device)] = pool;
  });
}

void* symmcomm_torch_alloc(ssize_t size, int device, cudaStream_t stream) {
  void* out = nullptr;
  symmcomm_status_t const status = guarded([&] {
    SYMMCOMM_EXPECTS(size > 0, "size " << size << " is not positive");
    SYMMCOMM_EXPECTS(device >= 0 && device < static_cast<int>(torch_pools.size()),
                     "device " << device << " is out of range");
    symmcomm_pool_t pool = nullptr;
    {
      std::lock_guard lock(torch_mutex);
      pool = torch_pools[static_cast<std::size_t>(device)];
    }
    SYMMCOMM_EXPECTS(pool != nullptr,
                     "no pool set for device " << device << " (symmcomm_torch_set_pool)");
    out = pool->pool->allocate(static_cast<std::size_t>(size), 0, stream);
  });
  if (status != SYMMCOMM_SUCCESS) {
    SYMMCOMM_LOG_WARN("symmcomm_torch_alloc(" << size << ", device " << device
                                              << "): " << last_error);
    return nullptr;
  }
  return out;
}

void symmcomm_torch_free(void* ptr, ssize_t /*size*/, int device, cudaStream_t stream) {
  symmcomm_status_t const status = guarded([&] {
    if (ptr == nullptr) return;
    SYMMCOMM_EXPECTS(device >= 0 && device < static_cast<int>(torch_pools.size()),
                     "device " << device << " is out of range");
    symmcomm_pool_t pool = nullptr;
    {
      std::lock_guard lock(torch_mutex);
      pool = torch_pools[static_cast<std::size_t>(device)];
    }
    SYMMCOMM_EXPECTS(pool != nullptr, "no pool set for device " << device);
    // PyTorch frees with the tensor's allocation stream, where work may still read it: the
    // block is reused only after that stream passes this point (stream 0, PyTorch's default
    // stream, is CUDA's legacy stream and carries the event like any other); a capturing
    // stream cannot carry one, so the block is then returned at once.
    if (!symmcomm::detail::capture_in_progress(stream)) {
      pool->pool->deallocate(ptr, stream);
    } else {
      pool->pool->deallocate(ptr);
    }
  });
  if (status != SYMMCOMM_SUCCESS) {
    SYMMCOMM_LOG_WARN("symmcomm_torch_free(" << ptr << "): " << last_error);
  }
}

}  // extern "C"
