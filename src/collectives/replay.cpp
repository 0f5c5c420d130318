// A communicator's kept calls and their replay (replay.hpp).

#include "replay.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "collectives/planned_call.hpp"
#include "collectives/scratch.hpp"
#include "comm/launch_order.hpp"
#include "core/cuda_utils.hpp"
#include "kernels/lsa_ll.hpp"
#include "memory/provenance_internal.hpp"
#include "symmcomm/comm/group.hpp"

namespace symmcomm::detail {

void KeptCallsDeleter::operator()(KeptCalls* kept) const noexcept {
  delete kept;
}

namespace {

// Each struct's fields as one tuple, taken apart by a structured binding: a field added to the
// struct makes the binding's count wrong and the build fail here, so no field of a call escapes
// the comparison (it may change validation or the plan).
auto fields(const TensorRef& t) noexcept {
  auto const& [dtype, data, block_scales, scales, count, scale_layout, row_elements] = t;
  return std::tie(dtype, data, block_scales, scales, count, scale_layout, row_elements);
}

auto fields(const Staging& s) noexcept {
  auto const& [send, send_bytes, recv, recv_bytes] = s;
  return std::tie(send, send_bytes, recv, recv_bytes);
}

auto fields(const Options& o) noexcept {
  auto const& [path, workspace, workspace_bytes, allow_staging, staging, pdl_fence, agree_plan] = o;
  return std::make_tuple(path, workspace, workspace_bytes, allow_staging, fields(staging),
                         pdl_fence, agree_plan);
}

// device_counts is read by device-count calls only, which are never kept: bound, not compared.
auto fields(const CollectiveCall& c) noexcept {
  auto const& [op, counts, send, recv, host_counts, host_count_entries, device_counts, row_elements,
               items, item_count, row_items, row_item_count, items_only, quantize_scale] = c;
  static_cast<void>(device_counts);
  return std::make_tuple(op, counts, fields(send), fields(recv), host_counts, host_count_entries,
                         row_elements, items, item_count, row_items, row_item_count, items_only,
                         quantize_scale);
}

std::uint64_t registry_generation() noexcept {
  return ProvenanceAccess::generation(ProvenanceRegistry::global());
}

}  // namespace

KeptCall* KeptCalls::find(const CollectiveCall& call, const Options& options,
                          std::uint64_t generation, bool ll_gather) noexcept {
  for (KeptCall& k : calls_) {
    if (k.last_use != 0 && k.generation == generation && k.ll_gather == ll_gather &&
        same_call(k.call, call) && same_options(k.options, options)) {
      return &k;
    }
  }
  return nullptr;
}

KeptCall& KeptCalls::entry_for(const CollectiveCall& call, const Options& options) noexcept {
  KeptCall* oldest = &calls_[0];
  for (KeptCall& k : calls_) {
    if (k.last_use != 0 && same_call(k.call, call) && same_options(k.options, options)) return k;
    if (k.last_use < oldest->last_use) oldest = &k;
  }
  return *oldest;
}

void KeptCalls::touch(KeptCall& entry) noexcept {
  entry.last_use = ++uses_;
}

bool replayable(const CollectiveCall& call, const Options& options) noexcept {
  return call.counts == Counts::Equal && !call.items_only && call.item_count == 0 &&
         call.row_item_count == 0 && !options.agree_plan && !agree_plans_from_environment();
}

bool same_call(const CollectiveCall& a, const CollectiveCall& b) noexcept {
  return fields(a) == fields(b);
}

bool same_options(const Options& a, const Options& b) noexcept {
  return fields(a) == fields(b);
}

bool replay_call(CommState& state, const CollectiveCall& call, const char* operation,
                 cudaStream_t stream, const Options& options, Plan& plan) {
  if (!replayable(call, options) || Group::active()) return false;
  CollectiveScratch& scratch = scratch_of(state);
  std::shared_ptr<const ReplayLaunch> launch;
  const char* type = nullptr;
  std::size_t count = 0;
  {
    std::lock_guard lock(scratch.replay_mutex);
    if (!scratch.kept) return false;
    KeptCalls& kept = *scratch.kept;
    KeptCall* const hit = kept.find(call, options, registry_generation(), lsa::ll_gather_enabled());
    if (hit == nullptr) return false;
    kept.touch(*hit);
    plan = hit->plan;
    launch = hit->launch;
    type = hit->type;
    count = hit->count;
  }
  static const std::vector<PlannedBuffer> kNone;  // an LSA plan touches windows by definition
  DeviceGuard guard(state.device);
  before_enqueue(state, options, plan, kNone, stream);
  launch->fn(state, launch->args, stream);
  state.stats.replayed.fetch_add(1, std::memory_order_relaxed);
  record_plan(state, plan, kNone, stream, operation, type, count);
  return true;
}

void keep_call(CommState& state, const CollectiveCall& call, const Options& options,
               const PlannedCall& planned, const ReplayLaunch& launch, const char* type,
               std::size_t count) {
  if (planned.plan().path != Path::LsaKernel || planned.in_group() || !replayable(call, options)) {
    return;
  }
  CollectiveScratch& scratch = scratch_of(state);
  std::lock_guard lock(scratch.replay_mutex);
  if (!scratch.kept) scratch.kept.reset(new KeptCalls);
  KeptCall& kept = scratch.kept->entry_for(call, options);
  scratch.kept->touch(kept);
  kept.call = call;
  kept.options = options;
  kept.generation = planned.generation();
  kept.ll_gather = lsa::ll_gather_enabled();
  kept.plan = planned.plan();
  // No replay holds the entry's launch when the count is 1 (it takes its reference under this
  // lock): rewritten in place, so that calls planned every time (more distinct calls than kept)
  // allocate nothing here. The fence orders a replay's last reads of the bytes (before its
  // reference's release) before the writes below.
  if (!kept.launch || kept.launch.use_count() != 1) {
    kept.launch = std::make_shared<ReplayLaunch>();
  } else {
    std::atomic_thread_fence(std::memory_order_acquire);
  }
  kept.launch->fn = launch.fn;
  kept.launch->bytes = launch.bytes;
  std::memcpy(kept.launch->args, launch.args, launch.bytes);
  kept.type = type;
  kept.count = count;
}

}  // namespace symmcomm::detail
