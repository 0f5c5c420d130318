#pragma once
/// @file error.hpp
/// @brief symmcomm's exception hierarchy and the checking macros used by every layer.

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <sstream>
#include <stdexcept>
#include <string>

namespace symmcomm {

/// @brief Base of every exception symmcomm throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// @brief Bad usage: an argument out of range, a precondition not met, a call in the wrong state.
class LogicError : public Error {
 public:
  using Error::Error;
};

/// @brief A CUDA runtime call failed; carries the `cudaError_t`.
class CudaError : public Error {
 public:
  /// @brief An exception for `code` whose what() is `what`.
  CudaError(cudaError_t code, const std::string& what) : Error(what), code_(code) {}
  /// @brief The CUDA error code that caused this exception.
  cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

/// @brief An NCCL call failed; carries the `ncclResult_t` and NCCL's last-error text.
class NcclError : public Error {
 public:
  /// @brief An exception for `code` whose what() is `what`.
  NcclError(ncclResult_t code, const std::string& what) : Error(what), code_(code) {}
  /// @brief The NCCL result code that caused this exception.
  ncclResult_t code() const noexcept { return code_; }

 private:
  ncclResult_t code_;
};

/// @brief A wait gave up: the work it waited for did not complete within its timeout.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

/// @brief Device memory could not be obtained (from CUDA, NCCL, or a pool that may not grow).
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

/// @brief What the SYMMCOMM_* macros below call: they throw the exception types above (or log,
/// in destructors) with the failing expression, file and line. Call the macros, not these.
namespace error_support {
/// @brief Throws CudaError for `code`, naming `expr`, `file` and `line`.
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* expr, const char* file, int line);
/// @brief Throws NcclError for `code`, naming `expr`, `file` and `line`.
[[noreturn]] void throw_nccl_error(ncclResult_t code, const char* expr, const char* file, int line);
/// @brief Throws LogicError with `message`, naming `file` and `line`.
[[noreturn]] void throw_logic_error(const std::string& message, const char* file, int line);
/// @brief Logs (never throws) a failed CUDA/NCCL call made from a destructor.
void log_cuda_failure(cudaError_t code, const char* expr, const char* file, int line) noexcept;
/// @brief The same for a failed NCCL call.
void log_nccl_failure(ncclResult_t code, const char* expr, const char* file, int line) noexcept;
}  // namespace error_support

}  // namespace symmcomm

/// @brief Throws symmcomm::LogicError with a streamed message when `cond` is false:
/// `SYMMCOMM_EXPECTS(n % 16 == 0, "count " << n << " is not a multiple of 16")`.
#define SYMMCOMM_EXPECTS(cond, msg)                                                      \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::ostringstream symmcomm_expects_os_;                                           \
      symmcomm_expects_os_ << msg; /* NOLINT(bugprone-macro-parentheses) */              \
      ::symmcomm::error_support::throw_logic_error(symmcomm_expects_os_.str(), __FILE__, \
                                                   __LINE__);                            \
    }                                                                                    \
  } while (0)

/// @brief Throws symmcomm::LogicError with a streamed message (an unconditional failure).
#define SYMMCOMM_FAIL(msg)                                                                     \
  do {                                                                                         \
    std::ostringstream symmcomm_fail_os_;                                                      \
    symmcomm_fail_os_ << msg; /* NOLINT(bugprone-macro-parentheses) */                         \
    ::symmcomm::error_support::throw_logic_error(symmcomm_fail_os_.str(), __FILE__, __LINE__); \
  } while (0)

/// @brief Checks a CUDA runtime call; throws CudaError (OutOfMemory for allocation failures).
#define SYMMCOMM_CUDA_TRY(call)                                                           \
  do {                                                                                    \
    cudaError_t const symmcomm_cuda_status_ = (call);                                     \
    if (symmcomm_cuda_status_ != cudaSuccess) {                                           \
      ::symmcomm::error_support::throw_cuda_error(symmcomm_cuda_status_, #call, __FILE__, \
                                                  __LINE__);                              \
    }                                                                                     \
  } while (0)

/// @brief Checks an NCCL call; throws NcclError (OutOfMemory for allocation failures) with
/// NCCL's own last-error text.
#define SYMMCOMM_NCCL_TRY(call)                                                            \
  do {                                                                                     \
    ncclResult_t const symmcomm_nccl_status_ = (call);                                     \
    if (symmcomm_nccl_status_ != ncclSuccess && symmcomm_nccl_status_ != ncclInProgress) { \
      ::symmcomm::error_support::throw_nccl_error(symmcomm_nccl_status_, #call, __FILE__,  \
                                                  __LINE__);                               \
    }                                                                                      \
  } while (0)

/// @brief Checks the last kernel launch (`cudaGetLastError`).
#define SYMMCOMM_CHECK_LAUNCH() SYMMCOMM_CUDA_TRY(cudaGetLastError())

/// @brief For destructors and other noexcept paths: logs a failed CUDA call instead of throwing.
#define SYMMCOMM_CUDA_LOG_ON_ERROR(call)                                                  \
  do {                                                                                    \
    cudaError_t const symmcomm_cuda_status_ = (call);                                     \
    if (symmcomm_cuda_status_ != cudaSuccess) {                                           \
      ::symmcomm::error_support::log_cuda_failure(symmcomm_cuda_status_, #call, __FILE__, \
                                                  __LINE__);                              \
    }                                                                                     \
  } while (0)

/// @brief For destructors and other noexcept paths: logs a failed NCCL call instead of throwing.
#define SYMMCOMM_NCCL_LOG_ON_ERROR(call)                                                  \
  do {                                                                                    \
    ncclResult_t const symmcomm_nccl_status_ = (call);                                    \
    if (symmcomm_nccl_status_ != ncclSuccess) {                                           \
      ::symmcomm::error_support::log_nccl_failure(symmcomm_nccl_status_, #call, __FILE__, \
                                                  __LINE__);                              \
    }                                                                                     \
  } while (0)
