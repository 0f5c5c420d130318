#include "symmcomm/comm/group.hpp"

#include <nccl.h>

#include <vector>

#include "symmcomm/error.hpp"
#include "symmcomm/logging.hpp"

namespace symmcomm {
namespace {
struct GroupThreadState {
  int depth = 0;
  std::vector<std::function<void()>> deferred;
};
thread_local GroupThreadState group_state;

void run_deferred() {
  // Work may defer more work (e.g. a free after a deregistration): drain until empty.
  while (!group_state.deferred.empty()) {
    auto work = std::move(group_state.deferred);
    group_state.deferred.clear();
    for (auto& w : work) {
      try {
        w();
      } catch (const std::exception& e) {
        SYMMCOMM_LOG_WARN("deferred group work failed: " << e.what());
      }
    }
  }
}
}  // namespace

Group::Group() {
  SYMMCOMM_NCCL_TRY(ncclGroupStart());
  ++group_state.depth;
}

Group::~Group() {
  if (ended_) return;
  try {
    end();
  } catch (const std::exception& e) {
    SYMMCOMM_LOG_WARN("ncclGroupEnd failed in ~Group: " << e.what());
  }
}

void Group::end() {
  if (ended_) return;
  ended_ = true;
  --group_state.depth;
  ncclResult_t const result = ncclGroupEnd();
  if (group_state.depth == 0) run_deferred();
  SYMMCOMM_NCCL_TRY(result);
}

bool Group::active() noexcept {
  return group_state.depth > 0;
}

void Group::defer(std::function<void()> work) {
  if (group_state.depth > 0) {
    group_state.deferred.push_back(std::move(work));
  } else {
    work();
  }
}

}  // namespace symmcomm
