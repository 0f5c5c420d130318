#include "symmcomm/comm/communicator.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "comm_state.hpp"
#include "core/cuda_utils.hpp"
#include "core/kernel_preload.hpp"
#include "dev_comm.hpp"
#include "gpu_share.hpp"
#include "launch_order.hpp"
#include "symmcomm/comm/wait.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/logging.hpp"
#include "wait_internal.hpp"

namespace symmcomm {

namespace detail {

const char* intern(const std::string& text) {
  static std::mutex mutex;
  static std::set<std::string> texts;  // few distinct texts: capability reasons
  std::lock_guard lock(mutex);
  return texts.insert(text).first->c_str();
}

namespace {
std::atomic<std::uint64_t> next_comm_id{1};

// Agrees caps.ranks_per_gpu, caps.lsa_sm_share and caps.lsa_gpu_sms over the communicator
// (collective: one small all-gather on a private stream). The LSA kernels' grids follow from
// them, so they must be the same on every rank; no rank-local device property may enter a grid
// directly. Returns the layers' switch bits set on every rank (layer_switches), which the
// same all-gather carries.
std::uint32_t agree_gpu_share(CommState& state) {
  GpuEntry mine;
  mine.layer_switches = layer_switches();
  SYMMCOMM_CUDA_TRY(
      cudaDeviceGetAttribute(&mine.sms, cudaDevAttrMultiProcessorCount, state.device));
  cudaDeviceProp prop{};
  SYMMCOMM_CUDA_TRY(cudaGetDeviceProperties(&prop, state.device));
  static_assert(sizeof(prop.uuid.bytes) == sizeof(mine.uuid));
  std::memcpy(mine.uuid, prop.uuid.bytes, sizeof(mine.uuid));
  mine.process = process_nonce();
  auto const n = static_cast<std::size_t>(state.size);
  std::vector<GpuEntry> all(n);
  void* device_entries = nullptr;
  cudaStream_t stream = nullptr;
  SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  try {
    SYMMCOMM_CUDA_TRY(cudaMalloc(&device_entries, n * sizeof(GpuEntry)));
    auto* mine_slot = static_cast<char*>(device_entries) + sizeof(GpuEntry) * state.rank;
    SYMMCOMM_CUDA_TRY(
        cudaMemcpyAsync(mine_slot, &mine, sizeof(mine), cudaMemcpyHostToDevice, stream));
    ncclResult_t r =
        ncclAllGather(mine_slot, device_entries, sizeof(GpuEntry), ncclUint8, state.comm, stream);
    if (r == ncclInProgress) r = wait_nonblocking(state, "probing the ranks' GPUs");
    SYMMCOMM_NCCL_TRY(r);
    copy_to_host_after(state, all.data(), device_entries, n * sizeof(GpuEntry), stream,
                       default_wait_timeout(), "probing the ranks' GPUs");
  } catch (...) {
    SYMMCOMM_CUDA_LOG_ON_ERROR(cudaFree(device_entries));
    SYMMCOMM_CUDA_LOG_ON_ERROR(cudaStreamDestroy(stream));
    throw;
  }
  SYMMCOMM_CUDA_LOG_ON_ERROR(cudaFree(device_entries));
  SYMMCOMM_CUDA_LOG_ON_ERROR(cudaStreamDestroy(stream));
  GpuShare const share = share_of(all);
  state.caps.ranks_per_gpu = share.ranks_per_gpu;
  state.caps.lsa_sm_share = share.sm_share;
  state.caps.lsa_gpu_sms = share.gpu_sms;
  // Every rank saw the same entries: all or none take the smaller grids (core/launch_share.hpp).
  state.lsa_other_processes = share.other_processes;
  if (share.other_processes) {
    SYMMCOMM_LOG_INFO("communicator " << state.id << " (rank " << state.rank << "/" << state.size
                                      << "): ranks in several processes share a GPU; symmcomm's "
                                         "LSA kernels leave half of its SMs free of their CTAs");
  }
  return share.layer_switches;
}

void probe(CommState& state) {
  state.caps.probed = true;
  std::string reason;
  DeviceGuard guard(state.device);
  NcclVersion const built = nccl_build_version();
  if (!nccl_device_api_compatible(state.caps.runtime_version, built)) {
    // The device API's structs (ncclDevCommRequirements, ncclDevComm) are unversioned in 2.28
    // and only forward-compatible from 2.29.2: handing one version's layout to an NCCL that
    // cannot read it reads garbage. Seen with PyTorch's own NCCL loaded before symmcomm's.
    std::ostringstream os;
    os << "the loaded NCCL " << state.caps.runtime_version.major << "."
       << state.caps.runtime_version.minor << "." << state.caps.runtime_version.patch
       << " cannot take the device-API structs of the headers symmcomm was built with ("
       << built.major << "." << built.minor << "." << built.patch
       << "; needs the same 2.28 version, or from 2.29.2 a loaded NCCL at least as new): the "
          "device API was not probed";
    state.caps.symmetric_memory = false;
    state.caps.lsa_team_size = 1;
    state.caps.reason = os.str();
    state.caps.reason_text = intern(state.caps.reason);
    SYMMCOMM_LOG_WARN("communicator " << state.id << ": " << state.caps.reason);
    return;
  }
  // The GPUs' SMs first: the device communicator reserves LSA barriers for the largest grid,
  // which scales with them (every rank makes both calls, in this order).
  std::uint32_t const agreed = agree_gpu_share(state);
  state.caps.symmetric_memory = create_dev_comm(state, reason);
  state.caps.reason = reason;
  state.caps.reason_text = intern(state.caps.reason);
  if (!state.caps.symmetric_memory) {
    state.caps.lsa_team_size = 1;
    state.caps.ranks_per_gpu = 1;
    state.caps.lsa_sm_share = 0;
    state.caps.lsa_gpu_sms = 0;
    state.lsa_other_processes = false;
    SYMMCOMM_LOG_INFO("communicator " << state.id << " (rank " << state.rank << "/" << state.size
                                      << "): no symmetric memory support: " << reason);
  } else {
    SYMMCOMM_LOG_INFO("communicator "
                      << state.id << " (rank " << state.rank << "/" << state.size
                      << "): symmetric memory, LSA team of " << state.caps.lsa_team_size << ", "
                      << state.caps.ranks_per_gpu << " rank(s) per GPU, " << state.caps.lsa_sm_share
                      << " SMs per rank");
  }
  // Every rank reaches this, whether or not the device communicator was made here: the layers'
  // collective steps (their windows) happen in the same order everywhere.
  state.layers->on_probed(state, agreed);
}
}  // namespace

}  // namespace detail

// CommState is declared (opaque) in symmcomm, defined in comm/comm_state.hpp; its members use
// the library's detail helpers.
CommState::CommState(ncclComm_t c, bool own) : comm(c), owned(own) {
  using namespace detail;
  SYMMCOMM_EXPECTS(c != nullptr, "comm is null");
  SYMMCOMM_NCCL_TRY(ncclCommUserRank(c, &rank));
  SYMMCOMM_NCCL_TRY(ncclCommCount(c, &size));
  SYMMCOMM_NCCL_TRY(ncclCommCuDevice(c, &device));
  // Before any collective of ours can wait on a peer: a kernel's first, lazy load may wait for
  // the whole device (core/kernel_preload.hpp).
  preload_kernels(device);
  abort_word = take_abort_word();
  id = next_comm_id.fetch_add(1);
  caps.runtime_version = nccl_runtime_version();
  caps.reason = "capabilities not probed (wrapped with Probe::No)";
  caps.reason_text = intern(caps.reason);
  layers = make_layer_state(device);
}

CommState::~CommState() {
  using namespace detail;
  if (!live_windows.empty()) {
    SYMMCOMM_LOG_WARN("communicator " << id << " torn down with " << live_windows.size()
                                      << " window(s) still registered");
  }
  try {
    DeviceGuard guard(device);
    int const graphs = live_graphs->load(std::memory_order_acquire);
    bool const aborted_now = aborted.load(std::memory_order_acquire);
    if (graphs > 0 && !aborted_now) {
      // ncclCommDestroy would wait for those graphs forever (NCCL keeps a communicator until
      // every graph that captured its work is destroyed), and a replay would write into the
      // workspace: leave both allocated, so that the graphs stay valid, instead of hanging.
      SYMMCOMM_LOG_WARN("communicator "
                        << id << " (rank " << rank << "/" << size << ") released while " << graphs
                        << " CUDA graph(s) that captured its collectives still exist: "
                        << (owned ? "NCCL's destroy would wait for them without end, so the "
                                    "NCCL communicator and symmcomm's scratch are left "
                                    "allocated (leaked)"
                                  : "symmcomm's scratch is left allocated (leaked)")
                        << ". Destroy the graphs first (e.g. `del graph` for a "
                           "torch.cuda.CUDAGraph), then release the communicator");
      forget_dev_comm(*this);
      // Deliberately leaked with the rest: a replay would still use the layers' windows.
      static_cast<void>(new std::shared_ptr<LayerState>(std::move(layers)));
      return;
    }
    if (aborted_now) {
      forget_dev_comm(*this);  // ncclCommAbort freed NCCL's side already
      layers->release_windows(*this, false);
    } else if (detached.load(std::memory_order_acquire)) {
      // The engine's communicator may be destroyed already: no NCCL call on it (NCCL frees the
      // device communicator with its communicator).
      forget_dev_comm(*this);
      layers->release_windows(*this, false);
    } else if (layers->holds_peer_memory() && !wait_last_use(*this, "communicator teardown")) {
      // A kernel may still write peers' windows or read this rank's: keep them (leaked).
      dev_comm.reset();
      if (owned) SYMMCOMM_NCCL_LOG_ON_ERROR(ncclCommDestroy(comm));
    } else {
      // An owned communicator's destroy releases the layers' windows with the others it holds
      // (no collective deregistration, which ranks torn down one after another from one thread
      // would wait on); a borrowed one lives on and gets the windows back now.
      if (!owned) layers->release_windows(*this, true);
      dev_comm.reset();
      if (owned) SYMMCOMM_NCCL_LOG_ON_ERROR(ncclCommDestroy(comm));
      layers->release_windows(*this, false);
    }
    layers.reset();  // what needs no NCCL call (workspaces), after the windows
  } catch (const std::exception& e) {
    SYMMCOMM_LOG_WARN("tearing down communicator " << id << ": " << e.what());
  }
}

void CommState::check_usable(const char* what) const {
  using namespace detail;
  SYMMCOMM_EXPECTS(!aborted.load(std::memory_order_acquire),
                   what << ": its communicator (id " << id << ") was aborted");
  SYMMCOMM_EXPECTS(!detached.load(std::memory_order_acquire),
                   what << ": its communicator (id " << id
                        << ", borrowed) was released while the buffer still lived");
}

Communicator Communicator::own(ncclComm_t comm, Probe probe) {
  SYMMCOMM_EXPECTS(comm != nullptr,
                   "Communicator::own: comm is null (pass an initialised "
                   "ncclComm_t, e.g. from ncclCommInitRank)");
  Communicator c(std::make_shared<detail::CommState>(comm, true));
  if (probe == Probe::Yes) detail::probe(*c.state_);
  return c;
}

Communicator Communicator::borrow(ncclComm_t comm, Probe probe) {
  SYMMCOMM_EXPECTS(comm != nullptr,
                   "Communicator::borrow: comm is null (pass the engine's "
                   "initialised ncclComm_t)");
  Communicator c(std::make_shared<detail::CommState>(comm, false));
  if (probe == Probe::Yes) detail::probe(*c.state_);
  return c;
}

ncclComm_t Communicator::get() const noexcept {
  return state_ ? state_->comm : nullptr;
}
int Communicator::rank() const noexcept {
  return state_ ? state_->rank : 0;
}
int Communicator::size() const noexcept {
  return state_ ? state_->size : 0;
}
int Communicator::device() const noexcept {
  return state_ ? state_->device : -1;
}
std::uint64_t Communicator::id() const noexcept {
  return state_ ? state_->id : 0;
}

Communicator& Communicator::operator=(Communicator&& other) noexcept {
  if (this != &other) {
    release();
    state_ = std::move(other.state_);
  }
  return *this;
}

ncclResult_t Communicator::async_error() const {
  SYMMCOMM_EXPECTS(state_, "async_error: the communicator is empty");
  if (state_->aborted.load(std::memory_order_acquire)) return ncclInvalidUsage;
  ncclResult_t async = ncclSuccess;
  SYMMCOMM_NCCL_TRY(ncclCommGetAsyncError(state_->comm, &async));
  return async;
}

void Communicator::check_async_error() const {
  SYMMCOMM_EXPECTS(state_, "check_async_error: the communicator is empty");
  detail::check_async(*state_, "check_async_error");
}

void Communicator::abort() {
  SYMMCOMM_EXPECTS(state_, "abort: the communicator is empty");
  if (state_->aborted.exchange(true, std::memory_order_acq_rel)) return;
  // First symmcomm's own word, so that its kernels waiting for peers leave whatever NCCL's
  // abort does with them.
  detail::raise_abort(state_->abort_word);
  detail::DeviceGuard guard(state_->device);
  SYMMCOMM_NCCL_LOG_ON_ERROR(ncclCommAbort(state_->comm));
  SYMMCOMM_LOG_WARN("communicator " << state_->id << " (rank " << state_->rank << "/"
                                    << state_->size << ") aborted");
}

Communicator::~Communicator() {
  release();
}

void Communicator::release() noexcept {
  if (!state_) return;
  if (!state_->owned && state_.use_count() > 1) {
    // Buffers still hold the state; the engine may destroy its ncclComm_t after this point.
    state_->detached.store(true, std::memory_order_release);
    SYMMCOMM_LOG_WARN("borrowed communicator " << state_->id
                                               << " released while symmetric buffers or pools "
                                                  "of it still live: they will refuse use and "
                                                  "skip deregistration");
  } else if (state_->owned && state_.use_count() > 1) {
    SYMMCOMM_LOG_INFO("communicator " << state_->id
                                      << " released while buffers of it live: NCCL teardown "
                                         "waits for the last of them");
  }
  state_.reset();
}

const Capabilities& Communicator::capabilities() const {
  SYMMCOMM_EXPECTS(state_ != nullptr, "capabilities() of an empty Communicator");
  return state_->caps;
}

const CommStats& Communicator::stats() const {
  SYMMCOMM_EXPECTS(state_ != nullptr, "stats() of an empty Communicator");
  return state_->stats;
}

void probe_capabilities(const std::vector<Communicator*>& comms) {
  std::vector<std::exception_ptr> errors(comms.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < comms.size(); ++i) {
    SYMMCOMM_EXPECTS(comms[i] != nullptr && *comms[i], "comms[" << i << "] is empty");
    threads.emplace_back([&, i] {
      try {
        detail::probe(*comms[i]->state_);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

std::vector<Communicator> create_local_communicators(std::vector<int> devices,
                                                     ncclConfig_t* config) {
  int visible = 0;
  cudaError_t const e = cudaGetDeviceCount(&visible);
  SYMMCOMM_EXPECTS(e == cudaSuccess && visible > 0,
                   "create_local_communicators: no CUDA device visible ("
                       << (e == cudaSuccess ? "0 devices" : cudaGetErrorString(e)) << ")");
  if (devices.empty()) {
    for (int d = 0; d < visible; ++d) devices.push_back(d);
  }
  for (std::size_t i = 0; i < devices.size(); ++i) {
    SYMMCOMM_EXPECTS(devices[i] >= 0 && devices[i] < visible,
                     "devices[" << i << "] = " << devices[i] << " is not a visible device (0.."
                                << visible - 1 << ")");
    for (std::size_t j = 0; j < i; ++j) {
      SYMMCOMM_EXPECTS(devices[i] != devices[j],
                       "devices[" << i << "] = " << devices[i]
                                  << " repeats a device: NCCL refuses two ranks on one GPU");
    }
  }
  check_nccl_runtime();
  int const n = static_cast<int>(devices.size());
  ncclUniqueId id;
  SYMMCOMM_NCCL_TRY(ncclGetUniqueId(&id));
  std::vector<ncclComm_t> raw(devices.size(), nullptr);
  {
    detail::DeviceGuard guard(devices[0]);
    SYMMCOMM_NCCL_TRY(ncclGroupStart());
    for (int r = 0; r < n; ++r) {
      SYMMCOMM_CUDA_TRY(cudaSetDevice(devices[r]));
      ncclResult_t const res = config != nullptr ? ncclCommInitRankConfig(&raw[r], n, id, r, config)
                                                 : ncclCommInitRank(&raw[r], n, id, r);
      if (res != ncclSuccess) {
        (void)ncclGroupEnd();
        SYMMCOMM_NCCL_TRY(res);
      }
    }
    SYMMCOMM_NCCL_TRY(ncclGroupEnd());
  }
  std::vector<Communicator> comms;
  comms.reserve(devices.size());
  for (auto c : raw) comms.push_back(Communicator::own(c, Communicator::Probe::No));
  std::vector<Communicator*> pointers;
  pointers.reserve(comms.size());
  for (auto& c : comms) pointers.push_back(&c);
  probe_capabilities(pointers);
  return comms;
}

}  // namespace symmcomm
