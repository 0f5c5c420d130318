// An inference engine that already owns its NCCL communicator and its memory, bringing both to
// symmcomm (docs/engine-integration.md):
//   - the engine's ncclComm_t is borrowed (symmcomm never destroys it);
//   - activations come from the engine's own cudaMalloc;
//   - the dispatch gather receives into a symmcomm pool (symmetric windows);
//   - the combine's NVFP4 partials live in memory the engine got from ncclMemAlloc, which
//     symmcomm registers (SymmetricBuffer::register_memory: symmcomm owns the registration);
//   - the FP8 partials live in a window the engine registered itself, which symmcomm only
//     records (SymmetricBuffer::adopt_window: symmcomm owns nothing);
// and every call prints the plan's reason. Checked: each rank's part of the gather is its own
// quantization, byte for byte; the reduce-scatters against the exact sum of the bf16 inputs.
// Teardown runs in the order the engine must keep: symmcomm's objects, then the engine's
// window, memory and communicator.
//
// One rank per visible GPU (a thread each); on one GPU it runs one rank.

#include <nccl.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "example_support.hpp"

using namespace symmcomm;

// The engine's own error checks (symmcomm's macros throw with the call's text).
#define ENGINE_CUDA(call) SYMMCOMM_CUDA_TRY(call)
#define ENGINE_NCCL(call) SYMMCOMM_NCCL_TRY(call)

namespace {

constexpr std::size_t kTokens = 64, kHidden = 7168, kCount = kTokens * kHidden;

float activation(int rank, std::size_t i) {
  return std::sin(0.7f * static_cast<float>(rank) + 0.003f * static_cast<float>(i % 7919));
}

std::vector<std::uint16_t> bf16_of(int rank, std::size_t count) {
  std::vector<std::uint16_t> h(count);
  for (std::size_t i = 0; i < count; ++i) h[i] = float_to_bf16_bits(activation(rank, i));
  return h;
}

// This engine runs everything on the legacy default stream (nullptr): copies, quantization and
// collectives are ordered there. An engine on its own cudaStreamNonBlocking stream must copy on
// that stream (cudaMemcpyAsync(..., stream)): a plain cudaMemcpy runs on the legacy stream,
// which does not order work on a non-blocking stream, and from pageable memory it may return
// before its DMA has landed.
void download(void* host, const void* device, std::size_t bytes) {
  ENGINE_CUDA(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, nullptr));
  ENGINE_CUDA(cudaStreamSynchronize(nullptr));
}

// Relative L2 distance of the bf16 result (this rank's shard) from the exact sum of every
// rank's bf16 input.
double combine_error(const void* out, int rank, int ranks, std::size_t shard) {
  std::vector<std::uint16_t> got(shard);
  download(got.data(), out, shard * 2);
  double err = 0.0, ref = 0.0;
  for (std::size_t i = 0; i < shard; ++i) {
    std::size_t const at = static_cast<std::size_t>(rank) * shard + i;
    double sum = 0.0;
    for (int r = 0; r < ranks; ++r)
      sum += bf16_bits_to_float(float_to_bf16_bits(activation(r, at)));
    double const d = bf16_bits_to_float(got[i]) - sum;
    err += d * d;
    ref += sum * sum;
  }
  return std::sqrt(err / ref);
}

}  // namespace

int main() {
  if (!have_gpu()) {
    std::puts("engine_borrow: no CUDA GPU on this machine; nothing to run");
    return kNoGpuExitCode;
  }
  // The engine's communicators: one rank per GPU, created by the engine.
  int gpus = 0;
  ENGINE_CUDA(cudaGetDeviceCount(&gpus));
  std::vector<int> devices(static_cast<std::size_t>(gpus));
  for (int d = 0; d < gpus; ++d) devices[static_cast<std::size_t>(d)] = d;
  std::vector<ncclComm_t> engine_comms(devices.size());
  ENGINE_NCCL(ncclCommInitAll(engine_comms.data(), gpus, devices.data()));

  // Borrowing probes the communicator (collective): one thread per rank.
  std::vector<Communicator> comms(devices.size());
  on_threads(devices.size(), [&](std::size_t r) {
    ENGINE_CUDA(cudaSetDevice(devices[r]));
    comms[r] = Communicator::borrow(engine_comms[r]);
  });
  std::vector<int> failures(devices.size(), 0);
  int const n = static_cast<int>(comms.size());
  std::size_t const shard = kCount / static_cast<std::size_t>(n);

  for_each_rank(comms, [&](Communicator& comm) {
    int const rank = comm.rank();
    auto& failed = failures[static_cast<std::size_t>(rank)];
    // Engine memory: activations from cudaMalloc.
    void *x = nullptr, *q_data = nullptr, *q_scales = nullptr, *q_global = nullptr;
    auto const host = bf16_of(rank, kCount);
    ENGINE_CUDA(cudaMalloc(&x, kCount * 2));
    ENGINE_CUDA(cudaMemcpyAsync(x, host.data(), kCount * 2, cudaMemcpyHostToDevice, nullptr));
    ENGINE_CUDA(cudaMalloc(&q_data, kCount / 2));
    ENGINE_CUDA(cudaMalloc(&q_scales, kCount / 16));
    ENGINE_CUDA(cudaMalloc(&q_global, sizeof(float)));
    Nvfp4View const mine{static_cast<std::uint8_t*>(q_data), static_cast<std::uint8_t*>(q_scales),
                         static_cast<float*>(q_global), kCount};
    quantize_nvfp4(static_cast<const bf16*>(x), mine, ScaleMode::Compute, nullptr);

    {
      // Dispatch: gather every rank's NVFP4 activations into a symmcomm pool.
      SymmAllocator pool(comm, PoolOptions{64 << 20});
      std::size_t const all = kCount * static_cast<std::size_t>(n);
      auto* g_data = static_cast<std::uint8_t*>(pool.allocate(all / 2));
      auto* g_scales = static_cast<std::uint8_t*>(pool.allocate(all / 16));
      auto* g_global = static_cast<float*>(pool.allocate(sizeof(float) * n));
      Plan const dispatch =
          all_gather(comm, mine, Nvfp4View{g_data, g_scales, g_global, all}, nullptr);
      std::printf("rank %d dispatch (activations from cudaMalloc, receive in a pool): %s\n", rank,
                  dispatch.reason().c_str());
      std::vector<std::uint8_t> want(kCount / 2), got(kCount / 2);
      download(want.data(), q_data, want.size());
      download(got.data(), g_data + static_cast<std::size_t>(rank) * (kCount / 2), got.size());
      if (got != want) {
        std::printf("rank %d: its part of the gather differs from its own quantization\n", rank);
        failed = 1;
      }
      pool.deallocate(g_global);
      pool.deallocate(g_scales);
      pool.deallocate(g_data);
    }

    // Combine, NVFP4 partials in memory the engine allocated with ncclMemAlloc; symmcomm
    // registers it as a window (and deregisters it, never frees it).
    void* engine_mem = nullptr;
    ENGINE_NCCL(ncclMemAlloc(&engine_mem, kCount));  // data (kCount/2) + scales (kCount/16) + 4
    void* out = nullptr;
    ENGINE_CUDA(cudaMalloc(&out, shard * 2));
    {
      SymmetricBuffer registered = SymmetricBuffer::register_memory(comm, engine_mem, kCount);
      auto* base = static_cast<std::uint8_t*>(engine_mem);
      Nvfp4View const partials{base, base + kCount / 2,
                               reinterpret_cast<float*>(base + kCount / 2 + kCount / 16), kCount};
      quantize_nvfp4(static_cast<const bf16*>(x), partials, ScaleMode::Compute, nullptr);
      Plan const combine =
          reduce_scatter(comm, partials, Bf16Span{static_cast<bf16*>(out), shard}, nullptr);
      double const err = combine_error(out, rank, n, shard);
      std::printf(
          "rank %d NVFP4 combine (engine's ncclMemAlloc, registered by symmcomm): %s; "
          "relative error %.3f\n",
          rank, combine.reason().c_str(), err);
      if (!(err < 0.15)) failed = 1;
    }  // deregistered here (collective); the memory is still the engine's

    // Combine, FP8 partials in a window the engine registered itself; symmcomm adopts it.
    ncclWindow_t engine_window = nullptr;
    ENGINE_NCCL(ncclCommWindowRegister(comm.get(), engine_mem, kCount, &engine_window,
                                       NCCL_WIN_COLL_SYMMETRIC));
    if (engine_window == nullptr) {
      std::printf("rank %d: NCCL gave no window (no symmetric support); FP8 step skipped\n", rank);
    } else {
      SymmetricBuffer adopted =
          SymmetricBuffer::adopt_window(comm, engine_window, engine_mem, kCount);
      // kCount - 256 codes and the scale at the window's end (16-byte aligned).
      std::size_t const codes = kCount - 256;
      std::size_t const fp8_shard = codes / static_cast<std::size_t>(n);
      auto* base = static_cast<std::uint8_t*>(engine_mem);
      Fp8View const partials{base, reinterpret_cast<float*>(base + codes), codes, Fp8Format::E4M3};
      quantize_fp8(static_cast<const bf16*>(x), partials, ScaleMode::Compute, nullptr);
      Plan const combine =
          reduce_scatter(comm, partials, Bf16Span{static_cast<bf16*>(out), fp8_shard}, nullptr);
      double const err = combine_error(out, rank, n, fp8_shard);
      std::printf("rank %d FP8 combine (engine's own window, adopted): %s; relative error %.3f\n",
                  rank, combine.reason().c_str(), err);
      if (!(err < 0.08)) failed = 1;
    }  // forgotten here; the window stays the engine's, which deregisters it
    if (engine_window != nullptr) ENGINE_NCCL(ncclCommWindowDeregister(comm.get(), engine_window));
    ENGINE_NCCL(ncclMemFree(engine_mem));
    for (void* p : {x, q_data, q_scales, q_global, out}) ENGINE_CUDA(cudaFree(p));
  });

  // symmcomm lets go of the communicators before the engine destroys them.
  comms.clear();
  for (ncclComm_t c : engine_comms) ENGINE_NCCL(ncclCommDestroy(c));
  int bad = 0;
  for (int f : failures) bad += f;
  std::printf("engine_borrow: %s (%d rank(s))\n", bad == 0 ? "OK" : "FAILED", n);
  return bad == 0 ? 0 : 1;
}
