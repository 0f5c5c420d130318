// The collectives' per-communicator scratch (scratch.hpp): the fallbacks' workspace and the
// plan agreement's words.

#include "scratch.hpp"

#include <algorithm>
#include <exception>

#include "core/cuda_utils.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/logging.hpp"
#include "symmcomm/runtime.hpp"

namespace symmcomm::detail {

CollectiveScratch::~CollectiveScratch() {
  try {
    DeviceGuard guard(device);
    if (workspace != nullptr) SYMMCOMM_CUDA_LOG_ON_ERROR(cudaFree(workspace));
    for (void* w : retired) SYMMCOMM_CUDA_LOG_ON_ERROR(cudaFree(w));
    if (agreement != nullptr) SYMMCOMM_CUDA_LOG_ON_ERROR(cudaFree(agreement));
  } catch (const std::exception& e) {
    SYMMCOMM_LOG_WARN("freeing a communicator's collective scratch: " << e.what());
  }
}

void* acquire_workspace(CommState& comm, const Options& options, std::size_t bytes,
                        cudaStream_t stream) {
  if (options.workspace != nullptr) {
    SYMMCOMM_EXPECTS(options.workspace_bytes >= bytes,
                     "Options::workspace_bytes " << options.workspace_bytes << " is below the "
                                                 << bytes << " bytes this call needs");
    return options.workspace;
  }
  CollectiveScratch& scratch = scratch_of(comm);
  if (scratch.workspace_bytes >= bytes) return scratch.workspace;
  SYMMCOMM_EXPECTS(!capture_in_progress(stream),
                   "this call needs " << bytes << " bytes of workspace, the communicator holds "
                                      << scratch.workspace_bytes
                                      << ", and it cannot grow during graph capture: run the call "
                                         "once before capturing, or pass Options::workspace");
  DeviceGuard guard(comm.device);
  // The outgrown workspace is kept until the communicator goes, not freed here: cudaFree
  // synchronises the whole device, and a peer rank sharing it (threads or processes driving
  // several ranks of one GPU) may have launched a collective that waits for this rank's next
  // launch, which would then never come. Earlier calls, and graphs that captured it, may also
  // still read it. Growth at least doubles, so the kept ones total less than the live one.
  if (scratch.workspace != nullptr) {
    bytes = std::max(bytes, 2 * scratch.workspace_bytes);
    scratch.retired.push_back(scratch.workspace);
    scratch.workspace = nullptr;
    scratch.workspace_bytes = 0;
  }
  SYMMCOMM_CUDA_TRY(cudaMalloc(&scratch.workspace, bytes));
  scratch.workspace_bytes = bytes;
  return scratch.workspace;
}

}  // namespace symmcomm::detail
