// A communicator's kept call and its replay (replay.hpp).

#include "replay.hpp"

#include <memory>
#include <mutex>
#include <vector>

#include "collectives/common.hpp"
#include "collectives/scratch.hpp"
#include "comm/launch_order.hpp"
#include "core/cuda_utils.hpp"
#include "kernels/lsa_ll.hpp"
#include "memory/provenance_internal.hpp"
#include "symmcomm/comm/group.hpp"

namespace symmcomm::detail {

struct KeptCall {
  CollectiveCall call;
  Options options;
  std::uint64_t generation = 0;  ///< the provenance registry's, read before planning
  bool ll_gather = false;        ///< lsa::ll_gather_enabled() then
  Plan plan;
  ReplayLaunch launch;
  const char* type = "";
  std::size_t count = 0;
};

void KeptCallDeleter::operator()(KeptCall* kept) const noexcept {
  delete kept;
}

namespace {

// The fields the comparisons below read, declared as in the structs: a field added to one of
// them must be compared too (it may change validation or the plan).
struct TensorRefFields {
  DataType dtype;
  void* data;
  void* block_scales;
  float* scales;
  std::size_t count;
  ScaleLayout scale_layout;
  std::size_t row_elements;
};
struct CollectiveCallFields {
  Collective op;
  Counts counts;
  TensorRef send, recv;
  const std::size_t* host_counts;
  std::size_t host_count_entries;
  DeviceCounts device_counts;
  std::size_t row_elements;
  const GatherItem* items;
  std::size_t item_count;
  const RowItem* row_items;
  std::size_t row_item_count;
  bool items_only;
  const float* quantize_scale;
};
struct OptionsFields {
  PathChoice path;
  void* workspace;
  std::size_t workspace_bytes;
  bool allow_staging;
  Staging staging;
  bool pdl_fence;
  bool agree_plan;
};
static_assert(sizeof(TensorRef) == sizeof(TensorRefFields), "compare the new field in same_tensor");
static_assert(sizeof(CollectiveCall) == sizeof(CollectiveCallFields),
              "compare the new field in same_call");
static_assert(sizeof(Options) == sizeof(OptionsFields), "compare the new field in same_options");

bool same_tensor(const TensorRef& a, const TensorRef& b) noexcept {
  return a.dtype == b.dtype && a.data == b.data && a.block_scales == b.block_scales &&
         a.scales == b.scales && a.count == b.count && a.scale_layout == b.scale_layout &&
         a.row_elements == b.row_elements;
}

std::uint64_t registry_generation() noexcept {
  return ProvenanceAccess::generation(ProvenanceRegistry::global());
}

}  // namespace

bool replayable(const CollectiveCall& call, const Options& options) noexcept {
  return call.counts == Counts::Equal && !call.items_only && call.item_count == 0 &&
         call.row_item_count == 0 && !options.agree_plan && !agree_plans_from_environment();
}

bool same_call(const CollectiveCall& a, const CollectiveCall& b) noexcept {
  // device_counts is read by device-count calls only, which are never kept.
  return a.op == b.op && a.counts == b.counts && same_tensor(a.send, b.send) &&
         same_tensor(a.recv, b.recv) && a.host_counts == b.host_counts &&
         a.host_count_entries == b.host_count_entries && a.row_elements == b.row_elements &&
         a.items == b.items && a.item_count == b.item_count && a.row_items == b.row_items &&
         a.row_item_count == b.row_item_count && a.items_only == b.items_only &&
         a.quantize_scale == b.quantize_scale;
}

bool same_options(const Options& a, const Options& b) noexcept {
  return a.path == b.path && a.workspace == b.workspace && a.workspace_bytes == b.workspace_bytes &&
         a.allow_staging == b.allow_staging && a.staging.send == b.staging.send &&
         a.staging.send_bytes == b.staging.send_bytes && a.staging.recv == b.staging.recv &&
         a.staging.recv_bytes == b.staging.recv_bytes && a.pdl_fence == b.pdl_fence &&
         a.agree_plan == b.agree_plan;
}

bool replay_call(CommState& state, const CollectiveCall& call, const char* operation,
                 cudaStream_t stream, const Options& options, Plan& plan) {
  if (!replayable(call, options) || Group::active()) return false;
  CollectiveScratch& scratch = scratch_of(state);
  ReplayLaunch launch;
  const char* type = nullptr;
  std::size_t count = 0;
  {
    std::lock_guard lock(scratch.replay_mutex);
    const KeptCall* kept = scratch.kept.get();
    if (kept == nullptr || kept->generation != registry_generation() ||
        kept->ll_gather != lsa::ll_gather_enabled() || !same_call(kept->call, call) ||
        !same_options(kept->options, options)) {
      return false;
    }
    plan = kept->plan;
    launch.fn = kept->launch.fn;
    launch.bytes = kept->launch.bytes;
    std::memcpy(launch.args, kept->launch.args, kept->launch.bytes);
    type = kept->type;
    count = kept->count;
  }
  static const std::vector<PlannedBuffer> kNone;  // an LSA plan touches windows by definition
  DeviceGuard guard(state.device);
  before_enqueue(state, options, plan, kNone, stream);
  launch.fn(state, launch.args, stream);
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
  if (!scratch.kept) scratch.kept.reset(new KeptCall);
  KeptCall& kept = *scratch.kept;
  kept.call = call;
  kept.options = options;
  kept.generation = planned.generation();
  kept.ll_gather = lsa::ll_gather_enabled();
  kept.plan = planned.plan();
  kept.launch.fn = launch.fn;
  kept.launch.bytes = launch.bytes;
  std::memcpy(kept.launch.args, launch.args, launch.bytes);
  kept.type = type;
  kept.count = count;
}

}  // namespace symmcomm::detail
