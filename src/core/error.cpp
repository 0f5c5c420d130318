#include "symmcomm/error.hpp"

#include "symmcomm/logging.hpp"

namespace symmcomm::error_support {
namespace {
std::string where(const char* file, int line) {
  std::string f = file;
  auto const slash = f.find_last_of('/');
  if (slash != std::string::npos) f = f.substr(slash + 1);
  return " [" + f + ":" + std::to_string(line) + "]";
}
}  // namespace

void throw_cuda_error(cudaError_t code, const char* expr, const char* file, int line) {
  (void)cudaGetLastError();  // clear a sticky-free error so later calls are not blamed for it
  std::string const msg = std::string("symmcomm: CUDA error ") + cudaGetErrorName(code) + " (" +
                          cudaGetErrorString(code) + ") in " + expr + where(file, line);
  if (code == cudaErrorMemoryAllocation) throw OutOfMemory(msg);
  throw CudaError(code, msg);
}

void throw_nccl_error(ncclResult_t code, const char* expr, const char* file, int line) {
  const char* last = ncclGetLastError(nullptr);
  std::string msg = std::string("symmcomm: NCCL error ") + std::to_string(static_cast<int>(code)) +
                    " (" + ncclGetErrorString(code) + ") in " + expr;
  if (last != nullptr && *last != '\0') msg += ": " + std::string(last);
  msg += where(file, line);
  throw NcclError(code, msg);
}

void throw_logic_error(const std::string& message, const char* file, int line) {
  throw LogicError("symmcomm: " + message + where(file, line));
}

void log_cuda_failure(cudaError_t code, const char* expr, const char* file, int line) noexcept {
  SYMMCOMM_LOG_WARN("CUDA error " << cudaGetErrorName(code) << " in " << expr << where(file, line)
                                  << " (ignored: called from a noexcept path)");
}

void log_nccl_failure(ncclResult_t code, const char* expr, const char* file, int line) noexcept {
  SYMMCOMM_LOG_WARN("NCCL error " << ncclGetErrorString(code) << " in " << expr << where(file, line)
                                  << " (ignored: called from a noexcept path)");
}

}  // namespace symmcomm::error_support
