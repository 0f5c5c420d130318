#include "symmcomm/runtime.hpp"

#include <nccl.h>

#include "symmcomm/error.hpp"
#include "symmcomm/logging.hpp"

namespace symmcomm {

NcclVersion nccl_build_version() noexcept {
  return NcclVersion::from_code(NCCL_VERSION_CODE);
}

NcclVersion nccl_runtime_version() {
  int code = 0;
  SYMMCOMM_NCCL_TRY(ncclGetVersion(&code));
  return NcclVersion::from_code(code);
}

void check_nccl_runtime() {
  NcclVersion const loaded = nccl_runtime_version();
  NcclVersion const built = nccl_build_version();
  SYMMCOMM_EXPECTS(loaded >= kMinNcclVersion,
                   "the loaded NCCL is " << loaded.major << "." << loaded.minor << "."
                                         << loaded.patch
                                         << "; symmcomm needs >= 2.27 (symmetric windows)");
  SYMMCOMM_EXPECTS(loaded.major == built.major,
                   "the loaded NCCL " << loaded.major << "." << loaded.minor
                                      << " has another major version than the headers symmcomm "
                                         "was built with ("
                                      << built.major << "." << built.minor << ")");
  if (!(loaded == built)) {
    SYMMCOMM_LOG_INFO("loaded NCCL " << loaded.major << "." << loaded.minor << "." << loaded.patch
                                     << " differs from the build's " << built.major << "."
                                     << built.minor << "." << built.patch);
  }
}

}  // namespace symmcomm
