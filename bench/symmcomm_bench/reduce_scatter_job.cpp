// symmcomm-bench's reduce-scatter (job.hpp): random inputs whose sums are exact (check.hpp),
// summed into bf16 by symmcomm (BF16 natively through NCCL, NVFP4 and FP8 with per-rank scales)
// or by plain NCCL; BF16 also in place (the output is the rank's shard of its input). Round k's
// inputs are elements [k * count, (k + 1) * count) of the generated streams.

#include <nccl.h>

#include <cstdint>
#include <vector>

#include "check.hpp"
#include "job.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm::bench {
namespace {

// One dtype's call: its inputs uploaded per round, the call, and (BF16) the in-place call and
// where it writes.
struct ScatterCall {
  std::function<void(int)> load;
  std::function<void()> run, run_in_place;
  const void* in_place_out = nullptr;
  bool checkable = true;  ///< false where plain NCCL computes something else (an FP8 sum)
};

check::ReduceInput input_of(const JobContext& ctx, int round) {
  return check::reduce_input(ctx.config.dtype, ctx.rank(), ctx.n(),
                             static_cast<std::size_t>(round) * ctx.count, ctx.count);
}

ScatterCall bf16_scatter(const JobContext& ctx, std::uint16_t* out,
                         std::shared_ptr<PlanNote> note) {
  ScatterCall s;
  std::size_t const shard = ctx.shard(), count = ctx.count;
  cudaStream_t const stream = ctx.stream;
  auto* in = ctx.buffers.get<std::uint16_t>(count * 2, !ctx.plain_nccl());
  // In place: the output is this rank's shard of its input (which the timed iterations
  // overwrite; the check uploads fresh inputs first).
  auto* ip = in + shard * static_cast<std::size_t>(ctx.rank());
  s.in_place_out = ip;
  s.load = [=, c = ctx](int round) { upload(stream, in, input_of(c, round).data); };
  if (ctx.plain_nccl()) {
    ncclComm_t const raw = ctx.comm.get();
    s.run = [=] {
      SYMMCOMM_NCCL_TRY(ncclReduceScatter(in, out, shard, ncclBfloat16, ncclSum, raw, stream));
    };
    s.run_in_place = [=] {
      SYMMCOMM_NCCL_TRY(ncclReduceScatter(in, ip, shard, ncclBfloat16, ncclSum, raw, stream));
    };
    return s;
  }
  Communicator& comm = ctx.comm;
  Options const options = ctx.options();
  auto const call = [=, &comm](std::uint16_t* to) {
    return [=, &comm] {
      note->note(reduce_scatter(comm, Bf16Span{reinterpret_cast<bf16*>(in), count},
                                Bf16Span{reinterpret_cast<bf16*>(to), shard}, stream, options));
    };
  };
  s.run = call(out);
  s.run_in_place = call(ip);
  return s;
}

ScatterCall nvfp4_scatter(const JobContext& ctx, std::uint16_t* out,
                          std::shared_ptr<PlanNote> note) {
  SYMMCOMM_EXPECTS(
      !ctx.plain_nccl(),
      "--path nccl: plain NCCL has no NVFP4 reduction (use --dtype bf16 for the baseline)");
  ScatterCall s;
  std::size_t const shard = ctx.shard(), count = ctx.count;
  cudaStream_t const stream = ctx.stream;
  auto* data = ctx.buffers.get(count / 2, true);
  auto* scales = ctx.buffers.get(count / 16, true);
  auto* global = ctx.buffers.get<float>(4, true);
  s.load = [=, c = ctx](int round) {
    check::ReduceInput const input = input_of(c, round);
    upload(stream, data, input.data);
    upload(stream, scales, input.block_scales);
    support::upload_value_on(stream, global, input.scale);
  };
  Communicator& comm = ctx.comm;
  Options const options = ctx.options();
  s.run = [=, &comm] {
    note->note(reduce_scatter(comm, Nvfp4View{data, scales, global, count},
                              Bf16Span{reinterpret_cast<bf16*>(out), shard}, stream, options));
  };
  return s;
}

ScatterCall fp8_scatter(const JobContext& ctx, std::uint16_t* out, std::shared_ptr<PlanNote> note) {
  ScatterCall s;
  std::size_t const shard = ctx.shard(), count = ctx.count;
  cudaStream_t const stream = ctx.stream;
  Fp8Format const f = fp8_format_of(ctx.config.dtype);
  auto* codes = ctx.buffers.get(count, !ctx.plain_nccl());
  auto* scale = ctx.buffers.get<float>(4, !ctx.plain_nccl());
  s.load = [=, c = ctx](int round) {
    check::ReduceInput const input = input_of(c, round);
    upload(stream, codes, input.data);
    support::upload_value_on(stream, scale, input.scale);
  };
  if (ctx.plain_nccl()) {
    // What plain NCCL offers: a sum in FP8 itself, no scales (rounds at every step).
    auto* out8 = ctx.buffers.get(shard, false);
    ncclComm_t const raw = ctx.comm.get();
    s.run = [=] {
      SYMMCOMM_NCCL_TRY(ncclReduceScatter(codes, out8, shard,
                                          f == Fp8Format::E4M3 ? ncclFloat8e4m3 : ncclFloat8e5m2,
                                          ncclSum, raw, stream));
    };
    s.checkable = false;
    return s;
  }
  Communicator& comm = ctx.comm;
  Options const options = ctx.options();
  s.run = [=, &comm] {
    note->note(reduce_scatter(comm, Fp8View{codes, scale, count, f},
                              Bf16Span{reinterpret_cast<bf16*>(out), shard}, stream, options));
  };
  return s;
}

}  // namespace

RankJob reduce_scatter_job(const JobContext& ctx) {
  RankJob job;
  std::size_t const shard = ctx.shard();
  auto* out = ctx.buffers.get<std::uint16_t>(shard * 2, !ctx.plain_nccl());
  DataType const dtype = ctx.config.dtype;
  ScatterCall const s = dtype == DataType::Bf16    ? bf16_scatter(ctx, out, job.plan)
                        : dtype == DataType::Nvfp4 ? nvfp4_scatter(ctx, out, job.plan)
                                                   : fp8_scatter(ctx, out, job.plan);
  if (ctx.plain_nccl()) {
    job.plan->plan = dtype == DataType::Bf16 ? "plain NCCL on cudaMalloc buffers"
                                             : "plain NCCL FP8 sum (no per-rank scales)";
  }
  s.load(0);
  cudaStream_t const stream = ctx.stream;
  int const n = ctx.n(), r = ctx.rank();
  std::size_t const count = ctx.count;
  // The wrong values among `shard` bf16 results at `result` for round k.
  auto const wrong_in = [=](const void* result, int round) {
    return check::count_wrong(
        support::download_on<std::uint16_t>(stream, result, shard),
        check::reduce_expected(
            dtype, n, static_cast<std::size_t>(round) * count + static_cast<std::size_t>(r) * shard,
            shard));
  };
  job.run = s.run;
  job.check = [=, run = s.run, load = s.load, checkable = s.checkable](int round) -> long long {
    if (!checkable) return -1;
    load(round);
    support::fill_on(stream, out, 0xA5, shard * 2);
    run();
    return wrong_in(out, round);
  };
  if (s.run_in_place) {
    job.run_in_place = s.run_in_place;
    job.check_in_place = [=, run = s.run_in_place, load = s.load,
                          ip = s.in_place_out](int round) -> long long {
      load(round);
      run();
      return wrong_in(ip, round);
    };
  }
  // Baseline: NCCL's BF16 reduce-scatter of the same element count, plain buffers.
  auto* bin = ctx.buffers.get(count * 2, false);
  auto* bout = ctx.buffers.get(shard * 2, false);
  ncclComm_t const raw = ctx.comm.get();
  job.baseline = [=] {
    SYMMCOMM_NCCL_TRY(ncclReduceScatter(bin, bout, shard, ncclBfloat16, ncclSum, raw, stream));
  };
  return job;
}

}  // namespace symmcomm::bench
