#pragma once
// Ceilings with the read/write mix of each LSA kernel: the same bytes read from as many
// buffers and written to as many, in the same item sizes, with no decoding or encoding. A
// kernel's bandwidth divided by its mix's ceiling is the fraction of what that traffic can
// reach on this GPU (device-to-device copy is one buffer in, one out: a different mix).

#include <benchmark/benchmark.h>

#include <cstddef>

namespace symmcomm::bench {

/// A traffic pattern: `items` work items; per item, `in_bytes` (+ `side_in` bytes from a
/// second array, e.g. an NVFP4 block scale) read from each of `inputs` buffers and `out_bytes`
/// (+ `side_out`) written to each of `outputs` buffers.
struct Mix {
  int in_bytes = 8, side_in = 0, out_bytes = 8, side_out = 0;
  int inputs = 1, outputs = 1;
  std::size_t items = 0;

  double bytes() const {
    return static_cast<double>(items) *
           (inputs * (in_bytes + side_in) + outputs * (out_bytes + side_out));
  }
  bool operator<(const Mix& o) const;
};

/// Bytes read + written per second by the mix's ceiling kernel on the current device (median
/// of 10 launches after 3 warm-ups, measured once per mix and process).
/// Mixes: (in, side_in, out, side_out) one of (8,1,32,0) NVFP4 reduce into bf16, (16,0,32,0)
/// FP8 reduce into bf16, (8,1,8,1) NVFP4 gather, (32,0,8,1) bf16 -> NVFP4 quantize-gather,
/// (32,0,16,0) bf16 -> FP8 quantize-gather; others throw LogicError.
double mix_ceiling_bytes_per_second(const Mix& mix);

/// Adds counters `vs_mix` (bytes_per_iteration per second over the mix's ceiling) and
/// `mix_GBps` (the ceiling) to a benchmark that moved `bytes_per_iteration` per iteration.
void report_mix(benchmark::State& state, double bytes_per_iteration, const Mix& mix);

}  // namespace symmcomm::bench
