#pragma once
// Private: the executors run() hands a checked call to (call.hpp). Each plans the call once
// (PlannedCall: provenance looked up once, the plan agreed when asked), runs the chosen path
// (plain NCCL, NCCL's symmetric kernels, symmcomm's LSA kernels) and records the plan.

#include <cuda_runtime_api.h>

#include <vector>

// What every executor uses: the call's planning, what the communicator allows, the count
// arithmetic and the scratch.
#include "call.hpp"
#include "call_prerequisites.hpp"
#include "count_arithmetic.hpp"
#include "lsa_args.hpp"
#include "planned_call.hpp"
#include "replay.hpp"
#include "scratch.hpp"

namespace symmcomm::detail {

/// all_gather / all_gatherv with equal or host counts (all_gather.cpp).
Plan execute_gather(CommState& state, const CollectiveCall& call, cudaStream_t stream,
                    const Options& options);
/// reduce_scatter / reduce_scatterv with equal or host counts (reduce_scatter.cpp).
Plan execute_reduce_scatter(CommState& state, const CollectiveCall& call, cudaStream_t stream,
                            const Options& options);
/// quantize_all_gather (quantize_gather.cpp).
Plan execute_quantize_gather(CommState& state, const CollectiveCall& call, cudaStream_t stream,
                             const Options& options);
/// The gather and the reduce-scatter with counts on the device (device_counts.cpp).
Plan execute_device_count_gather(CommState& state, const CollectiveCall& call, cudaStream_t stream,
                                 const Options& options);
Plan execute_device_count_reduce_scatter(CommState& state, const CollectiveCall& call,
                                         cudaStream_t stream, const Options& options);

/// The parts of a typed gather of `send` into `recv` (data; NVFP4 block scales, swizzled where
/// `swizzle`, and global scales; FP8 scales) over `ranks` ranks, with counts[r] elements from
/// rank r, or send.count from every rank where `counts` is null.
std::vector<GatherPart> tensor_parts(const TensorRef& send, const TensorRef& recv,
                                     std::size_t ranks, const std::size_t* counts,
                                     const SwizzledScales* swizzle);

/// Enqueues `parts` on the path `planned` decided, without recording the plan: the gather
/// executor's body, and the second half of a quantize_all_gather that did not fuse (the parts
/// of its quantized copy). Swizzled parts on NCCL's paths go through workspace from `options`.
/// On symmcomm's LSA path the enqueue is one launch, which `launched` (when not null) is set
/// to (replay.hpp); elsewhere it is left as it was.
void enqueue_gather(CommState& state, const PlannedCall& planned,
                    const std::vector<GatherPart>& parts, cudaStream_t stream,
                    const Options& options, ReplayLaunch* launched = nullptr);

/// Enqueues the fallback of an equal-count reduce-scatter of `call` (checked, not planned: the
/// caller's plan chose the fallback): NCCL's sum for BF16/FP32, else the quantized all-to-all
/// and fp32 reduction. The device-count reduce-scatter's second half.
void enqueue_reduce_scatter_fallback(CommState& state, const CollectiveCall& call,
                                     cudaStream_t stream, const Options& options,
                                     const PlannedCall& planned);

}  // namespace symmcomm::detail
