// NVFP4 reduce-scatter of expert outputs, as an engine's combine step could do it: each rank
// quantizes its bf16 partial outputs to NVFP4, the library dequantizes every rank's shard,
// accumulates in fp32 and writes bf16 once. Checked against an fp64 reference.

#include <cmath>
#include <cstdio>
#include <vector>

#include "example_support.hpp"

using namespace symmcomm;

namespace {
float value(int rank, std::size_t i) {
  return std::cos(0.37f * static_cast<float>(rank) + 0.01f * static_cast<float>(i % 9973));
}
}  // namespace

int main() {
  if (!have_gpu()) {
    std::puts("quantized_reduce_scatter: no CUDA GPU on this machine; nothing to run");
    return kNoGpuExitCode;
  }
  constexpr std::size_t kShard = 64 * 7168;  // elements each rank receives
  std::vector<Communicator> comms = create_local_communicators();
  int const n = static_cast<int>(comms.size());
  std::size_t const total = kShard * static_cast<std::size_t>(n);
  std::vector<double> worst(comms.size(), 0.0);
  for_each_rank(comms, [&](Communicator& comm) {
    std::vector<std::uint16_t> host(total);
    for (std::size_t i = 0; i < total; ++i) host[i] = float_to_bf16_bits(value(comm.rank(), i));
    void *input = nullptr, *data = nullptr, *scales = nullptr, *global = nullptr, *out = nullptr;
    cudaMalloc(&input, total * 2);
    cudaMalloc(&data, total / 2);
    cudaMalloc(&scales, total / 16);
    cudaMalloc(&global, sizeof(float));
    cudaMalloc(&out, kShard * 2);
    // Everything below runs on the legacy default stream (nullptr), so copies and calls are
    // ordered with each other. On a non-blocking stream, use cudaMemcpyAsync on that stream
    // (see nvfp4_all_gather.cpp): a plain cudaMemcpy is not ordered with such a stream.
    cudaMemcpyAsync(input, host.data(), total * 2, cudaMemcpyHostToDevice, nullptr);
    Nvfp4View const send{static_cast<std::uint8_t*>(data), static_cast<std::uint8_t*>(scales),
                         static_cast<float*>(global), total};
    quantize_nvfp4(static_cast<const bf16*>(input), send, ScaleMode::Compute, nullptr);
    Plan const plan =
        reduce_scatter(comm, send, Bf16Span{static_cast<bf16*>(out), kShard}, nullptr);
    std::vector<std::uint16_t> result(kShard);
    cudaMemcpyAsync(result.data(), out, kShard * 2, cudaMemcpyDeviceToHost, nullptr);
    cudaStreamSynchronize(nullptr);
    std::printf("rank %d: %s\n", comm.rank(), plan.reason().c_str());
    // Reference: the exact sum of the bf16 inputs. NVFP4 keeps ~1 significant bit per block
    // maximum's neighbourhood, so compare in norm: relative L2 error.
    double err = 0.0, ref = 0.0;
    for (std::size_t i = 0; i < kShard; ++i) {
      std::size_t const global_index = static_cast<std::size_t>(comm.rank()) * kShard + i;
      double sum = 0.0;
      for (int r = 0; r < n; ++r)
        sum += bf16_bits_to_float(float_to_bf16_bits(value(r, global_index)));
      double const d = bf16_bits_to_float(result[i]) - sum;
      err += d * d;
      ref += sum * sum;
    }
    worst[static_cast<std::size_t>(comm.rank())] = std::sqrt(err / ref);
    for (void* p : {input, data, scales, global, out}) cudaFree(p);
  });
  double max_error = 0.0;
  for (double e : worst) max_error = std::fmax(max_error, e);
  // NVFP4 quantization of smooth data loses well under 15% (relative L2).
  bool const ok = max_error < 0.15;
  std::printf("quantized_reduce_scatter: %d rank(s), relative L2 error %.4f vs fp64: %s\n", n,
              max_error, ok ? "OK" : "TOO LARGE");
  return ok ? 0 : 1;
}
