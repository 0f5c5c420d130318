#include "runner.hpp"

#include <nccl.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "core/cuda_utils.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/comm/group.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/bf16.hpp"
#include "symmcomm/formats/fp8.hpp"

#include "bench_support.hpp"
#include "check.hpp"
#include "job.hpp"

namespace symmcomm::bench {
namespace {

// Runs `rounds` checks (each its own fresh inputs) and sums their wrong values (-1: not
// checked). Every rank runs the same rounds: each is a collective call.
long long check_rounds(const std::function<long long(int)>& check, int rounds) {
  long long wrong = 0;
  for (int k = 0; k < rounds; ++k) {
    long long const w = check(k);
    if (w < 0) return -1;
    wrong += w;
  }
  return wrong;
}

}  // namespace

std::vector<Result> run_sweep(const Config& c, Ranks& ranks) {
  std::vector<Result> results;
  auto const sizes = size_sweep(c.min_bytes, c.max_bytes, c.step_factor, c.step_bytes);
  Timing const timing = Timing::of(c);
  int const n = ranks.world();
  std::size_t const local = static_cast<std::size_t>(ranks.local());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::size_t const count = element_count(c.dtype, sizes[i], n);
    if (ranks.prints()) {
      std::fprintf(stderr, "[symmcomm-bench] %s %s %s: size %zu (%zu/%zu)\n", to_string(c.op),
                   to_string(c.dtype), to_string(c.path), sizes[i], i + 1, sizes.size());
    }
    std::vector<double> times(local), base(local), in_place(local, 0.0);
    std::vector<long long> wrong(local, 0), in_place_wrong(local, 0);
    // In place where send and receive hold the same type (the jobs build it exactly there).
    bool const in_place_column = has_in_place(c);
    std::vector<std::string> plans(local), taken(local);
    Barrier barrier(ranks.local(), ranks.mpi);
    parallel(ranks, [&](int r) {
      Buffers buffers(*ranks.pools[static_cast<std::size_t>(r)]);
      cudaStream_t const s = ranks.streams[static_cast<std::size_t>(r)];
      RankJob job =
          make_job(JobContext{c, ranks.comms[static_cast<std::size_t>(r)], s, buffers, count});
      std::string const what = std::string(to_string(c.op)) + " " + to_string(c.dtype) + " of " +
                               std::to_string(sizes[i]) + " bytes on rank " +
                               std::to_string(ranks.comms[static_cast<std::size_t>(r)].rank());
      times[static_cast<std::size_t>(r)] = time_iterations(s, barrier, timing, job.run, what);
      wrong[static_cast<std::size_t>(r)] = c.check ? check_rounds(job.check, c.check_rounds) : -1;
      plans[static_cast<std::size_t>(r)] = job.plan->plan;
      taken[static_cast<std::size_t>(r)] = job.plan->taken;
      if (in_place_column) {
        SYMMCOMM_EXPECTS(job.run_in_place, "symmcomm-bench: no in-place job (a bug)");
        in_place[static_cast<std::size_t>(r)] =
            time_iterations(s, barrier, timing, job.run_in_place, what + " (in place)");
        in_place_wrong[static_cast<std::size_t>(r)] =
            c.check ? check_rounds(job.check_in_place, c.check_rounds) : -1;
      }
      base[static_cast<std::size_t>(r)] =
          time_iterations(s, barrier, timing, job.baseline, what + " (plain NCCL baseline)");
      SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(s));
      barrier.wait();  // nobody frees buffers a peer may still read
    });
    Result res;
    res.op = to_string(c.op);
    res.dtype = to_string(c.dtype);
    res.requested = to_string(c.path);
    res.path = taken[0];
    res.plan = plans[0];
    res.count = count;
    res.size = static_cast<std::size_t>(static_cast<double>(count) * bytes_per_element(c.dtype));
    res.time_us = combine_times(ranks, times, c.average);
    res.baseline_time_us = combine_times(ranks, base, c.average);
    res.baseline = c.op == Operation::AllGather
                       ? "nccl allgather of the same tensors, plain buffers"
                       : "nccl bf16 reducescatter, same count, plain buffers";
    res.algbw = static_cast<double>(res.size) / 1e3 / res.time_us;
    res.busbw = bus_bandwidth(res.algbw, n);
    auto const sum_wrong = [&](const std::vector<long long>& counts) -> long long {
      long long local_wrong = 0;
      for (long long w : counts) local_wrong = (w < 0 || local_wrong < 0) ? -1 : local_wrong + w;
      // -1 (not checked) anywhere makes the sum negative: report "not checked".
      long long const total = global_sum(ranks, local_wrong < 0 ? -(1LL << 40) : local_wrong);
      return c.check && total >= 0 ? total : -1;
    };
    res.wrong = sum_wrong(wrong);
    if (in_place_column) {
      res.has_in_place = true;
      res.in_place_time_us = combine_times(ranks, in_place, c.average);
      res.in_place_algbw = static_cast<double>(res.size) / 1e3 / res.in_place_time_us;
      res.in_place_busbw = bus_bandwidth(res.in_place_algbw, n);
      res.in_place_wrong = sum_wrong(in_place_wrong);
    }
    results.push_back(res);
  }
  return results;
}

}  // namespace symmcomm::bench
