// The NCCL device communicator (NCCL 2.28+ device API): created once per Communicator where
// symmetric memory is supported. Creating it is also how symmcomm learns whether NCCL supports
// symmetric memory on a communicator, since NCCL exposes no direct query.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "core/cuda_utils.hpp"
#include "dev_comm.hpp"
#include "lsa_limits.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/limits.hpp"
#include "symmcomm/logging.hpp"
#include "wait_internal.hpp"

#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
#include <nccl_device.h>
#endif

namespace symmcomm::detail {

#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
struct DevCommHolder {
  ncclComm_t comm = nullptr;
  ncclDevComm dev{};
};

namespace {
// Requirements as this NCCL's headers define them. From 2.29 the struct starts with its size,
// a magic number and the header version, which NCCL checks: a zeroed struct is refused, so
// start from NCCL's initializer. 2.28's struct has no initializer and NCCL reads every field.
ncclDevCommRequirements initial_requirements() {
#if defined(NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER)
  ncclDevCommRequirements requirements = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
#else
  ncclDevCommRequirements requirements;
  std::memset(&requirements, 0, sizeof(requirements));
#endif
  return requirements;
}

}  // namespace

bool create_dev_comm(CommState& state, std::string& reason) {
  ncclDevCommRequirements requirements = initial_requirements();
  // One barrier per CTA of the largest LSA grid (kernels/lsa.hpp), which scales with the SMs.
  requirements.lsaBarrierCount = kLsaBarriersPerSm * std::max(1, state.caps.lsa_gpu_sms);
  auto holder = std::make_unique<DevCommHolder>();
  holder->comm = state.comm;
  ncclResult_t r = ncclDevCommCreate(state.comm, &requirements, &holder->dev);
  if (r == ncclInProgress) {
    // A non-blocking communicator: NCCL completes the call in the background and writes into
    // `holder` until then, so it must live (and is not published) until NCCL is done.
    r = wait_nonblocking(state, "ncclDevCommCreate");
  }
  if (r != ncclSuccess) {
    reason = nccl_failure(state.comm, "ncclDevCommCreate", r);
    // NCCL's own verdict (its check of comm->symmetricSupport): its symmetric kernels will
    // never run on this communicator either. Other failures say nothing about that.
    state.nccl_symmetric_off =
        reason.find("does not support symmetric memory") != std::string::npos;
    return false;
  }
  state.caps.lsa_team_size = holder->dev.lsaSize;
  state.dev_comm.reset(holder.release());
  return true;
}

void DevCommDeleter::operator()(DevCommHolder* holder) const noexcept {
  if (holder == nullptr) return;
  SYMMCOMM_NCCL_LOG_ON_ERROR(ncclDevCommDestroy(holder->comm, &holder->dev));
  delete holder;
}

const void* dev_comm_handle(const CommState& state) noexcept {
  return state.dev_comm ? &state.dev_comm->dev : nullptr;
}

void forget_dev_comm(CommState& state) noexcept {
  delete state.dev_comm.release();
}
#else
struct DevCommHolder {};
bool create_dev_comm(CommState&, std::string& reason) {
  reason =
      "symmcomm was built against NCCL headers without nccl_device.h (NCCL < 2.28): "
      "symmetric support cannot be probed";
  return false;
}
void DevCommDeleter::operator()(DevCommHolder* holder) const noexcept {
  delete holder;
}
const void* dev_comm_handle(const CommState&) noexcept {
  return nullptr;
}
void forget_dev_comm(CommState& state) noexcept {
  delete state.dev_comm.release();
}
#endif

std::string nccl_failure(ncclComm_t comm, const char* call, ncclResult_t r) {
  const char* last = ncclGetLastError(comm);
  return std::string(call) + " failed (" + ncclGetErrorString(r) + ")" +
         (last != nullptr && *last != '\0' ? std::string(": ") + last : std::string());
}

const std::uint32_t* device_abort_word(const CommState& state) noexcept {
  return state.abort_word.device;
}

}  // namespace symmcomm::detail
