#pragma once
// Private: what every C ABI entry point shares (c_api.cpp, c_api_collectives.cpp): the handle
// types, the thread-local error and plan texts, the exception-to-status translation and the
// conversions of C arguments to symmcomm's types (each checked, naming the argument).

#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "symmcomm/c_api.h"
#include "symmcomm/collectives/options.hpp"
#include "symmcomm/comm/communicator.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/views.hpp"
#include "symmcomm/memory/symm_allocator.hpp"
#include "symmcomm/memory/verify.hpp"  // SymmetryError

struct symmcomm_comm_s {
  symmcomm::Communicator comm;
};
struct symmcomm_pool_s {
  std::unique_ptr<symmcomm::SymmAllocator> pool;
  int device = 0;
};

namespace symmcomm::c_api {

/// The calling thread's last failure text and last plan reason (symmcomm_last_error,
/// symmcomm_last_plan_reason).
inline thread_local std::string last_error;
inline thread_local std::string last_plan_reason;

inline symmcomm_status_t fail(symmcomm_status_t status, const std::string& text) {
  last_error = text;
  return status;
}

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

inline const symmcomm::Communicator& comm_of(symmcomm_comm_t c) {
  SYMMCOMM_EXPECTS(c != nullptr && c->comm, "comm is NULL or released");
  return c->comm;
}

inline symmcomm::Options options_of(symmcomm_path_t path_arg) {
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
inline symmcomm::Options swizzled_options(symmcomm_path_t path, size_t row_elements) {
  symmcomm::Options o = options_of(path);
  o.scale_layout = symmcomm::ScaleLayout::Swizzled128x4;
  o.row_elements = row_elements;
  return o;
}

inline void report(const symmcomm::Plan& plan, int* path_taken) {
  if (path_taken != nullptr) *path_taken = static_cast<int>(plan.path);
  last_plan_reason = plan.reason();
}

inline symmcomm::Nvfp4View view_of(const symmcomm_nvfp4_t* v, const char* name) {
  auto const& t = deref(v, name);
  return symmcomm::Nvfp4View{t.data, t.block_scales, t.global_scale, t.count};
}

inline symmcomm::Fp8View view_of(const symmcomm_fp8_t* v, const char* name) {
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
inline std::vector<std::size_t> counts_of(const symmcomm::Communicator& c, const size_t* counts) {
  SYMMCOMM_EXPECTS(counts != nullptr, "counts is NULL");
  return std::vector<std::size_t>(counts, counts + c.size());
}

inline symmcomm::bf16* bf16_ptr(const void* p) {
  return static_cast<symmcomm::bf16*>(const_cast<void*>(p));
}

}  // namespace symmcomm::c_api
