// The communicators and MoE groups symmcomm's C++ PyTorch operators reach by name (an
// operator's `str group` argument), as the Python package registers them
// (symmcomm.ops.register_communicator, register_moe_group). Free of PyTorch, so that the CPU
// suites test it.
#pragma once

#include <map>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "symmcomm/c_api.h"

namespace symmcomm::torch_ops {

/// A registered communicator: its handle and what every call needs of it.
struct Communicator {
  symmcomm_comm_t comm = nullptr;
  int rank = 0;
  int size = 0;
  int device = 0;
};

/// A registered MoE group: its handle, shape and buffers (the operators' outputs where the
/// caller passes the group's own tensors).
struct MoeGroupEntry {
  symmcomm_moe_t group = nullptr;
  symmcomm_moe_config_t config{};  ///< capacity resolved
  symmcomm_moe_buffers_t buffers{};
  int device = 0;
};

/// Name -> entry, thread-safe. A lookup holds a shared lock for as long as its Lease lives, so
/// an entry is never removed while an operator is inside a call with it; set and remove wait
/// for those calls (each only enqueues work).
template <class Entry>
class Registry {
 public:
  class Lease {
   public:
    explicit operator bool() const { return entry_ != nullptr; }
    const Entry& operator*() const { return *entry_; }
    const Entry* operator->() const { return entry_; }

   private:
    friend class Registry;
    Lease(std::shared_lock<std::shared_mutex> lock, const Entry* entry)
        : lock_(std::move(lock)), entry_(entry) {}
    std::shared_lock<std::shared_mutex> lock_;
    const Entry* entry_;
  };

  /// `what` and `how` word the error for an unknown name: "no <what> registered as 'x'
  /// (<how>); registered: ..." (the Python implementations' text).
  Registry(const char* what, const char* how) : what_(what), how_(how) {}

  /// Registers (or replaces) `name`.
  void set(const std::string& name, const Entry& entry) {
    std::unique_lock lock(mutex_);
    entries_[name] = entry;
  }
  /// Forgets `name`; whether it was registered.
  bool remove(std::string_view name) {
    std::unique_lock lock(mutex_);
    auto const it = entries_.find(name);
    if (it == entries_.end()) return false;
    entries_.erase(it);
    return true;
  }
  /// The entry registered as `name`; an empty Lease when there is none.
  Lease find(std::string_view name) const {
    std::shared_lock lock(mutex_);
    auto const it = entries_.find(name);
    const Entry* entry = it == entries_.end() ? nullptr : &it->second;
    if (entry == nullptr) lock.unlock();  // nothing to keep alive
    return Lease(std::move(lock), entry);
  }
  /// The registered names, sorted.
  std::vector<std::string> names() const {
    std::shared_lock lock(mutex_);
    std::vector<std::string> out;
    out.reserve(entries_.size());
    for (auto const& [name, entry] : entries_) out.push_back(name);
    return out;
  }
  /// The error text for a `name` that is not registered, listing those that are.
  std::string unknown(std::string_view name) const {
    std::ostringstream text;
    text << "no " << what_ << " registered as '" << name << "' (" << how_ << "); registered: ";
    auto const all = names();
    if (all.empty()) text << "none";
    for (std::size_t i = 0; i < all.size(); ++i) text << (i ? ", " : "") << all[i];
    return text.str();
  }

 private:
  const char* what_;
  const char* how_;
  mutable std::shared_mutex mutex_;
  std::map<std::string, Entry, std::less<>> entries_;
};

/// The communicators by name.
class Communicators : public Registry<Communicator> {
 public:
  Communicators() : Registry("communicator", "register_communicator") {}
};

/// The MoE groups by name.
class MoeGroups : public Registry<MoeGroupEntry> {
 public:
  MoeGroups() : Registry("MoE group", "register_moe_group") {}
};

/// The process's registries (the ones the operators read).
Communicators& communicators();
MoeGroups& moe_groups();

}  // namespace symmcomm::torch_ops
