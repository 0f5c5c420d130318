// symmcomm's own symmetric kernels (see lsa.hpp) for production peers: a push all-gather of
// several byte ranges in one launch, a one-shot quantized reduce-scatter that pulls every peer's
// shard, a fused quantize + all-gather and an all-gather with device counts (lsa_launchers.cuh,
// instantiated here for Peers only), and the fallback's local reduction over a shard table.

#include <atomic>
#include <cstdint>

#include "core/kernel_preload.hpp"
#include "lsa.hpp"
#include "lsa_launch.cuh"
#include "lsa_launchers.cuh"
#include "lsa_policy.cuh"
#include "lsa_reduce.cuh"
#include "symmcomm/error.hpp"

namespace symmcomm::detail::lsa {
namespace {

// Loaded with the rest of this module when a communicator is made (core/kernel_preload.hpp):
// the local reduction's kernel, the one this module has in every build.
[[maybe_unused]] const bool kModuleRegistered = register_kernel_module(
    reinterpret_cast<const void*>(&reduce_kernel<ShardTablePolicy, bf16, true, 8>),
    "kernels/lsa.cu");

}  // namespace

void set_programmatic_launch(bool on) noexcept {
  programmatic_setting().store(on, std::memory_order_relaxed);
}
bool programmatic_launch() noexcept {
  return programmatic_setting().load(std::memory_order_relaxed);
}

bool production_available() noexcept {
#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
  return true;
#else
  return false;
#endif
}

void gather(const Peers& peers, const GatherArgs& args, cudaStream_t stream) {
  launch_gather(peers, args, stream);
}

void reduce(const Peers& peers, const ReduceArgs& args, cudaStream_t stream) {
  launch_reduce(peers, args, stream);
}

void quantize_gather(const Peers& peers, const QuantizeGatherArgs& args, cudaStream_t stream,
                     float* scale_into) {
  launch_quantize_gather(peers, args, stream, scale_into);
}

void device_counts_gather(const Peers& peers, const DeviceCountsGatherArgs& args,
                          cudaStream_t stream) {
  launch_device_counts_gather(peers, args, stream);
}

void reduce_shards(const ShardTable& shards, DataType type, std::size_t count, void* out,
                   bool out_fp32, cudaStream_t stream) {
  ReduceArgs a;
  a.type = type;
  bool const nvfp4 = a.nvfp4();
  a.data = SymRef{0, 0};
  a.block_scales = SymRef{1, 0};
  a.scale = SymRef{2, 0};
  a.count = count;
  a.grid_count = count;
  a.out = out;
  a.out_fp32 = out_fp32;
  std::uintptr_t bits = nvfp4 ? count / 2 : count;
  for (int r = 0; r < shards.ranks; ++r) bits |= reinterpret_cast<std::uintptr_t>(shards.data[r]);
  bool const wide = bits % 16 == 0;
  // One GPU, no peers to meet: the current device's SMs.
  unsigned const grid = grid_for_units(
      count / 16, static_cast<unsigned>(reduce_ctas_per_sm(nvfp4) * current_device_sm_count()));
  ShardTablePolicy p;
  p.table = shards;
  if (out_fp32) {
    launch_reduce_kernel<ShardTablePolicy, float>(p, shards.ranks, a, wide, grid, LaunchShare{},
                                                  stream);
  } else {
    launch_reduce_kernel<ShardTablePolicy, bf16>(p, shards.ranks, a, wide, grid, LaunchShare{},
                                                 stream);
  }
  SYMMCOMM_CHECK_LAUNCH();
}

}  // namespace symmcomm::detail::lsa
