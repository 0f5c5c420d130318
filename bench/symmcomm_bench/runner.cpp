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

namespace symmcomm::bench {
namespace {

// One rank's measurement of one size: the call under test, its baseline, and its checks.
// A check runs round `k` (0 <= k < -c): it uploads that round's inputs (fresh: generated from
// the round as well as the rank) on the rank's stream, poisons the outputs, runs the call once
// and counts the values that differ from the host's. Successive rounds overwrite the inputs
// and outputs of the last one as soon as it completed on this rank's stream: the reuse
// pattern docs/engine-integration.md documents, checked on every path.
struct RankJob {
  std::function<void()> run;       // the measured call
  std::function<void()> baseline;  // plain NCCL on plain buffers
  std::function<long long(int)> check;
  // In place (empty where not meaningful): the timed call and its check (as above).
  std::function<void()> run_in_place;
  std::function<long long(int)> check_in_place;
  std::string plan;
  std::string taken = "nccl";  // the path the call took ("nccl": plain NCCL baseline runs)
};

RankJob make_job(const Config& c, Ranks& ranks, int local, std::size_t count, Buffers& b) {
  auto& comm = ranks.comms[static_cast<std::size_t>(local)];
  cudaStream_t const stream = ranks.streams[static_cast<std::size_t>(local)];
  int const n = comm.size();
  int const r = comm.rank();
  std::size_t const shard = count / static_cast<std::size_t>(n);
  bool const plain_nccl = c.path == BenchPath::Nccl;
  bool const symmetric = !plain_nccl;
  Options options;
  options.path = choice_of(c.path);
  ncclComm_t const raw = comm.get();
  RankJob job;
  auto plan_of = [&job](const Plan& p) {
    job.plan = p.reason();
    job.taken = std::string(to_string(p.path)) + (p.staged ? "/staged" : "");
  };
  auto const upload_value = [stream](void* dst, float v) {
    support::upload_value_on(stream, dst, v);
  };

  if (c.op == Operation::AllGather) {
    // Parts: data (+ scales) per rank; NVFP4 also its global scale.
    std::size_t data_bytes = c.dtype == DataType::Nvfp4  ? shard / 2
                             : c.dtype == DataType::Bf16 ? shard * 2
                                                      : shard;
    std::size_t scale_bytes = c.dtype == DataType::Nvfp4 ? shard / 16 : 0;
    bool const has_scale = c.dtype != DataType::Bf16;
    auto* sd = b.get(data_bytes, symmetric);
    auto* rd = b.get(data_bytes * n, symmetric);
    auto* ss = b.get(scale_bytes, symmetric);
    auto* rs = b.get(scale_bytes * n, symmetric);
    auto* sg = b.get<float>(4, symmetric);
    auto* rg = b.get<float>(4 * n, symmetric);
    // Round k's part of rank `rank` (data, block scales, scale), written at the given places.
    auto const load = [=](int round, int rank, void* data, void* scales, float* scale) {
      std::size_t const at = static_cast<std::size_t>(round);
      upload(stream, data,
             check::random_bytes(rank, check::Stream::Data, at * data_bytes, data_bytes));
      if (scale_bytes) {
        upload(
            stream, scales,
            check::random_bytes(rank, check::Stream::BlockScales, at * scale_bytes, scale_bytes));
      }
      if (has_scale) upload_value(scale, check::gathered_scale(rank, round));
    };
    load(0, r, sd, ss, sg);
    if (plain_nccl) {
      job.run = [=] {
        Group g;
        SYMMCOMM_NCCL_TRY(ncclAllGather(sd, rd, data_bytes, ncclUint8, raw, stream));
        if (scale_bytes)
          SYMMCOMM_NCCL_TRY(ncclAllGather(ss, rs, scale_bytes, ncclUint8, raw, stream));
        if (has_scale) SYMMCOMM_NCCL_TRY(ncclAllGather(sg, rg, 1, ncclFloat32, raw, stream));
      };
      job.plan = "plain NCCL on cudaMalloc buffers";
    } else if (c.dtype == DataType::Nvfp4) {
      job.run = [=, &comm] {
        plan_of(all_gather(comm, Nvfp4View{sd, ss, sg, shard}, Nvfp4View{rd, rs, rg, count}, stream,
                           options));
      };
    } else if (c.dtype == DataType::Bf16) {
      job.run = [=, &comm] {
        plan_of(all_gather(comm, Bf16Span{reinterpret_cast<bf16*>(sd), shard},
                           Bf16Span{reinterpret_cast<bf16*>(rd), count}, stream, options));
      };
    } else {
      Fp8Format const f = fp8_format_of(c.dtype);
      job.run = [=, &comm] {
        plan_of(all_gather(comm, Fp8View{sd, sg, shard, f}, Fp8View{rd, rg, count, f}, stream,
                           options));
      };
    }
    // In place: this rank's send is its own segment of the receive buffers.
    auto* ipd = rd + data_bytes * static_cast<std::size_t>(r);
    auto* ips = rs + scale_bytes * static_cast<std::size_t>(r);
    float* ipg = rg + r;
    if (plain_nccl) {
      job.run_in_place = [=] {
        Group g;
        SYMMCOMM_NCCL_TRY(ncclAllGather(ipd, rd, data_bytes, ncclUint8, raw, stream));
        if (scale_bytes)
          SYMMCOMM_NCCL_TRY(ncclAllGather(ips, rs, scale_bytes, ncclUint8, raw, stream));
        if (has_scale) SYMMCOMM_NCCL_TRY(ncclAllGather(ipg, rg, 1, ncclFloat32, raw, stream));
      };
    } else if (c.dtype == DataType::Nvfp4) {
      job.run_in_place = [=, &comm] {
        plan_of(all_gather(comm, Nvfp4View{ipd, ips, ipg, shard}, Nvfp4View{rd, rs, rg, count},
                           stream, options));
      };
    } else if (c.dtype == DataType::Bf16) {
      job.run_in_place = [=, &comm] {
        plan_of(all_gather(comm, Bf16Span{reinterpret_cast<bf16*>(ipd), shard},
                           Bf16Span{reinterpret_cast<bf16*>(rd), count}, stream, options));
      };
    } else {
      Fp8Format const f = fp8_format_of(c.dtype);
      job.run_in_place = [=, &comm] {
        plan_of(all_gather(comm, Fp8View{ipd, ipg, shard, f}, Fp8View{rd, rg, count, f}, stream,
                           options));
      };
    }
    auto const poison_receive = [=] {
      support::fill_on(stream, rd, 0xA5, data_bytes * n);
      support::fill_on(stream, rs, 0xA5, scale_bytes * n);
      if (has_scale) support::fill_on(stream, rg, 0xA5, sizeof(float) * n);
    };
    // Every rank's segment of round k's data, block scales and per-rank scales.
    auto const count_wrong = [=](int round) {
      std::size_t const at = static_cast<std::size_t>(round);
      long long wrong = 0;
      for (int k = 0; k < n; ++k) {
        wrong += check::count_wrong(
            download(stream, rd + data_bytes * k, data_bytes),
            check::random_bytes(k, check::Stream::Data, at * data_bytes, data_bytes));
        if (scale_bytes) {
          wrong += check::count_wrong(
              download(stream, rs + scale_bytes * k, scale_bytes),
              check::random_bytes(k, check::Stream::BlockScales, at * scale_bytes, scale_bytes));
        }
      }
      if (has_scale) {
        std::vector<float> want;
        for (int k = 0; k < n; ++k) want.push_back(check::gathered_scale(k, round));
        wrong += check::count_wrong(support::download_on<float>(stream, rg, want.size()), want);
      }
      return wrong;
    };
    job.check = [=, run = job.run](int round) {
      load(round, r, sd, ss, sg);
      poison_receive();
      run();
      return count_wrong(round);
    };
    // Poisons the receive buffers, puts this rank's part in its segment, gathers once.
    job.check_in_place = [=, run = job.run_in_place](int round) {
      poison_receive();
      load(round, r, ipd, ips, ipg);
      run();
      return count_wrong(round);
    };
    // Baseline: the same tensors (data, block scales, per-rank scale) gathered by plain NCCL
    // from plain buffers, in one group: what an engine does without symmcomm.
    auto* bsd = b.get(data_bytes + scale_bytes + 4, false);
    auto* brd = b.get((data_bytes + scale_bytes + 4) * n, false);
    job.baseline = [=] {
      Group g;
      SYMMCOMM_NCCL_TRY(ncclAllGather(bsd, brd, data_bytes, ncclUint8, raw, stream));
      if (scale_bytes)
        SYMMCOMM_NCCL_TRY(ncclAllGather(bsd + data_bytes, brd + data_bytes * n, scale_bytes,
                                        ncclUint8, raw, stream));
      if (has_scale) {
        SYMMCOMM_NCCL_TRY(ncclAllGather(bsd + data_bytes + scale_bytes,
                                        brd + (data_bytes + scale_bytes) * n, 4, ncclUint8, raw,
                                        stream));
      }
    };
    return job;
  }

  // Reduce-scatter: random inputs whose sums are exact (check.hpp); output bf16. Round k's
  // inputs are elements [k * count, (k + 1) * count) of the generated streams.
  auto const input_of = [=](int round) {
    return check::reduce_input(c.dtype, r, n, static_cast<std::size_t>(round) * count, count);
  };
  // The wrong values among `shard` bf16 results at `result` for round k.
  auto const wrong_in = [=](const void* result, int round) {
    return check::count_wrong(
        support::download_on<std::uint16_t>(stream, result, shard),
        check::reduce_expected(
            c.dtype, n,
            static_cast<std::size_t>(round) * count + static_cast<std::size_t>(r) * shard, shard));
  };
  auto* out = b.get<std::uint16_t>(shard * 2, symmetric);
  std::function<void(int)> load;  // uploads round k's inputs (out of place)
  if (c.dtype == DataType::Bf16) {
    auto* in = b.get<std::uint16_t>(count * 2, symmetric);
    load = [=](int round) { upload(stream, in, input_of(round).data); };
    // In place: the output is this rank's shard of its input (which the timed iterations
    // overwrite; the check uploads fresh inputs first).
    auto* ip = in + shard * static_cast<std::size_t>(r);
    if (plain_nccl) {
      job.run = [=] {
        SYMMCOMM_NCCL_TRY(ncclReduceScatter(in, out, shard, ncclBfloat16, ncclSum, raw, stream));
      };
      job.run_in_place = [=] {
        SYMMCOMM_NCCL_TRY(ncclReduceScatter(in, ip, shard, ncclBfloat16, ncclSum, raw, stream));
      };
      job.plan = "plain NCCL on cudaMalloc buffers";
    } else {
      job.run = [=, &comm] {
        plan_of(reduce_scatter(comm, Bf16Span{reinterpret_cast<bf16*>(in), count},
                               Bf16Span{reinterpret_cast<bf16*>(out), shard}, stream, options));
      };
      job.run_in_place = [=, &comm] {
        plan_of(reduce_scatter(comm, Bf16Span{reinterpret_cast<bf16*>(in), count},
                               Bf16Span{reinterpret_cast<bf16*>(ip), shard}, stream, options));
      };
    }
    job.check_in_place = [=, run = job.run_in_place](int round) -> long long {
      load(round);
      run();
      return wrong_in(ip, round);
    };
  } else if (c.dtype == DataType::Nvfp4) {
    SYMMCOMM_EXPECTS(
        !plain_nccl,
        "--path nccl: plain NCCL has no NVFP4 reduction (use --dtype bf16 for the baseline)");
    auto* data = b.get(count / 2, symmetric);
    auto* scales = b.get(count / 16, symmetric);
    auto* global = b.get<float>(4, symmetric);
    load = [=](int round) {
      check::ReduceInput const input = input_of(round);
      upload(stream, data, input.data);
      upload(stream, scales, input.block_scales);
      upload_value(global, input.scale);
    };
    job.run = [=, &comm] {
      plan_of(reduce_scatter(comm, Nvfp4View{data, scales, global, count},
                             Bf16Span{reinterpret_cast<bf16*>(out), shard}, stream, options));
    };
  } else {
    Fp8Format const f = fp8_format_of(c.dtype);
    auto* codes = b.get(count, symmetric);
    auto* scale = b.get<float>(4, symmetric);
    load = [=](int round) {
      check::ReduceInput const input = input_of(round);
      upload(stream, codes, input.data);
      upload_value(scale, input.scale);
    };
    if (plain_nccl) {
      // What plain NCCL offers: a sum in FP8 itself, no scales (rounds at every step).
      auto* out8 = b.get(shard, false);
      job.run = [=] {
        SYMMCOMM_NCCL_TRY(ncclReduceScatter(codes, out8, shard,
                                            f == Fp8Format::E4M3 ? ncclFloat8e4m3 : ncclFloat8e5m2,
                                            ncclSum, raw, stream));
      };
      job.plan = "plain NCCL FP8 sum (no per-rank scales)";
    } else {
      job.run = [=, &comm] {
        plan_of(reduce_scatter(comm, Fp8View{codes, scale, count, f},
                               Bf16Span{reinterpret_cast<bf16*>(out), shard}, stream, options));
      };
    }
  }
  load(0);
  // Baseline: NCCL's BF16 reduce-scatter of the same element count, plain buffers.
  auto* bin = b.get(count * 2, false);
  auto* bout = b.get(shard * 2, false);
  job.baseline = [=] {
    SYMMCOMM_NCCL_TRY(ncclReduceScatter(bin, bout, shard, ncclBfloat16, ncclSum, raw, stream));
  };
  bool const checkable = !(plain_nccl && c.dtype != DataType::Bf16);
  job.check = [=, run = job.run](int round) -> long long {
    if (!checkable) return -1;
    load(round);
    support::fill_on(stream, out, 0xA5, shard * 2);
    run();
    return wrong_in(out, round);
  };
  return job;
}

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
    // In place where send and receive hold the same type (make_job builds it exactly there).
    bool const has_in_place = c.op == Operation::AllGather || c.dtype == DataType::Bf16;
    std::vector<std::string> plans(local), taken(local);
    Barrier barrier(ranks.local(), ranks.mpi);
    parallel(ranks, [&](int r) {
      Buffers buffers(*ranks.pools[static_cast<std::size_t>(r)]);
      RankJob job = make_job(c, ranks, r, count, buffers);
      cudaStream_t const s = ranks.streams[static_cast<std::size_t>(r)];
      std::string const what = std::string(to_string(c.op)) + " " + to_string(c.dtype) + " of " +
                               std::to_string(sizes[i]) + " bytes on rank " +
                               std::to_string(ranks.comms[static_cast<std::size_t>(r)].rank());
      times[static_cast<std::size_t>(r)] = time_iterations(s, barrier, timing, job.run, what);
      wrong[static_cast<std::size_t>(r)] = c.check ? check_rounds(job.check, c.check_rounds) : -1;
      plans[static_cast<std::size_t>(r)] = job.plan;
      taken[static_cast<std::size_t>(r)] = job.taken;
      if (has_in_place) {
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
    res.baseline = c.op == Operation::AllGather ? "nccl allgather of the same tensors, plain buffers"
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
    if (has_in_place) {
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
