// The latency benchmark's probe kernels (latency_probes.hpp), written against the production
// LSA policy (src/kernels/lsa_policy.cuh) as the library's kernels are.

#include "latency_probes.hpp"

#include <cstdint>
#include <type_traits>

#include "core/kernel_preload.hpp"
#include "kernels/lsa_launch.cuh"
#include "kernels/lsa_policy.cuh"
#include "symmcomm/error.hpp"

namespace symmcomm::bench {
namespace {

namespace lsa = detail::lsa;

// The opening and closing barrier of every LSA kernel, with nothing between (barriers_only).
template <class P>
__global__ void __launch_bounds__(lsa::kThreads) barriers_kernel(P peers) {
  lsa::programmatic_wait(peers);
  if (!peers.barrier()) return;
  if (!peers.barrier()) return;
  lsa::programmatic_release(peers);
}

// One round of a one-flag ping-pong between ranks 0 and 1 (the others leave at once): each
// rank counts its calls in flags word 1 of its own slot; rank 0 stores the count into rank 1's
// word 0 and waits for it to come back into its own, rank 1 waits for it and sends it back.
template <class P>
__global__ void ping_pong_kernel(P peers, lsa::SymRef flags) {
  lsa::programmatic_wait(peers);
  int const me = peers.rank();
  if (threadIdx.x == 0 && me < 2 && peers.size() >= 2) {
    auto* mine = reinterpret_cast<volatile std::uint32_t*>(peers.ptr(flags, me));
    auto* other = reinterpret_cast<volatile std::uint32_t*>(peers.ptr(flags, 1 - me));
    std::uint32_t const c = mine[1] + 1;
    mine[1] = c;
    auto const wait = [&] {
      for (unsigned polls = 1; mine[0] != c; ++polls) {
        if (polls % lsa::kAbortPolls == 0 && peers.aborted()) return;
      }
    };
    if (me == 1) wait();
    __threadfence_system();
    other[0] = c;
    if (me == 0) wait();
  }
  lsa::programmatic_release(peers);
}

#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
// Loaded with the library's modules when a communicator is made (core/kernel_preload.hpp): the
// ranks' threads launch these while peers' kernels spin.
[[maybe_unused]] const bool kModuleRegistered =
    detail::register_kernel_module(reinterpret_cast<const void*>(&barriers_kernel<lsa::LsaPolicy>),
                                   "bench/micro/latency_probes.cu");
#endif

}  // namespace

void barriers_only(const lsa::Peers& peers, cudaStream_t stream) {
  lsa::with_policy(peers, [&](const auto& p) {
    lsa::launch(barriers_kernel<std::decay_t<decltype(p)>>, 1, stream, p);
  });
}

void flag_ping_pong(const lsa::Peers& peers, lsa::SymRef flags, cudaStream_t stream) {
  lsa::check_ref(peers, flags, "ping-pong flags");
  lsa::with_policy(peers, [&](const auto& p) {
    lsa::launch(ping_pong_kernel<std::decay_t<decltype(p)>>, 1, stream, p, flags);
  });
}

}  // namespace symmcomm::bench
