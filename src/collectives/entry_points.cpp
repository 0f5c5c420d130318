// symmcomm's typed collective overloads (all_gather.hpp, reduce_scatter.hpp,
// device_counts.hpp): each describes its call once (call.hpp) and hands it to run().

#include "call.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/device_counts.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"

namespace symmcomm {
namespace {

using detail::run;
using detail::tensor_ref;

template <class Send, class Recv>
detail::CollectiveCall gather(const Send& send, const Recv& recv) {
  return detail::gather_call(tensor_ref(send), tensor_ref(recv));
}
template <class Send, class Recv>
detail::CollectiveCall scatter(const Send& send, const Recv& recv) {
  return detail::reduce_scatter_call(tensor_ref(send), tensor_ref(recv));
}
detail::CollectiveCall host(detail::CollectiveCall call, const std::vector<std::size_t>& counts) {
  return detail::with_host_counts(call, counts.data(), counts.size());
}
detail::CollectiveCall device(detail::CollectiveCall call, std::size_t row_elements,
                              const DeviceCounts& counts,
                              const std::vector<RowItem>* items = nullptr) {
  call = detail::with_device_counts(call, counts, row_elements);
  if (items != nullptr) {
    call.row_items = items->data();
    call.row_item_count = items->size();
  }
  return call;
}

}  // namespace

// ---- all_gather / all_gatherv (host counts) ---------------------------------------------------

Plan all_gather(const Communicator& comm, ConstBf16Span send, Bf16Span recv, cudaStream_t stream,
                const Options& options) {
  return run(comm, gather(send, recv), stream, options);
}
Plan all_gather(const Communicator& comm, ConstFp8View send, Fp8View recv, cudaStream_t stream,
                const Options& options) {
  return run(comm, gather(send, recv), stream, options);
}
Plan all_gather(const Communicator& comm, ConstNvfp4View send, Nvfp4View recv, cudaStream_t stream,
                const Options& options) {
  return run(comm, gather(send, recv), stream, options);
}
Plan all_gather(const Communicator& comm, ConstNvfp4View send, Nvfp4View recv,
                const std::vector<GatherItem>& extras, cudaStream_t stream,
                const Options& options) {
  detail::CollectiveCall call = gather(send, recv);
  call.items = extras.data();
  call.item_count = extras.size();
  return run(comm, call, stream, options);
}
Plan all_gather(const Communicator& comm, const std::vector<GatherItem>& items, cudaStream_t stream,
                const Options& options) {
  detail::CollectiveCall call;
  call.items_only = true;
  call.items = items.data();
  call.item_count = items.size();
  return run(comm, call, stream, options);
}
Plan all_gatherv(const Communicator& comm, ConstBf16Span send, Bf16Span recv,
                 const std::vector<std::size_t>& counts, cudaStream_t stream,
                 const Options& options) {
  return run(comm, host(gather(send, recv), counts), stream, options);
}
Plan all_gatherv(const Communicator& comm, ConstFp8View send, Fp8View recv,
                 const std::vector<std::size_t>& counts, cudaStream_t stream,
                 const Options& options) {
  return run(comm, host(gather(send, recv), counts), stream, options);
}
Plan all_gatherv(const Communicator& comm, ConstNvfp4View send, Nvfp4View recv,
                 const std::vector<std::size_t>& counts, cudaStream_t stream,
                 const Options& options) {
  return run(comm, host(gather(send, recv), counts), stream, options);
}

// ---- quantize_all_gather ----------------------------------------------------------------------

Plan quantize_all_gather(const Communicator& comm, ConstBf16Span input, Nvfp4View recv,
                         const float* global_scale, cudaStream_t stream, const Options& options) {
  return run(comm, detail::quantize_gather_call(tensor_ref(input), tensor_ref(recv), global_scale),
             stream, options);
}
Plan quantize_all_gather(const Communicator& comm, ConstBf16Span input, Fp8View recv,
                         const float* scale, cudaStream_t stream, const Options& options) {
  return run(comm, detail::quantize_gather_call(tensor_ref(input), tensor_ref(recv), scale), stream,
             options);
}

// ---- reduce_scatter / reduce_scatterv (host counts) -------------------------------------------

Plan reduce_scatter(const Communicator& comm, ConstBf16Span send, Bf16Span recv,
                    cudaStream_t stream, const Options& options) {
  return run(comm, scatter(send, recv), stream, options);
}
Plan reduce_scatter(const Communicator& comm, ConstFp32Span send, Fp32Span recv,
                    cudaStream_t stream, const Options& options) {
  return run(comm, scatter(send, recv), stream, options);
}
Plan reduce_scatter(const Communicator& comm, ConstNvfp4View send, Bf16Span recv,
                    cudaStream_t stream, const Options& options) {
  return run(comm, scatter(send, recv), stream, options);
}
Plan reduce_scatter(const Communicator& comm, ConstNvfp4View send, Fp32Span recv,
                    cudaStream_t stream, const Options& options) {
  return run(comm, scatter(send, recv), stream, options);
}
Plan reduce_scatter(const Communicator& comm, ConstNvfp4View send, Nvfp4View recv,
                    cudaStream_t stream, const Options& options) {
  return run(comm, scatter(send, recv), stream, options);
}
Plan reduce_scatter(const Communicator& comm, ConstFp8View send, Bf16Span recv, cudaStream_t stream,
                    const Options& options) {
  return run(comm, scatter(send, recv), stream, options);
}
Plan reduce_scatter(const Communicator& comm, ConstFp8View send, Fp32Span recv, cudaStream_t stream,
                    const Options& options) {
  return run(comm, scatter(send, recv), stream, options);
}
Plan reduce_scatter(const Communicator& comm, ConstFp8View send, Fp8View recv, cudaStream_t stream,
                    const Options& options) {
  return run(comm, scatter(send, recv), stream, options);
}
Plan reduce_scatterv(const Communicator& comm, ConstBf16Span send, Bf16Span recv,
                     const std::vector<std::size_t>& counts, cudaStream_t stream,
                     const Options& options) {
  return run(comm, host(scatter(send, recv), counts), stream, options);
}
Plan reduce_scatterv(const Communicator& comm, ConstNvfp4View send, Bf16Span recv,
                     const std::vector<std::size_t>& counts, cudaStream_t stream,
                     const Options& options) {
  return run(comm, host(scatter(send, recv), counts), stream, options);
}
Plan reduce_scatterv(const Communicator& comm, ConstFp8View send, Bf16Span recv,
                     const std::vector<std::size_t>& counts, cudaStream_t stream,
                     const Options& options) {
  return run(comm, host(scatter(send, recv), counts), stream, options);
}

// ---- counts on the device ---------------------------------------------------------------------

Plan all_gatherv(const Communicator& comm, ConstBf16Span send, Bf16Span recv,
                 std::size_t row_elements, const DeviceCounts& counts, cudaStream_t stream,
                 const Options& options) {
  return run(comm, device(gather(send, recv), row_elements, counts), stream, options);
}
Plan all_gatherv(const Communicator& comm, ConstFp8View send, Fp8View recv,
                 std::size_t row_elements, const DeviceCounts& counts, cudaStream_t stream,
                 const Options& options) {
  return run(comm, device(gather(send, recv), row_elements, counts), stream, options);
}
Plan all_gatherv(const Communicator& comm, ConstNvfp4View send, Nvfp4View recv,
                 std::size_t row_elements, const DeviceCounts& counts, cudaStream_t stream,
                 const Options& options) {
  return run(comm, device(gather(send, recv), row_elements, counts), stream, options);
}
Plan all_gatherv(const Communicator& comm, ConstBf16Span send, Bf16Span recv,
                 std::size_t row_elements, const std::vector<RowItem>& items,
                 const DeviceCounts& counts, cudaStream_t stream, const Options& options) {
  return run(comm, device(gather(send, recv), row_elements, counts, &items), stream, options);
}
Plan all_gatherv(const Communicator& comm, ConstNvfp4View send, Nvfp4View recv,
                 std::size_t row_elements, const std::vector<RowItem>& items,
                 const DeviceCounts& counts, cudaStream_t stream, const Options& options) {
  return run(comm, device(gather(send, recv), row_elements, counts, &items), stream, options);
}
Plan reduce_scatterv(const Communicator& comm, ConstBf16Span send, Bf16Span recv,
                     std::size_t row_elements, const DeviceCounts& counts, cudaStream_t stream,
                     const Options& options) {
  return run(comm, device(scatter(send, recv), row_elements, counts), stream, options);
}
Plan reduce_scatterv(const Communicator& comm, ConstNvfp4View send, Bf16Span recv,
                     std::size_t row_elements, const DeviceCounts& counts, cudaStream_t stream,
                     const Options& options) {
  return run(comm, device(scatter(send, recv), row_elements, counts), stream, options);
}

}  // namespace symmcomm
