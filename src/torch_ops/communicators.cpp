#include "communicators.hpp"

#include <sstream>

namespace symmcomm::torch_ops {

void Communicators::set(const std::string& name, const Communicator& entry) {
  std::unique_lock lock(mutex_);
  entries_[name] = entry;
}

bool Communicators::remove(std::string_view name) {
  std::unique_lock lock(mutex_);
  auto const it = entries_.find(name);
  if (it == entries_.end()) return false;
  entries_.erase(it);
  return true;
}

Communicators::Lease Communicators::find(std::string_view name) const {
  std::shared_lock lock(mutex_);
  auto const it = entries_.find(name);
  const Communicator* entry = it == entries_.end() ? nullptr : &it->second;
  if (entry == nullptr) lock.unlock();  // nothing to keep alive
  return Lease(std::move(lock), entry);
}

std::vector<std::string> Communicators::names() const {
  std::shared_lock lock(mutex_);
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (auto const& [name, entry] : entries_) out.push_back(name);
  return out;
}

std::string Communicators::unknown(std::string_view name) const {
  std::ostringstream text;
  text << "no communicator registered as '" << name << "' (register_communicator); registered: ";
  auto const all = names();
  if (all.empty()) text << "none";
  for (std::size_t i = 0; i < all.size(); ++i) text << (i ? ", " : "") << all[i];
  return text.str();
}

Communicators& communicators() {
  // Never destroyed: operators may run from threads that outlive static destruction.
  static auto* registry = new Communicators();
  return *registry;
}

}  // namespace symmcomm::torch_ops
