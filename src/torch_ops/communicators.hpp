// The communicators symmcomm's C++ PyTorch operators reach by name (an operator's `str group`
// argument), as the Python package registers them (symmcomm.ops.register_communicator). Free of
// PyTorch, so that the CPU suites test it.
#pragma once

#include <map>
#include <mutex>
#include <shared_mutex>
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

/// Name -> communicator, thread-safe. A lookup holds a shared lock for as long as its Lease
/// lives, so a communicator is never removed while an operator is inside a call with it; set
/// and remove wait for those calls (each only enqueues work).
class Communicators {
 public:
  class Lease {
   public:
    explicit operator bool() const { return entry_ != nullptr; }
    const Communicator& operator*() const { return *entry_; }
    const Communicator* operator->() const { return entry_; }

   private:
    friend class Communicators;
    Lease(std::shared_lock<std::shared_mutex> lock, const Communicator* entry)
        : lock_(std::move(lock)), entry_(entry) {}
    std::shared_lock<std::shared_mutex> lock_;
    const Communicator* entry_;
  };

  /// Registers (or replaces) `name`.
  void set(const std::string& name, const Communicator& entry);
  /// Forgets `name`; whether it was registered.
  bool remove(std::string_view name);
  /// The communicator registered as `name`; an empty Lease when there is none.
  Lease find(std::string_view name) const;
  /// The registered names, sorted.
  std::vector<std::string> names() const;
  /// The error text for a `name` that is not registered, listing those that are (the Python
  /// implementations' text).
  std::string unknown(std::string_view name) const;

 private:
  mutable std::shared_mutex mutex_;
  std::map<std::string, Communicator, std::less<>> entries_;
};

/// The process's registry (the one the operators read).
Communicators& communicators();

}  // namespace symmcomm::torch_ops
