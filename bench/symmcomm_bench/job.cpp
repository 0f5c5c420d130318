// symmcomm-bench's job table: one builder per collective.

#include "job.hpp"

#include "symmcomm/error.hpp"

namespace symmcomm::bench {
namespace {

struct JobRow {
  Operation op;
  RankJob (*make)(const JobContext&);
};

constexpr JobRow kJobs[] = {
    {Operation::AllGather, all_gather_job},
    {Operation::ReduceScatter, reduce_scatter_job},
};

}  // namespace

RankJob make_job(const JobContext& ctx) {
  for (const JobRow& row : kJobs) {
    if (row.op == ctx.config.op) return row.make(ctx);
  }
  SYMMCOMM_FAIL("symmcomm-bench: no job for operation " << to_string(ctx.config.op));
}

bool has_in_place(const Config& config) {
  return config.op == Operation::AllGather || config.dtype == DataType::Bf16;
}

}  // namespace symmcomm::bench
