// Options::agree_plan (planned_call.hpp, plan_call): every rank's plan as one word, all-gathered
// and compared, so that ranks that would take different paths throw instead of hanging.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>

#include "call_prerequisites.hpp"
#include "comm/wait_internal.hpp"
#include "core/cuda_utils.hpp"
#include "planned_call.hpp"
#include "scratch.hpp"
#include "symmcomm/comm/wait.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/runtime.hpp"

namespace symmcomm::detail {

bool agree_plans_from_environment() noexcept {
  static bool const on = [] {
    const char* v = std::getenv("SYMMCOMM_AGREE_PLANS");
    return v != nullptr && std::string(v) == "1";
  }();
  return on;
}

namespace {

// A plan as one word: path and staging, or kPlanFailed.
constexpr std::uint32_t kPlanFailed = 0xFFu;
std::uint32_t plan_word(const Plan& plan) {
  return static_cast<std::uint32_t>(plan.path) | (plan.staged ? 0x10u : 0u);
}
std::string describe_word(std::uint32_t word) {
  if (word == kPlanFailed) return "could not plan";
  return std::string(to_string(static_cast<Path>(word & 0xFu))) +
         ((word & 0x10u) ? " (staged)" : "");
}

// Every rank's word, in rank order (one NCCL all-gather, then a watched wait on `stream`).
std::vector<std::uint32_t> gather_words(CommState& comm, std::uint32_t mine, cudaStream_t stream) {
  auto const n = static_cast<std::size_t>(comm.size);
  DeviceGuard guard(comm.device);
  CollectiveScratch& scratch = scratch_of(comm);
  if (scratch.agreement == nullptr) {
    SYMMCOMM_CUDA_TRY(cudaMalloc(&scratch.agreement, (n + 1) * sizeof(std::uint32_t)));
  }
  auto* words = static_cast<std::uint32_t*>(scratch.agreement);
  SYMMCOMM_CUDA_TRY(
      cudaMemcpyAsync(words + n, &mine, sizeof(mine), cudaMemcpyHostToDevice, stream));
  SYMMCOMM_NCCL_TRY(ncclAllGather(words + n, words, 1, ncclUint32, comm.comm, stream));
  std::vector<std::uint32_t> all(n);
  copy_to_host_after(comm, all.data(), words, n * sizeof(std::uint32_t), stream,
                     default_wait_timeout(), "Options::agree_plan");
  return all;
}
}  // namespace

Plan plan_call(CommState& comm, const PlanRequest& request, const Options& options,
               cudaStream_t stream, const char* operation) {
  if (!options.agree_plan && !agree_plans_from_environment()) return plan_collective(request);
  SYMMCOMM_EXPECTS(!capture_in_progress(stream),
                   operation << ": Options::agree_plan synchronises the stream and cannot run "
                                "during graph capture; agree once before capturing");
  refuse_in_group(operation, "Options::agree_plan");
  Plan plan;
  std::exception_ptr failure;
  try {
    plan = plan_collective(request);
  } catch (const LogicError&) {
    failure = std::current_exception();  // the peers must hear of it before anyone throws
  }
  std::uint32_t const mine = failure ? kPlanFailed : plan_word(plan);
  std::vector<std::uint32_t> const all = gather_words(comm, mine, stream);
  bool const same =
      std::all_of(all.begin(), all.end(), [&](std::uint32_t w) { return w == all[0]; });
  if (same && !failure && all[0] != kPlanFailed) return plan;
  if (failure) std::rethrow_exception(failure);
  std::ostringstream os;
  os << operation << ": the ranks planned different paths (";
  for (std::size_t r = 0; r < all.size(); ++r) {
    os << (r > 0 ? ", " : "") << "rank " << r << ": " << describe_word(all[r]);
  }
  os << "); a symmetric path needs the buffers in windows of this communicator on every rank. "
        "Rank "
     << comm.rank << " planned: " << plan.reason();
  SYMMCOMM_FAIL(os.str());
}

}  // namespace symmcomm::detail
