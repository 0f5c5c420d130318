// symmcomm-bench's all-gather (job.hpp): every rank's data (with NVFP4 block scales) and its
// per-rank scale (FP8, NVFP4), gathered by symmcomm's typed all_gather or by plain NCCL in one
// group; out of place and in place (the send is the rank's own segment of the receive buffer).

#include <nccl.h>

#include <cstdint>
#include <vector>

#include "check.hpp"
#include "job.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/comm/group.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm::bench {
namespace {

// The tensors of one rank: data and block scales per rank, one scale float per rank.
struct GatherTensors {
  DataType dtype;
  std::size_t shard = 0, count = 0;
  std::size_t data_bytes = 0, scale_bytes = 0;
  bool has_scale = false;
  std::uint8_t *send_data = nullptr, *recv_data = nullptr;
  std::uint8_t *send_scales = nullptr, *recv_scales = nullptr;
  float *send_scale = nullptr, *recv_scale = nullptr;
};

GatherTensors gather_tensors(const JobContext& ctx) {
  GatherTensors t;
  t.dtype = ctx.config.dtype;
  t.shard = ctx.shard();
  t.count = ctx.count;
  t.data_bytes = payload_bytes(t.dtype, t.shard);
  t.scale_bytes = t.dtype == DataType::Nvfp4 ? t.shard / kNvfp4BlockSize : 0;
  t.has_scale = t.dtype != DataType::Bf16;
  bool const symmetric = !ctx.plain_nccl();
  auto const n = static_cast<std::size_t>(ctx.n());
  t.send_data = ctx.buffers.get(t.data_bytes, symmetric);
  t.recv_data = ctx.buffers.get(t.data_bytes * n, symmetric);
  t.send_scales = ctx.buffers.get(t.scale_bytes, symmetric);
  t.recv_scales = ctx.buffers.get(t.scale_bytes * n, symmetric);
  t.send_scale = ctx.buffers.get<float>(4, symmetric);
  t.recv_scale = ctx.buffers.get<float>(4 * n, symmetric);
  return t;
}

// The measured call from this rank's (data, scales, scale) into the receive tensors: plain
// NCCL's gathers in one group, or symmcomm's typed all_gather (its plan noted).
std::function<void()> gather_call(const JobContext& ctx, const GatherTensors& t, std::uint8_t* data,
                                  std::uint8_t* scales, float* scale,
                                  std::shared_ptr<PlanNote> note) {
  cudaStream_t const stream = ctx.stream;
  if (ctx.plain_nccl()) {
    ncclComm_t const raw = ctx.comm.get();
    return [=] {
      Group g;
      SYMMCOMM_NCCL_TRY(ncclAllGather(data, t.recv_data, t.data_bytes, ncclUint8, raw, stream));
      if (t.scale_bytes) {
        SYMMCOMM_NCCL_TRY(
            ncclAllGather(scales, t.recv_scales, t.scale_bytes, ncclUint8, raw, stream));
      }
      if (t.has_scale) {
        SYMMCOMM_NCCL_TRY(ncclAllGather(scale, t.recv_scale, 1, ncclFloat32, raw, stream));
      }
    };
  }
  Communicator& comm = ctx.comm;
  Options const options = ctx.options();
  if (t.dtype == DataType::Nvfp4) {
    return [=, &comm] {
      note->note(all_gather(comm, Nvfp4View{data, scales, scale, t.shard},
                            Nvfp4View{t.recv_data, t.recv_scales, t.recv_scale, t.count}, stream,
                            options));
    };
  }
  if (t.dtype == DataType::Bf16) {
    return [=, &comm] {
      note->note(all_gather(comm, Bf16Span{reinterpret_cast<bf16*>(data), t.shard},
                            Bf16Span{reinterpret_cast<bf16*>(t.recv_data), t.count}, stream,
                            options));
    };
  }
  Fp8Format const f = fp8_format_of(t.dtype);
  return [=, &comm] {
    note->note(all_gather(comm, Fp8View{data, scale, t.shard, f},
                          Fp8View{t.recv_data, t.recv_scale, t.count, f}, stream, options));
  };
}

// Round k's part of rank `rank` (data, block scales, scale), written at the given places.
void load_part(cudaStream_t stream, const GatherTensors& t, int round, int rank, void* data,
               void* scales, float* scale) {
  std::size_t const at = static_cast<std::size_t>(round);
  upload(stream, data,
         check::random_bytes(rank, check::Stream::Data, at * t.data_bytes, t.data_bytes));
  if (t.scale_bytes) {
    upload(
        stream, scales,
        check::random_bytes(rank, check::Stream::BlockScales, at * t.scale_bytes, t.scale_bytes));
  }
  if (t.has_scale) support::upload_value_on(stream, scale, check::gathered_scale(rank, round));
}

void poison_receive(cudaStream_t stream, const GatherTensors& t, int n) {
  support::fill_on(stream, t.recv_data, 0xA5, t.data_bytes * n);
  support::fill_on(stream, t.recv_scales, 0xA5, t.scale_bytes * n);
  if (t.has_scale) support::fill_on(stream, t.recv_scale, 0xA5, sizeof(float) * n);
}

// Wrong values among every rank's segment of round k's data, block scales and scales.
long long count_wrong(cudaStream_t stream, const GatherTensors& t, int n, int round) {
  std::size_t const at = static_cast<std::size_t>(round);
  long long wrong = 0;
  for (int k = 0; k < n; ++k) {
    wrong += check::count_wrong(
        download(stream, t.recv_data + t.data_bytes * k, t.data_bytes),
        check::random_bytes(k, check::Stream::Data, at * t.data_bytes, t.data_bytes));
    if (t.scale_bytes) {
      wrong += check::count_wrong(
          download(stream, t.recv_scales + t.scale_bytes * k, t.scale_bytes),
          check::random_bytes(k, check::Stream::BlockScales, at * t.scale_bytes, t.scale_bytes));
    }
  }
  if (t.has_scale) {
    std::vector<float> want;
    for (int k = 0; k < n; ++k) want.push_back(check::gathered_scale(k, round));
    wrong +=
        check::count_wrong(support::download_on<float>(stream, t.recv_scale, want.size()), want);
  }
  return wrong;
}

// The same tensors gathered by plain NCCL from plain buffers, in one group: what an engine does
// without symmcomm.
std::function<void()> gather_baseline(const JobContext& ctx, const GatherTensors& t) {
  auto const n = static_cast<std::size_t>(ctx.n());
  std::size_t const part = t.data_bytes + t.scale_bytes + 4;
  auto* send = ctx.buffers.get(part, false);
  auto* recv = ctx.buffers.get(part * n, false);
  ncclComm_t const raw = ctx.comm.get();
  cudaStream_t const stream = ctx.stream;
  return [=] {
    Group g;
    SYMMCOMM_NCCL_TRY(ncclAllGather(send, recv, t.data_bytes, ncclUint8, raw, stream));
    if (t.scale_bytes) {
      SYMMCOMM_NCCL_TRY(ncclAllGather(send + t.data_bytes, recv + t.data_bytes * n, t.scale_bytes,
                                      ncclUint8, raw, stream));
    }
    if (t.has_scale) {
      SYMMCOMM_NCCL_TRY(ncclAllGather(send + t.data_bytes + t.scale_bytes,
                                      recv + (t.data_bytes + t.scale_bytes) * n, 4, ncclUint8, raw,
                                      stream));
    }
  };
}

}  // namespace

RankJob all_gather_job(const JobContext& ctx) {
  GatherTensors const t = gather_tensors(ctx);
  cudaStream_t const stream = ctx.stream;
  int const n = ctx.n();
  int const r = ctx.rank();
  RankJob job;
  if (ctx.plain_nccl()) job.plan->plan = "plain NCCL on cudaMalloc buffers";
  load_part(stream, t, 0, r, t.send_data, t.send_scales, t.send_scale);
  job.run = gather_call(ctx, t, t.send_data, t.send_scales, t.send_scale, job.plan);
  // In place: this rank's send is its own segment of the receive tensors.
  auto* in_data = t.recv_data + t.data_bytes * static_cast<std::size_t>(r);
  auto* in_scales = t.recv_scales + t.scale_bytes * static_cast<std::size_t>(r);
  float* in_scale = t.recv_scale + r;
  job.run_in_place = gather_call(ctx, t, in_data, in_scales, in_scale, job.plan);
  job.check = [=, run = job.run](int round) {
    load_part(stream, t, round, r, t.send_data, t.send_scales, t.send_scale);
    poison_receive(stream, t, n);
    run();
    return count_wrong(stream, t, n, round);
  };
  // Poisons the receive tensors, puts this rank's part in its segment, gathers once.
  job.check_in_place = [=, run = job.run_in_place](int round) {
    poison_receive(stream, t, n);
    load_part(stream, t, round, r, in_data, in_scales, in_scale);
    run();
    return count_wrong(stream, t, n, round);
  };
  job.baseline = gather_baseline(ctx, t);
  return job;
}

}  // namespace symmcomm::bench
