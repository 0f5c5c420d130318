#pragma once
// Private: what every C ABI entry point shares (c_api.cpp, c_api_collectives.cpp): the handle
// types, the thread-local error and plan texts, the exception-to-status translation and the
// conversions of C arguments to symmcomm's types (each checked, naming the argument).

#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "collectives/call.hpp"
#include "symmcomm/c_api.h"
#include "symmcomm/collectives/options.hpp"
#include "symmcomm/comm/communicator.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/traits.hpp"
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

/// The calling thread's last failure text (symmcomm_last_error).
inline thread_local std::string last_error;

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

// An enumeration value as the int a C caller stored (loading an out-of-range value as the enum
// is undefined), checked against [0, last].
template <class E>
int enum_value(const E& e, int last, const char* name, const char* type) {
  int v = 0;
  static_assert(sizeof(E) == sizeof(v));
  std::memcpy(&v, &e, sizeof v);
  SYMMCOMM_EXPECTS(v >= 0 && v <= last, name << " " << v << " is not a " << type);
  return v;
}

// symmcomm::Options from a size-versioned symmcomm_options_t (NULL: defaults).
symmcomm::Options options_of(const symmcomm_options_t* options);

// The C++ DeviceCounts of a device-count call (LogicError for NULL).
symmcomm::DeviceCounts device_counts_of(const symmcomm_device_counts_t* counts);

// Checks a plan out-parameter before anything runs (so a bad one never leaves a call enqueued
// with an error returned); NULL is allowed.
void check_plan_out(const symmcomm_plan_t* plan);
// Writes `plan` (checked by check_plan_out) when it is not NULL.
void report(const symmcomm::Plan& plan, symmcomm_plan_t* out);

namespace detail = symmcomm::detail;

// A tensor argument as the library's TensorRef, its dtype and layout checked and the fields its
// dtype does not use refused (each error names the argument: "send.scales must be NULL for
// bf16").
detail::TensorRef tensor_of(const symmcomm_tensor_t* t, const char* name);

}  // namespace symmcomm::c_api
