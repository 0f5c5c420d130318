// NVFP4 all-gather of MoE activations, as an engine's dispatch step does it: bf16 activations
// are quantized into pool memory (symmetric windows), gathered with their block scales and
// global scales in one call, and checked against each rank's own quantization.
//
// Runs on every visible GPU (one rank each, one thread per rank); on one GPU it runs one rank.

#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "example_support.hpp"

using namespace symmcomm;

int main() {
  if (!have_gpu()) {
    std::puts("nvfp4_all_gather: no CUDA GPU on this machine; nothing to run");
    return kNoGpuExitCode;
  }
  constexpr std::size_t kTokens = 128, kHidden = 7168, kCount = kTokens * kHidden;
  std::vector<Communicator> comms = create_local_communicators();
  int const n = static_cast<int>(comms.size());
  // One pool per rank, reserved collectively (one thread drives all ranks here: a Group).
  std::vector<std::unique_ptr<SymmAllocator>> pools;
  {
    Group group;
    for (auto& c : comms)
      pools.push_back(std::make_unique<SymmAllocator>(c, PoolOptions{64 << 20}));
  }
  int failures = 0;
  for_each_rank(comms, [&](Communicator& comm) {
    SymmAllocator& pool = *pools[static_cast<std::size_t>(comm.rank())];
    // Activations: token t, channel h of rank r has value sin(r + t * h) (any data would do).
    std::vector<std::uint16_t> host(kCount);
    for (std::size_t i = 0; i < kCount; ++i) {
      host[i] = float_to_bf16_bits(
          std::sin(static_cast<float>(comm.rank()) + 0.001f * static_cast<float>(i)));
    }
    // Engines run collectives on their own non-blocking streams. Write inputs in stream order
    // on that stream: a plain cudaMemcpy runs on the legacy stream, which does not order work
    // on a cudaStreamNonBlocking stream, and from pageable memory it may return before its DMA
    // has landed, so the quantize below could read the old bytes.
    cudaStream_t stream;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    void* activations = nullptr;
    cudaMalloc(&activations, kCount * 2);
    cudaMemcpyAsync(activations, host.data(), kCount * 2, cudaMemcpyHostToDevice, stream);

    Nvfp4View const send{static_cast<std::uint8_t*>(pool.allocate(kCount / 2)),
                         static_cast<std::uint8_t*>(pool.allocate(kCount / 16)),
                         static_cast<float*>(pool.allocate(sizeof(float))), kCount};
    Nvfp4View const recv{static_cast<std::uint8_t*>(pool.allocate(kCount / 2 * n)),
                         static_cast<std::uint8_t*>(pool.allocate(kCount / 16 * n)),
                         static_cast<float*>(pool.allocate(sizeof(float) * n)), kCount * n};
    quantize_nvfp4(static_cast<const bf16*>(activations), send, ScaleMode::Compute, stream);
    Plan const plan = all_gather(comm, send, recv, stream);
    cudaStreamSynchronize(stream);
    std::printf("rank %d: %s\n", comm.rank(), plan.reason().c_str());

    // Check: this rank's own slice of the gathered tensor equals what it sent. Downloads go
    // through the same stream too (ordered after the gather), then the host waits for it.
    std::vector<std::uint8_t> mine(kCount / 2), gathered(kCount / 2);
    cudaMemcpyAsync(mine.data(), send.data, kCount / 2, cudaMemcpyDeviceToHost, stream);
    cudaMemcpyAsync(gathered.data(), recv.data + comm.rank() * (kCount / 2), kCount / 2,
                    cudaMemcpyDeviceToHost, stream);
    cudaStreamSynchronize(stream);
    if (mine != gathered) ++failures;
    for (void* p : {static_cast<void*>(send.data), static_cast<void*>(send.block_scales),
                    static_cast<void*>(send.global_scale), static_cast<void*>(recv.data),
                    static_cast<void*>(recv.block_scales), static_cast<void*>(recv.global_scale)}) {
      pool.deallocate(p);
    }
    cudaStreamDestroy(stream);
    cudaFree(activations);
  });
  {
    Group group;  // arenas are deregistered collectively
    pools.clear();
  }
  std::printf("nvfp4_all_gather: %d rank(s), %s\n", n, failures == 0 ? "OK" : "MISMATCH");
  return failures == 0 ? 0 : 1;
}
