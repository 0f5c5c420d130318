#include "symmcomm/memory/provenance.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <sstream>
#include <vector>

#include "memory/provenance_internal.hpp"
#include "symmcomm/comm/communicator.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm {

std::string Provenance::describe(const char* name, const void* ptr, std::size_t bytes) const {
  std::ostringstream os;
  os << name << " " << ptr << " (" << bytes << " bytes) ";
  switch (status) {
    case ProvenanceStatus::Symmetric:
      os << "lies at offset " << offset << " of symmetric window " << window_base << " ("
         << window_bytes << " bytes) of communicator " << comm_id;
      break;
    case ProvenanceStatus::Null:
      os << "is a null pointer";
      break;
    case ProvenanceStatus::Empty:
      os << "is empty";
      break;
    case ProvenanceStatus::NotRegistered:
      os << "is not inside any symmetric window (plain device memory, e.g. cudaMalloc)";
      break;
    case ProvenanceStatus::OtherCommunicator:
      os << "is inside a symmetric window of another communicator (" << comm_id
         << "), not of this one";
      break;
    case ProvenanceStatus::StraddlesWindowEnd:
      os << "starts at offset " << offset << " of symmetric window " << window_base << " but the "
         << "window ends after " << window_bytes << " bytes";
      break;
  }
  return os.str();
}

namespace {
class ReadLock {
 public:
  explicit ReadLock(pthread_rwlock_t& l) : l_(l) { pthread_rwlock_rdlock(&l_); }
  ~ReadLock() { pthread_rwlock_unlock(&l_); }
  ReadLock(const ReadLock&) = delete;
  ReadLock& operator=(const ReadLock&) = delete;

 private:
  pthread_rwlock_t& l_;
};
class WriteLock {
 public:
  explicit WriteLock(pthread_rwlock_t& l) : l_(l) { pthread_rwlock_wrlock(&l_); }
  ~WriteLock() { pthread_rwlock_unlock(&l_); }
  WriteLock(const WriteLock&) = delete;
  WriteLock& operator=(const WriteLock&) = delete;

 private:
  pthread_rwlock_t& l_;
};
}  // namespace

// One communicator's windows, sorted by base address (non-overlapping).
struct CommWindows {
  std::uint64_t comm_id = 0;
  std::vector<WindowEntry> windows;
};

struct ProvenanceRegistry::State {
  State() {
    pthread_rwlockattr_t attributes;
    pthread_rwlockattr_init(&attributes);
    pthread_rwlockattr_setkind_np(&attributes, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&lock, &attributes);
    pthread_rwlockattr_destroy(&attributes);
  }
  ~State() { pthread_rwlock_destroy(&lock); }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  const std::vector<WindowEntry>* windows_of(std::uint64_t comm_id) const {
    for (const CommWindows& c : by_comm) {
      if (c.comm_id == comm_id) return &c.windows;
    }
    return nullptr;
  }
  // Writes the answer straight into `out` (no temporary: copying a freshly written record with
  // wide loads stalls on store forwarding). `mine` = windows_of(comm_id), found once per batch.
  void lookup_locked(const void* ptr, std::size_t bytes, std::uint64_t comm_id,
                     const std::vector<WindowEntry>* mine, Provenance& out) const;

  // A writer-preferring reader/writer lock: lookups (every collective call) never starve
  // registrations.
  mutable pthread_rwlock_t lock;
  // Per communicator (a handful per process: a linear scan beats hashing, whose modulo alone
  // costs more than the scan on the hot path).
  std::vector<CommWindows> by_comm;
  // Bumped by every change of the windows (under the write lock): an answer looked up at one
  // generation holds for as long as the generation stays (collectives/replay.hpp).
  std::atomic<std::uint64_t> generation{0};
};

ProvenanceRegistry::ProvenanceRegistry() : state_(std::make_unique<State>()) {}

ProvenanceRegistry::~ProvenanceRegistry() = default;

ProvenanceRegistry& ProvenanceRegistry::global() {
  static ProvenanceRegistry registry;
  return registry;
}

Provenance provenance_of(const Communicator& comm, const void* ptr, std::size_t bytes) {
  return ProvenanceRegistry::global().lookup(ptr, bytes, comm.id());
}

std::size_t registered_window_count() {
  return ProvenanceRegistry::global().size();
}

void ProvenanceRegistry::add(const WindowEntry& entry) {
  WriteLock lock(state_->lock);
  auto& by_comm = state_->by_comm;
  auto found = std::find_if(by_comm.begin(), by_comm.end(),
                            [&](const CommWindows& c) { return c.comm_id == entry.comm_id; });
  if (found == by_comm.end()) {
    by_comm.push_back(CommWindows{entry.comm_id, {}});
    found = std::prev(by_comm.end());
  }
  auto& windows = found->windows;
  auto it = std::lower_bound(windows.begin(), windows.end(), entry.base,
                             [](const WindowEntry& w, std::uintptr_t b) { return w.base < b; });
  bool const overlaps_next = it != windows.end() && it->base < entry.base + entry.bytes;
  bool const overlaps_prev =
      it != windows.begin() && std::prev(it)->base + std::prev(it)->bytes > entry.base;
  SYMMCOMM_EXPECTS(!overlaps_next && !overlaps_prev,
                   "window " << reinterpret_cast<const void*>(entry.base) << " (" << entry.bytes
                             << " bytes) overlaps a window already registered on communicator "
                             << entry.comm_id);
  windows.insert(it, entry);
  state_->generation.fetch_add(1, std::memory_order_release);
}

bool ProvenanceRegistry::overlaps(std::uint64_t comm_id, const void* base,
                                  std::size_t bytes) const {
  ReadLock lock(state_->lock);
  const std::vector<WindowEntry>* windows = state_->windows_of(comm_id);
  if (windows == nullptr || bytes == 0) return false;
  auto const b = reinterpret_cast<std::uintptr_t>(base);
  auto it = std::lower_bound(windows->begin(), windows->end(), b,
                             [](const WindowEntry& w, std::uintptr_t x) { return w.base < x; });
  bool const next = it != windows->end() && it->base < b + bytes;
  bool const prev = it != windows->begin() && std::prev(it)->base + std::prev(it)->bytes > b;
  return next || prev;
}

bool ProvenanceRegistry::remove(std::uint64_t comm_id, const void* base) noexcept {
  WriteLock lock(state_->lock);
  auto& by_comm = state_->by_comm;
  auto found = std::find_if(by_comm.begin(), by_comm.end(),
                            [&](const CommWindows& c) { return c.comm_id == comm_id; });
  if (found == by_comm.end()) return false;
  auto& windows = found->windows;
  auto const b = reinterpret_cast<std::uintptr_t>(base);
  auto it = std::lower_bound(windows.begin(), windows.end(), b,
                             [](const WindowEntry& w, std::uintptr_t x) { return w.base < x; });
  if (it == windows.end() || it->base != b) return false;
  windows.erase(it);
  if (windows.empty()) by_comm.erase(found);
  state_->generation.fetch_add(1, std::memory_order_release);
  return true;
}

namespace {
// The window of `windows` (sorted) whose start is the last at or below `p`.
const WindowEntry* containing_start(const std::vector<WindowEntry>& windows, std::uintptr_t p) {
  auto it = std::upper_bound(windows.begin(), windows.end(), p,
                             [](std::uintptr_t x, const WindowEntry& w) { return x < w.base; });
  if (it == windows.begin()) return nullptr;
  const WindowEntry& w = *std::prev(it);
  return p < w.base + w.bytes ? &w : nullptr;
}

void from_entry(const WindowEntry& w, std::uintptr_t p, ProvenanceStatus status, Provenance& out) {
  out.status = status;
  out.window = w.window;
  out.window_base = reinterpret_cast<const void*>(w.base);
  out.window_bytes = w.bytes;
  out.offset = p - w.base;
  out.comm_id = w.comm_id;
  out.window_seq = w.window_seq;
}

// A status with no window.
void bare(ProvenanceStatus status, Provenance& out) {
  out.status = status;
  out.window = nullptr;
  out.window_base = nullptr;
  out.window_bytes = 0;
  out.offset = 0;
  out.comm_id = 0;
  out.window_seq = 0;
}
}  // namespace

Provenance ProvenanceRegistry::lookup(const void* ptr, std::size_t bytes,
                                      std::uint64_t comm_id) const {
  Provenance result;
  ReadLock lock(state_->lock);
  state_->lookup_locked(ptr, bytes, comm_id, state_->windows_of(comm_id), result);
  return result;
}

void ProvenanceRegistry::lookup(const Query* queries, std::size_t count, std::uint64_t comm_id,
                                Provenance* out) const {
  detail::ProvenanceAccess::lookup_strided(*this, queries, count, comm_id, out, sizeof(Provenance));
}

void ProvenanceRegistry::State::lookup_locked(const void* ptr, std::size_t bytes,
                                              std::uint64_t comm_id,
                                              const std::vector<WindowEntry>* mine,
                                              Provenance& out) const {
  if (bytes == 0) return bare(ProvenanceStatus::Empty, out);
  if (ptr == nullptr) return bare(ProvenanceStatus::Null, out);
  auto const p = reinterpret_cast<std::uintptr_t>(ptr);
  if (mine != nullptr) {
    if (const WindowEntry* w = containing_start(*mine, p)) {
      bool const fits = bytes <= w->bytes - (p - w->base);
      return from_entry(
          *w, p, fits ? ProvenanceStatus::Symmetric : ProvenanceStatus::StraddlesWindowEnd, out);
    }
  }
  // Cold path: explain why.
  for (const CommWindows& other : by_comm) {
    if (other.comm_id == comm_id) continue;
    if (const WindowEntry* w = containing_start(other.windows, p)) {
      return from_entry(*w, p, ProvenanceStatus::OtherCommunicator, out);
    }
  }
  bare(ProvenanceStatus::NotRegistered, out);
}

std::size_t ProvenanceRegistry::size() const {
  ReadLock lock(state_->lock);
  std::size_t n = 0;
  for (const CommWindows& c : state_->by_comm) n += c.windows.size();
  return n;
}

namespace detail {

void ProvenanceAccess::lookup_strided(const ProvenanceRegistry& registry,
                                      const ProvenanceRegistry::Query* queries, std::size_t count,
                                      std::uint64_t comm_id, Provenance* out,
                                      std::size_t out_stride) {
  const ProvenanceRegistry::State& state = *registry.state_;
  ReadLock lock(state.lock);
  const std::vector<WindowEntry>* mine = state.windows_of(comm_id);
  auto* base = reinterpret_cast<unsigned char*>(out);
  for (std::size_t i = 0; i < count; ++i) {
    state.lookup_locked(queries[i].ptr, queries[i].bytes, comm_id, mine,
                        *reinterpret_cast<Provenance*>(base + i * out_stride));
  }
}

std::uint64_t ProvenanceAccess::generation(const ProvenanceRegistry& registry) noexcept {
  return registry.state_->generation.load(std::memory_order_acquire);
}

}  // namespace detail
}  // namespace symmcomm
