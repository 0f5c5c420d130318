#pragma once
// One rank's measurement of one size of symmcomm-bench's sweep: the call under test, the plain
// NCCL baseline and the checks, built per collective (all_gather_job.cpp,
// reduce_scatter_job.cpp; nccl-tests keeps each collective in a file of its own too) and picked
// from a table by operation (job.cpp).

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <functional>
#include <memory>
#include <string>

#include "bench_support.hpp"
#include "config.hpp"
#include "symmcomm/collectives/options.hpp"
#include "symmcomm/comm/communicator.hpp"

namespace symmcomm::bench {

/// The plan a job's call took (written by the call itself, read after timing).
struct PlanNote {
  std::string plan;
  std::string taken = "nccl";  ///< the path taken ("nccl": plain NCCL baseline runs)
  void note(const Plan& p) {
    plan = p.reason();
    taken = std::string(to_string(p.path)) + (p.staged ? "/staged" : "");
  }
};

// A check runs round `k` (0 <= k < -c): it uploads that round's inputs (fresh: generated from
// the round as well as the rank) on the rank's stream, poisons the outputs, runs the call once
// and counts the values that differ from the host's. Successive rounds overwrite the inputs and
// outputs of the last one as soon as it completed on this rank's stream: the reuse pattern
// docs/engine-integration.md documents, checked on every path.
struct RankJob {
  std::function<void()> run;       ///< the measured call
  std::function<void()> baseline;  ///< plain NCCL on plain buffers
  std::function<long long(int)> check;
  /// In place (empty where not meaningful): the timed call and its check (as above).
  std::function<void()> run_in_place;
  std::function<long long(int)> check_in_place;
  std::shared_ptr<PlanNote> plan = std::make_shared<PlanNote>();
};

/// What a job builder needs: the configuration, this rank's communicator, stream and buffers,
/// and the sizes of this measurement.
struct JobContext {
  const Config& config;
  Communicator& comm;
  cudaStream_t stream;
  Buffers& buffers;
  std::size_t count;  ///< elements of the whole payload
  int n() const { return comm.size(); }
  int rank() const { return comm.rank(); }
  std::size_t shard() const { return count / static_cast<std::size_t>(n()); }
  /// --path nccl: plain NCCL on cudaMalloc buffers; otherwise symmcomm on pool buffers.
  bool plain_nccl() const { return config.path == BenchPath::Nccl; }
  Options options() const {
    Options o;
    o.path = choice_of(config.path);
    return o;
  }
};

RankJob all_gather_job(const JobContext& ctx);
RankJob reduce_scatter_job(const JobContext& ctx);

/// The job of config.op (the table of job.cpp).
RankJob make_job(const JobContext& ctx);

/// Whether a job of `config` has an in-place column (send and receive of one type).
bool has_in_place(const Config& config);

}  // namespace symmcomm::bench
