#include "communicators.hpp"

namespace symmcomm::torch_ops {

// Never destroyed: operators may run from threads that outlive static destruction.
Communicators& communicators() {
  static auto* registry = new Communicators();
  return *registry;
}

MoeGroups& moe_groups() {
  static auto* registry = new MoeGroups();
  return *registry;
}

}  // namespace symmcomm::torch_ops
