// The C ABI (symmcomm/c_api.h): every entry point translates C++ exceptions into status codes
// and a thread-local error text.

#include "symmcomm/c_api.h"

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/detail/cuda_utils.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/codecs.hpp"
#include "symmcomm/logging.hpp"
#include "symmcomm/memory/symm_allocator.hpp"
#include "symmcomm/memory/verify.hpp"
#include "symmcomm/version.hpp"

struct symmcomm_comm_s {
  symmcomm::Communicator comm;
};
struct symmcomm_pool_s {
  std::unique_ptr<symmcomm::SymmAllocator> pool;
  int device = 0;
};

namespace {

thread_local std::string last_error;
thread_local std::string last_plan_reason;

symmcomm_status_t fail(symmcomm_status_t status, const std::string& text) {
  last_error = text;
  return status;
}

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

// Runs `body`, mapping exceptions to status codes.
template <class F>
symmcomm_status_t guarded(F&& body) noexcept {
  try {
    body();
    return SYMMCOMM_SUCCESS;
  } catch (const symmcomm::SymmetryError& e) {
    return fail(SYMMCOMM_ERROR_NOT_SYMMETRIC, e.what());
  } catch (const symmcomm::LogicError& e) {
    return fail(SYMMCOMM_ERROR_INVALID_ARGUMENT, e.what());
  } catch (const symmcomm::OutOfMemory& e) {
    return fail(SYMMCOMM_ERROR_OUT_OF_MEMORY, e.what());
  } catch (const symmcomm::CudaError& e) {
    return fail(SYMMCOMM_ERROR_CUDA, e.what());
  } catch (const symmcomm::NcclError& e) {
    return fail(SYMMCOMM_ERROR_NCCL, e.what());
  } catch (const symmcomm::TimeoutError& e) {
    return fail(SYMMCOMM_ERROR_TIMEOUT, e.what());
  } catch (const std::bad_alloc&) {
    return fail(SYMMCOMM_ERROR_OUT_OF_MEMORY, "symmcomm: host memory exhausted");
  } catch (const std::exception& e) {
    return fail(SYMMCOMM_ERROR_INTERNAL, e.what());
  } catch (...) {
    return fail(SYMMCOMM_ERROR_INTERNAL, "symmcomm: unknown exception");
  }
}

template <class T>
T& deref(T* p, const char* name) {
  SYMMCOMM_EXPECTS(p != nullptr, name << " is NULL");
  return *p;
}

const symmcomm::Communicator& comm_of(symmcomm_comm_t c) {
  SYMMCOMM_EXPECTS(c != nullptr && c->comm, "comm is NULL or released");
  return c->comm;
}

symmcomm::Options options_of(symmcomm_path_t path_arg) {
  // Read as the int a C caller passed: loading an out-of-range value as the enum is undefined.
  int path = 0;
  static_assert(sizeof(path_arg) == sizeof(path));
  std::memcpy(&path, &path_arg, sizeof path);
  SYMMCOMM_EXPECTS(path >= SYMMCOMM_PATH_AUTO && path <= SYMMCOMM_PATH_FALLBACK,
                   "path " << path << " is not a symmcomm_path_t");
  symmcomm::Options o;
  o.path = static_cast<symmcomm::PathChoice>(path);
  return o;
}

// Options of an NVFP4 gather whose block scales land swizzled (rows of row_elements).
symmcomm::Options swizzled_options(symmcomm_path_t path, size_t row_elements) {
  symmcomm::Options o = options_of(path);
  o.scale_layout = symmcomm::ScaleLayout::Swizzled128x4;
  o.row_elements = row_elements;
  return o;
}

void report(const symmcomm::Plan& plan, int* path_taken) {
  if (path_taken != nullptr) *path_taken = static_cast<int>(plan.path);
  last_plan_reason = plan.reason();
}

symmcomm::Nvfp4View view_of(const symmcomm_nvfp4_t* v, const char* name) {
  auto const& t = deref(v, name);
  return symmcomm::Nvfp4View{t.data, t.block_scales, t.global_scale, t.count};
}

symmcomm::Fp8View view_of(const symmcomm_fp8_t* v, const char* name) {
  auto const& t = deref(v, name);
  // Read as the int a C caller stored: loading an out-of-range value as the enum is undefined.
  int format = 0;
  static_assert(sizeof(t.format) == sizeof(format));
  std::memcpy(&format, &t.format, sizeof format);
  SYMMCOMM_EXPECTS(format == SYMMCOMM_FP8_E4M3 || format == SYMMCOMM_FP8_E5M2,
                   name << "->format " << format << " is not an FP8 format");
  return symmcomm::Fp8View{t.data, t.scale, t.count, static_cast<symmcomm::Fp8Format>(t.format)};
}

// The host array of comm size counts an all_gatherv takes.
std::vector<std::size_t> counts_of(const symmcomm::Communicator& c, const size_t* counts) {
  SYMMCOMM_EXPECTS(counts != nullptr, "counts is NULL");
  return std::vector<std::size_t>(counts, counts + c.size());
}

symmcomm::bf16* bf16_ptr(const void* p) {
  return static_cast<symmcomm::bf16*>(const_cast<void*>(p));
}

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

const char* symmcomm_last_plan_reason(void) {
  return last_plan_reason.c_str();
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
    auto const p = symmcomm::ProvenanceRegistry::global().lookup(ptr, bytes, comm_of(comm).id());
    *symmetric = p.symmetric() ? 1 : 0;
    if (window_offset != nullptr) *window_offset = p.offset;
    if (!p.symmetric()) last_error = p.describe("ptr", ptr, bytes);
  });
}

symmcomm_status_t symmcomm_quantize_nvfp4(const void* src_bf16, const symmcomm_nvfp4_t* dst,
                                          int compute_scale, cudaStream_t stream) {
  return guarded([&] {
    symmcomm::quantize_nvfp4(
        bf16_ptr(src_bf16), view_of(dst, "dst"),
        compute_scale != 0 ? symmcomm::ScaleMode::Compute : symmcomm::ScaleMode::Given, stream);
  });
}

symmcomm_status_t symmcomm_dequantize_nvfp4(const symmcomm_nvfp4_t* src, void* dst_bf16,
                                            cudaStream_t stream) {
  return guarded(
      [&] { symmcomm::dequantize_nvfp4(view_of(src, "src"), bf16_ptr(dst_bf16), stream); });
}

symmcomm_status_t symmcomm_all_gather_bf16(symmcomm_comm_t comm, const void* send, void* recv,
                                           size_t send_count, symmcomm_path_t path,
                                           cudaStream_t stream, int* path_taken) {
  return guarded([&] {
    auto const& c = comm_of(comm);
    report(symmcomm::all_gather(
               c, symmcomm::Bf16Span{bf16_ptr(send), send_count},
               symmcomm::Bf16Span{bf16_ptr(recv), send_count * static_cast<size_t>(c.size())},
               stream, options_of(path)),
           path_taken);
  });
}

symmcomm_status_t symmcomm_quantize_fp8(const void* src_bf16, const symmcomm_fp8_t* dst,
                                        int compute_scale, cudaStream_t stream) {
  return guarded([&] {
    symmcomm::quantize_fp8(
        static_cast<const symmcomm::bf16*>(src_bf16), view_of(dst, "dst"),
        compute_scale != 0 ? symmcomm::ScaleMode::Compute : symmcomm::ScaleMode::Given, stream);
  });
}

symmcomm_status_t symmcomm_dequantize_fp8(const symmcomm_fp8_t* src, void* dst_bf16,
                                          cudaStream_t stream) {
  return guarded(
      [&] { symmcomm::dequantize_fp8(view_of(src, "src"), bf16_ptr(dst_bf16), stream); });
}

}  // extern "C"

namespace {
// Both fused quantize + all-gather entry points (the receive view picks the format).
template <class RecvC>
symmcomm_status_t quantize_all_gather_c(symmcomm_comm_t comm, const void* input_bf16, size_t count,
                                        const RecvC* recv, const float* scale, symmcomm_path_t path,
                                        cudaStream_t stream, int* path_taken) {
  return guarded([&] {
    symmcomm::ConstBf16Span const input{static_cast<const symmcomm::bf16*>(input_bf16), count};
    report(symmcomm::quantize_all_gather(comm_of(comm), input, view_of(recv, "recv"), scale, stream,
                                         options_of(path)),
           path_taken);
  });
}

// Both quantized all_gatherv entry points (the views pick the format).
template <class ViewC>
symmcomm_status_t all_gatherv_c(symmcomm_comm_t comm, const ViewC* send, const ViewC* recv,
                                const size_t* counts, symmcomm_path_t path, cudaStream_t stream,
                                int* path_taken) {
  return guarded([&] {
    auto const& c = comm_of(comm);
    report(symmcomm::all_gatherv(c, view_of(send, "send"), view_of(recv, "recv"),
                                 counts_of(c, counts), stream, options_of(path)),
           path_taken);
  });
}

// The quantized reduce-scatters with an fp32 or re-quantized output.
template <class SendC, class Recv>
symmcomm_status_t reduce_scatter_c(symmcomm_comm_t comm, const SendC* send, Recv recv,
                                   symmcomm_path_t path, cudaStream_t stream, int* path_taken) {
  return guarded([&] {
    report(symmcomm::reduce_scatter(comm_of(comm), view_of(send, "send"), recv(), stream,
                                    options_of(path)),
           path_taken);
  });
}
}  // namespace

extern "C" {

symmcomm_status_t symmcomm_reduce_scatter_nvfp4_fp32(symmcomm_comm_t comm,
                                                     const symmcomm_nvfp4_t* send, float* recv,
                                                     size_t recv_count, symmcomm_path_t path,
                                                     cudaStream_t stream, int* path_taken) {
  return reduce_scatter_c(
      comm, send,
      [&] {
        return symmcomm::Fp32Span{recv, recv_count};
      },
      path, stream, path_taken);
}

symmcomm_status_t symmcomm_reduce_scatter_fp8_fp32(symmcomm_comm_t comm, const symmcomm_fp8_t* send,
                                                   float* recv, size_t recv_count,
                                                   symmcomm_path_t path, cudaStream_t stream,
                                                   int* path_taken) {
  return reduce_scatter_c(
      comm, send,
      [&] {
        return symmcomm::Fp32Span{recv, recv_count};
      },
      path, stream, path_taken);
}

symmcomm_status_t symmcomm_reduce_scatter_nvfp4_nvfp4(symmcomm_comm_t comm,
                                                      const symmcomm_nvfp4_t* send,
                                                      const symmcomm_nvfp4_t* recv,
                                                      symmcomm_path_t path, cudaStream_t stream,
                                                      int* path_taken) {
  return reduce_scatter_c(
      comm, send, [&] { return view_of(recv, "recv"); }, path, stream, path_taken);
}

symmcomm_status_t symmcomm_reduce_scatter_fp8_fp8(symmcomm_comm_t comm, const symmcomm_fp8_t* send,
                                                  const symmcomm_fp8_t* recv, symmcomm_path_t path,
                                                  cudaStream_t stream, int* path_taken) {
  return reduce_scatter_c(
      comm, send, [&] { return view_of(recv, "recv"); }, path, stream, path_taken);
}

symmcomm_status_t symmcomm_quantize_all_gather_nvfp4(symmcomm_comm_t comm, const void* input_bf16,
                                                     size_t count, const symmcomm_nvfp4_t* recv,
                                                     const float* scale, symmcomm_path_t path,
                                                     cudaStream_t stream, int* path_taken) {
  return quantize_all_gather_c(comm, input_bf16, count, recv, scale, path, stream, path_taken);
}

symmcomm_status_t symmcomm_quantize_all_gather_fp8(symmcomm_comm_t comm, const void* input_bf16,
                                                   size_t count, const symmcomm_fp8_t* recv,
                                                   const float* scale, symmcomm_path_t path,
                                                   cudaStream_t stream, int* path_taken) {
  return quantize_all_gather_c(comm, input_bf16, count, recv, scale, path, stream, path_taken);
}

symmcomm_status_t symmcomm_all_gather_fp8(symmcomm_comm_t comm, const symmcomm_fp8_t* send,
                                          const symmcomm_fp8_t* recv, symmcomm_path_t path,
                                          cudaStream_t stream, int* path_taken) {
  return guarded([&] {
    report(symmcomm::all_gather(comm_of(comm), view_of(send, "send"), view_of(recv, "recv"), stream,
                                options_of(path)),
           path_taken);
  });
}

symmcomm_status_t symmcomm_all_gather_nvfp4(symmcomm_comm_t comm, const symmcomm_nvfp4_t* send,
                                            const symmcomm_nvfp4_t* recv, symmcomm_path_t path,
                                            cudaStream_t stream, int* path_taken) {
  return guarded([&] {
    report(symmcomm::all_gather(comm_of(comm), view_of(send, "send"), view_of(recv, "recv"), stream,
                                options_of(path)),
           path_taken);
  });
}

symmcomm_status_t symmcomm_all_gatherv_bf16(symmcomm_comm_t comm, const void* send, void* recv,
                                            const size_t* counts, symmcomm_path_t path,
                                            cudaStream_t stream, int* path_taken) {
  return guarded([&] {
    auto const& c = comm_of(comm);
    std::vector<std::size_t> const n = counts_of(c, counts);
    std::size_t const total = std::accumulate(n.begin(), n.end(), std::size_t{0});
    report(symmcomm::all_gatherv(
               c, symmcomm::Bf16Span{bf16_ptr(send), n[static_cast<size_t>(c.rank())]},
               symmcomm::Bf16Span{bf16_ptr(recv), total}, n, stream, options_of(path)),
           path_taken);
  });
}

symmcomm_status_t symmcomm_all_gatherv_fp8(symmcomm_comm_t comm, const symmcomm_fp8_t* send,
                                           const symmcomm_fp8_t* recv, const size_t* counts,
                                           symmcomm_path_t path, cudaStream_t stream,
                                           int* path_taken) {
  return all_gatherv_c(comm, send, recv, counts, path, stream, path_taken);
}

symmcomm_status_t symmcomm_all_gatherv_nvfp4(symmcomm_comm_t comm, const symmcomm_nvfp4_t* send,
                                             const symmcomm_nvfp4_t* recv, const size_t* counts,
                                             symmcomm_path_t path, cudaStream_t stream,
                                             int* path_taken) {
  return all_gatherv_c(comm, send, recv, counts, path, stream, path_taken);
}

symmcomm_status_t symmcomm_all_gather_nvfp4_swizzled(symmcomm_comm_t comm,
                                                     const symmcomm_nvfp4_t* send,
                                                     const symmcomm_nvfp4_t* recv,
                                                     size_t row_elements, symmcomm_path_t path,
                                                     cudaStream_t stream, int* path_taken) {
  return guarded([&] {
    report(symmcomm::all_gather(comm_of(comm), view_of(send, "send"), view_of(recv, "recv"), stream,
                                swizzled_options(path, row_elements)),
           path_taken);
  });
}

symmcomm_status_t symmcomm_all_gatherv_nvfp4_swizzled(symmcomm_comm_t comm,
                                                      const symmcomm_nvfp4_t* send,
                                                      const symmcomm_nvfp4_t* recv,
                                                      const size_t* counts, size_t row_elements,
                                                      symmcomm_path_t path, cudaStream_t stream,
                                                      int* path_taken) {
  return guarded([&] {
    auto const& c = comm_of(comm);
    report(
        symmcomm::all_gatherv(c, view_of(send, "send"), view_of(recv, "recv"), counts_of(c, counts),
                              stream, swizzled_options(path, row_elements)),
        path_taken);
  });
}

symmcomm_status_t symmcomm_quantize_all_gather_nvfp4_swizzled(
    symmcomm_comm_t comm, const void* input_bf16, size_t count, const symmcomm_nvfp4_t* recv,
    const float* scale, size_t row_elements, symmcomm_path_t path, cudaStream_t stream,
    int* path_taken) {
  return guarded([&] {
    symmcomm::ConstBf16Span const input{static_cast<const symmcomm::bf16*>(input_bf16), count};
    report(symmcomm::quantize_all_gather(comm_of(comm), input, view_of(recv, "recv"), scale, stream,
                                         swizzled_options(path, row_elements)),
           path_taken);
  });
}

symmcomm_status_t symmcomm_reduce_scatter_bf16(symmcomm_comm_t comm, const void* send, void* recv,
                                               size_t recv_count, symmcomm_path_t path,
                                               cudaStream_t stream, int* path_taken) {
  return guarded([&] {
    auto const& c = comm_of(comm);
    report(symmcomm::reduce_scatter(
               c, symmcomm::Bf16Span{bf16_ptr(send), recv_count * static_cast<size_t>(c.size())},
               symmcomm::Bf16Span{bf16_ptr(recv), recv_count}, stream, options_of(path)),
           path_taken);
  });
}

symmcomm_status_t symmcomm_reduce_scatter_nvfp4_bf16(symmcomm_comm_t comm,
                                                     const symmcomm_nvfp4_t* send, void* recv_bf16,
                                                     size_t recv_count, symmcomm_path_t path,
                                                     cudaStream_t stream, int* path_taken) {
  return guarded([&] {
    report(symmcomm::reduce_scatter(comm_of(comm), view_of(send, "send"),
                                    symmcomm::Bf16Span{bf16_ptr(recv_bf16), recv_count}, stream,
                                    options_of(path)),
           path_taken);
  });
}

symmcomm_status_t symmcomm_reduce_scatter_fp8_bf16(symmcomm_comm_t comm, const symmcomm_fp8_t* send,
                                                   void* recv_bf16, size_t recv_count,
                                                   symmcomm_path_t path, cudaStream_t stream,
                                                   int* path_taken) {
  return guarded([&] {
    report(symmcomm::reduce_scatter(comm_of(comm), view_of(send, "send"),
                                    symmcomm::Bf16Span{bf16_ptr(recv_bf16), recv_count}, stream,
                                    options_of(path)),
           path_taken);
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
