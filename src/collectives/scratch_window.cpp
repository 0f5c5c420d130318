// The collectives' part of a communicator's creation and teardown (comm/layer_state.hpp): their
// switches, agreed over the ranks, and the scratch window of the kernels that meet their peers
// through flags in the data (kernels/lsa_ll.hpp).

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "comm/dev_comm.hpp"
#include "comm/wait_internal.hpp"
#include "core/cuda_utils.hpp"
#include "kernels/lsa_ll.hpp"
#include "scratch.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/limits.hpp"
#include "symmcomm/logging.hpp"

namespace symmcomm::detail {

namespace {
bool switched_off(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && std::strcmp(value, "0") == 0;
}

// Makes the scratch window (collective: every rank of a communicator whose device communicator
// spans it calls this). Throws where ncclMemAlloc or the registration fails.
ScratchWindow make_scratch_window(CommState& state) {
  std::size_t const bytes = scratch_window_bytes(state.size);
  void* ptr = nullptr;
  ncclResult_t r = ncclMemAlloc(&ptr, bytes);
  if (r != ncclSuccess) {
    // Every rank calls the registration below: one that cannot would leave the others waiting.
    SYMMCOMM_FAIL("communicator " << state.id << ": ncclMemAlloc of " << bytes
                                  << " bytes for the scratch window failed ("
                                  << ncclGetErrorString(r)
                                  << "); SYMMCOMM_LSA_LL=0 goes without it");
  }
  std::uint32_t* calls = nullptr;
  cudaStream_t stream = nullptr;
  try {
    // Zeroed before any peer can write into it (a zero flag never matches a call's).
    SYMMCOMM_CUDA_TRY(cudaMalloc(&calls, 2 * sizeof(std::uint32_t)));
    SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    SYMMCOMM_CUDA_TRY(cudaMemsetAsync(ptr, 0, bytes, stream));
    SYMMCOMM_CUDA_TRY(cudaMemsetAsync(calls, 0, 2 * sizeof(std::uint32_t), stream));
    SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(stream));
    SYMMCOMM_CUDA_TRY(cudaStreamDestroy(stream));
    stream = nullptr;
    ncclWindow_t window = nullptr;
    r = ncclCommWindowRegister(state.comm, ptr, bytes, &window, NCCL_WIN_COLL_SYMMETRIC);
    if (r == ncclInProgress) r = wait_nonblocking(state, "ncclCommWindowRegister (scratch)");
    if (r != ncclSuccess) {
      SYMMCOMM_FAIL("communicator " << state.id << ": "
                                    << nccl_failure(state.comm, "ncclCommWindowRegister", r)
                                    << " for the scratch window");
    }
    return ScratchWindow{ptr, window, calls};
  } catch (...) {
    if (stream != nullptr) SYMMCOMM_CUDA_LOG_ON_ERROR(cudaStreamDestroy(stream));
    if (calls != nullptr) SYMMCOMM_CUDA_LOG_ON_ERROR(cudaFree(calls));
    SYMMCOMM_NCCL_LOG_ON_ERROR(ncclMemFree(ptr));
    throw;
  }
}
}  // namespace

std::uint32_t layer_switches() noexcept {
  std::uint32_t on = 0;
  if (!switched_off("SYMMCOMM_LSA_LL")) on |= kSmallGatherSwitch;
  if (!switched_off("SYMMCOMM_LL_COUNTS")) on |= kCountsInLinesSwitch;
  return on;
}

std::shared_ptr<LayerState> make_layer_state(int device) {
  return std::make_shared<CollectiveScratch>(device);
}

void CollectiveScratch::on_probed(CommState& state, std::uint32_t agreed) {
  // The same inputs on every rank (the agreement, the device communicator's team), so every
  // rank makes the window or none does.
  bool const spans = state.caps.symmetric_memory && dev_comm_handle(state) != nullptr &&
                     state.caps.lsa_team_size == state.size && state.size <= kMaxKernelRanks;
  if (spans && (agreed & kSmallGatherSwitch) != 0) window = make_scratch_window(state);
  counts_in_lines = (agreed & kCountsInLinesSwitch) != 0;
  if ((layer_switches() & kCountsInLinesSwitch) != 0 && !counts_in_lines) {
    SYMMCOMM_LOG_WARN("communicator " << state.id << " (rank " << state.rank
                                      << "): SYMMCOMM_LL_COUNTS=0 on another rank: device counts "
                                         "stay out of the scratch lines on every rank");
  }
  if (state.caps.symmetric_memory) {
    SYMMCOMM_LOG_INFO("communicator " << state.id << " (rank " << state.rank << "/" << state.size
                                      << "): "
                                      << (window.window == nullptr ? "no scratch window"
                                          : counts_in_lines ? "scratch window, counts in its lines"
                                                            : "scratch window"));
  }
}

void CollectiveScratch::release_windows(CommState& state, bool deregister) noexcept {
  if (window.base == nullptr) return;
  if (deregister && window.window != nullptr) {
    SYMMCOMM_NCCL_LOG_ON_ERROR(ncclCommWindowDeregister(state.comm, window.window));
  }
  SYMMCOMM_NCCL_LOG_ON_ERROR(ncclMemFree(window.base));
  SYMMCOMM_CUDA_LOG_ON_ERROR(cudaFree(window.calls));
  window = ScratchWindow{};
}

}  // namespace symmcomm::detail
