#include "launch_order.hpp"

#include <exception>
#include <mutex>

#include "core/cuda_utils.hpp"
#include "symmcomm/comm/wait.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/logging.hpp"
#include "wait_internal.hpp"

namespace symmcomm::detail {

struct LaunchOrder {
  std::mutex mutex;
  cudaEvent_t event = nullptr;  // recorded after the last windowed work
  cudaStream_t stream = nullptr;
  unsigned long long capture_id = 0;  // of the last record; 0 = not captured
  bool recorded = false;
};

void LaunchOrderDeleter::operator()(LaunchOrder* order) const noexcept {
  if (order == nullptr) return;
  if (order->event != nullptr) SYMMCOMM_CUDA_LOG_ON_ERROR(cudaEventDestroy(order->event));
  delete order;
}

CaptureInfo capture_info(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CaptureInfo info;
  SYMMCOMM_CUDA_TRY(cudaStreamGetCaptureInfo(stream, &status, &info.id, &info.graph));
  if (status != cudaStreamCaptureStatusActive) info = CaptureInfo{};
  return info;
}

namespace {

LaunchOrder& order_of(CommState& state) {
  std::lock_guard lock(state.mutex);
  if (!state.launch_order) {
    std::unique_ptr<LaunchOrder, LaunchOrderDeleter> order(new LaunchOrder);
    DeviceGuard guard(state.device);
    SYMMCOMM_CUDA_TRY(cudaEventCreateWithFlags(&order->event, cudaEventDisableTiming));
    state.launch_order = std::move(order);
  }
  return *state.launch_order;
}
}  // namespace

void order_after_last_use(CommState& state, cudaStream_t stream) {
  LaunchOrder& order = order_of(state);
  std::lock_guard lock(order.mutex);
  if (!order.recorded || order.stream == stream) return;
  if (order.capture_id != capture_info(stream).id) return;  // nothing to link (launch_order.hpp)
  SYMMCOMM_CUDA_TRY(cudaStreamWaitEvent(stream, order.event, 0));
}

void mark_use(CommState& state, cudaStream_t stream, const CaptureInfo& capture) {
  LaunchOrder& order = order_of(state);
  std::lock_guard lock(order.mutex);
  SYMMCOMM_CUDA_TRY(cudaEventRecord(order.event, stream));
  order.stream = stream;
  order.capture_id = capture.id;
  order.recorded = true;
}

namespace {
// Runs on a CUDA-internal thread when a graph holding the count is destroyed: no CUDA call.
void release_graph_count(void* user) {
  auto* count = static_cast<std::shared_ptr<std::atomic<int>>*>(user);
  (*count)->fetch_sub(1, std::memory_order_acq_rel);
  delete count;
}
}  // namespace

void note_graph_use(CommState& state, const CaptureInfo& capture) {
  if (capture.id == 0 || capture.graph == nullptr) return;
  cudaGraph_t const graph = capture.graph;
  unsigned long long const id = capture.id;
  {
    std::lock_guard lock(state.mutex);
    if (state.last_noted_capture == id) return;  // this graph holds a count already
    state.last_noted_capture = id;
  }
  auto* count = new std::shared_ptr<std::atomic<int>>(state.live_graphs);
  cudaUserObject_t object = nullptr;
  cudaError_t e =
      cudaUserObjectCreate(&object, count, release_graph_count, 1, cudaUserObjectNoDestructorSync);
  if (e != cudaSuccess) {
    delete count;
    SYMMCOMM_CUDA_TRY(e);
  }
  (*count)->fetch_add(1, std::memory_order_acq_rel);
  // Moves our reference into the graph: CUDA calls release_graph_count when the graph (and
  // every executable instantiated from it) is destroyed.
  e = cudaGraphRetainUserObject(graph, object, 1, cudaGraphUserObjectMove);
  if (e != cudaSuccess) {
    SYMMCOMM_CUDA_LOG_ON_ERROR(cudaUserObjectRelease(object, 1));  // runs the callback
    SYMMCOMM_CUDA_TRY(e);
  }
}

bool wait_last_use(const CommState& state, const char* what) noexcept {
  try {
    LaunchOrder* order = nullptr;
    {
      std::lock_guard lock(state.mutex);
      order = state.launch_order.get();
    }
    if (order == nullptr) return true;
    std::lock_guard lock(order->mutex);
    if (!order->recorded || order->capture_id != 0) return true;
    DeviceGuard guard(state.device);
    wait_event(state, order->event, default_wait_timeout(), what);
    return true;
  } catch (const std::exception& e) {
    SYMMCOMM_LOG_WARN(what << ": " << e.what());
    return false;
  }
}

}  // namespace symmcomm::detail
