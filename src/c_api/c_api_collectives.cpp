// The C ABI's codecs and collectives (symmcomm/c_api.h): thin translations onto the C++ API
// through c_api_internal.hpp.

#include <cstddef>
#include <numeric>
#include <vector>

#include "c_api_internal.hpp"
#include "symmcomm/c_api.h"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/formats/codecs.hpp"

using namespace symmcomm::c_api;

extern "C" {

symmcomm_status_t symmcomm_quantize_nvfp4(const void* src_bf16, const symmcomm_nvfp4_t* dst,
                                          int compute_scale, cudaStream_t stream) {
  return guarded([&] {
    symmcomm::quantize_nvfp4(
        bf16_ptr(src_bf16), view_of(dst, "dst"),
        compute_scale != 0 ? symmcomm::ScaleMode::Compute : symmcomm::ScaleMode::Given, stream);
  });
}

symmcomm_status_t symmcomm_dequantize_nvfp4(const symmcomm_nvfp4_t* src, void* dst_bf16,
                                            cudaStream_t stream) {
  return guarded(
      [&] { symmcomm::dequantize_nvfp4(view_of(src, "src"), bf16_ptr(dst_bf16), stream); });
}

symmcomm_status_t symmcomm_all_gather_bf16(symmcomm_comm_t comm, const void* send, void* recv,
                                           size_t send_count, symmcomm_path_t path,
                                           cudaStream_t stream, int* path_taken) {
  return guarded([&] {
    auto const& c = comm_of(comm);
    report(symmcomm::all_gather(
               c, symmcomm::Bf16Span{bf16_ptr(send), send_count},
               symmcomm::Bf16Span{bf16_ptr(recv), send_count * static_cast<size_t>(c.size())},
               stream, options_of(path)),
           path_taken);
  });
}

symmcomm_status_t symmcomm_quantize_fp8(const void* src_bf16, const symmcomm_fp8_t* dst,
                                        int compute_scale, cudaStream_t stream) {
  return guarded([&] {
    symmcomm::quantize_fp8(
        static_cast<const symmcomm::bf16*>(src_bf16), view_of(dst, "dst"),
        compute_scale != 0 ? symmcomm::ScaleMode::Compute : symmcomm::ScaleMode::Given, stream);
  });
}

symmcomm_status_t symmcomm_dequantize_fp8(const symmcomm_fp8_t* src, void* dst_bf16,
                                          cudaStream_t stream) {
  return guarded(
      [&] { symmcomm::dequantize_fp8(view_of(src, "src"), bf16_ptr(dst_bf16), stream); });
}

}  // extern "C"

namespace {
// Both fused quantize + all-gather entry points (the receive view picks the format).
template <class RecvC>
symmcomm_status_t quantize_all_gather_c(symmcomm_comm_t comm, const void* input_bf16, size_t count,
                                        const RecvC* recv, const float* scale, symmcomm_path_t path,
                                        cudaStream_t stream, int* path_taken) {
  return guarded([&] {
    symmcomm::ConstBf16Span const input{static_cast<const symmcomm::bf16*>(input_bf16), count};
    report(symmcomm::quantize_all_gather(comm_of(comm), input, view_of(recv, "recv"), scale, stream,
                                         options_of(path)),
           path_taken);
  });
}

// Both quantized all_gatherv entry points (the views pick the format).
template <class ViewC>
symmcomm_status_t all_gatherv_c(symmcomm_comm_t comm, const ViewC* send, const ViewC* recv,
                                const size_t* counts, symmcomm_path_t path, cudaStream_t stream,
                                int* path_taken) {
  return guarded([&] {
    auto const& c = comm_of(comm);
    report(symmcomm::all_gatherv(c, view_of(send, "send"), view_of(recv, "recv"),
                                 counts_of(c, counts), stream, options_of(path)),
           path_taken);
  });
}

// The quantized reduce-scatters with an fp32 or re-quantized output.
template <class SendC, class Recv>
symmcomm_status_t reduce_scatter_c(symmcomm_comm_t comm, const SendC* send, Recv recv,
                                   symmcomm_path_t path, cudaStream_t stream, int* path_taken) {
  return guarded([&] {
    report(symmcomm::reduce_scatter(comm_of(comm), view_of(send, "send"), recv(), stream,
                                    options_of(path)),
           path_taken);
  });
}
}  // namespace

extern "C" {

symmcomm_status_t symmcomm_reduce_scatter_nvfp4_fp32(symmcomm_comm_t comm,
                                                     const symmcomm_nvfp4_t* send, float* recv,
                                                     size_t recv_count, symmcomm_path_t path,
                                                     cudaStream_t stream, int* path_taken) {
  return reduce_scatter_c(
      comm, send,
      [&] {
        return symmcomm::Fp32Span{recv, recv_count};
      },
      path, stream, path_taken);
}

symmcomm_status_t symmcomm_reduce_scatter_fp8_fp32(symmcomm_comm_t comm, const symmcomm_fp8_t* send,
                                                   float* recv, size_t recv_count,
                                                   symmcomm_path_t path, cudaStream_t stream,
                                                   int* path_taken) {
  return reduce_scatter_c(
      comm, send,
      [&] {
        return symmcomm::Fp32Span{recv, recv_count};
      },
      path, stream, path_taken);
}

symmcomm_status_t symmcomm_reduce_scatter_nvfp4_nvfp4(symmcomm_comm_t comm,
                                                      const symmcomm_nvfp4_t* send,
                                                      const symmcomm_nvfp4_t* recv,
                                                      symmcomm_path_t path, cudaStream_t stream,
                                                      int* path_taken) {
  return reduce_scatter_c(
      comm, send, [&] { return view_of(recv, "recv"); }, path, stream, path_taken);
}

symmcomm_status_t symmcomm_reduce_scatter_fp8_fp8(symmcomm_comm_t comm, const symmcomm_fp8_t* send,
                                                  const symmcomm_fp8_t* recv, symmcomm_path_t path,
                                                  cudaStream_t stream, int* path_taken) {
  return reduce_scatter_c(
      comm, send, [&] { return view_of(recv, "recv"); }, path, stream, path_taken);
}

symmcomm_status_t symmcomm_quantize_all_gather_nvfp4(symmcomm_comm_t comm, const void* input_bf16,
                                                     size_t count, const symmcomm_nvfp4_t* recv,
                                                     const float* scale, symmcomm_path_t path,
                                                     cudaStream_t stream, int* path_taken) {
  return quantize_all_gather_c(comm, input_bf16, count, recv, scale, path, stream, path_taken);
}

symmcomm_status_t symmcomm_quantize_all_gather_fp8(symmcomm_comm_t comm, const void* input_bf16,
                                                   size_t count, const symmcomm_fp8_t* recv,
                                                   const float* scale, symmcomm_path_t path,
                                                   cudaStream_t stream, int* path_taken) {
  return quantize_all_gather_c(comm, input_bf16, count, recv, scale, path, stream, path_taken);
}

symmcomm_status_t symmcomm_all_gather_fp8(symmcomm_comm_t comm, const symmcomm_fp8_t* send,
                                          const symmcomm_fp8_t* recv, symmcomm_path_t path,
                                          cudaStream_t stream, int* path_taken) {
  return guarded([&] {
    report(symmcomm::all_gather(comm_of(comm), view_of(send, "send"), view_of(recv, "recv"), stream,
                                options_of(path)),
           path_taken);
  });
}

symmcomm_status_t symmcomm_all_gather_nvfp4(symmcomm_comm_t comm, const symmcomm_nvfp4_t* send,
                                            const symmcomm_nvfp4_t* recv, symmcomm_path_t path,
                                            cudaStream_t stream, int* path_taken) {
  return guarded([&] {
    report(symmcomm::all_gather(comm_of(comm), view_of(send, "send"), view_of(recv, "recv"), stream,
                                options_of(path)),
           path_taken);
  });
}

symmcomm_status_t symmcomm_all_gatherv_bf16(symmcomm_comm_t comm, const void* send, void* recv,
                                            const size_t* counts, symmcomm_path_t path,
                                            cudaStream_t stream, int* path_taken) {
  return guarded([&] {
    auto const& c = comm_of(comm);
    std::vector<std::size_t> const n = counts_of(c, counts);
    std::size_t const total = std::accumulate(n.begin(), n.end(), std::size_t{0});
    report(symmcomm::all_gatherv(
               c, symmcomm::Bf16Span{bf16_ptr(send), n[static_cast<size_t>(c.rank())]},
               symmcomm::Bf16Span{bf16_ptr(recv), total}, n, stream, options_of(path)),
           path_taken);
  });
}

symmcomm_status_t symmcomm_all_gatherv_fp8(symmcomm_comm_t comm, const symmcomm_fp8_t* send,
                                           const symmcomm_fp8_t* recv, const size_t* counts,
                                           symmcomm_path_t path, cudaStream_t stream,
                                           int* path_taken) {
  return all_gatherv_c(comm, send, recv, counts, path, stream, path_taken);
}

symmcomm_status_t symmcomm_all_gatherv_nvfp4(symmcomm_comm_t comm, const symmcomm_nvfp4_t* send,
                                             const symmcomm_nvfp4_t* recv, const size_t* counts,
                                             symmcomm_path_t path, cudaStream_t stream,
                                             int* path_taken) {
  return all_gatherv_c(comm, send, recv, counts, path, stream, path_taken);
}

symmcomm_status_t symmcomm_all_gather_nvfp4_swizzled(symmcomm_comm_t comm,
                                                     const symmcomm_nvfp4_t* send,
                                                     const symmcomm_nvfp4_t* recv,
                                                     size_t row_elements, symmcomm_path_t path,
                                                     cudaStream_t stream, int* path_taken) {
  return guarded([&] {
    report(symmcomm::all_gather(comm_of(comm), view_of(send, "send"), view_of(recv, "recv"), stream,
                                swizzled_options(path, row_elements)),
           path_taken);
  });
}

symmcomm_status_t symmcomm_all_gatherv_nvfp4_swizzled(symmcomm_comm_t comm,
                                                      const symmcomm_nvfp4_t* send,
                                                      const symmcomm_nvfp4_t* recv,
                                                      const size_t* counts, size_t row_elements,
                                                      symmcomm_path_t path, cudaStream_t stream,
                                                      int* path_taken) {
  return guarded([&] {
    auto const& c = comm_of(comm);
    report(
        symmcomm::all_gatherv(c, view_of(send, "send"), view_of(recv, "recv"), counts_of(c, counts),
                              stream, swizzled_options(path, row_elements)),
        path_taken);
  });
}

symmcomm_status_t symmcomm_quantize_all_gather_nvfp4_swizzled(
    symmcomm_comm_t comm, const void* input_bf16, size_t count, const symmcomm_nvfp4_t* recv,
    const float* scale, size_t row_elements, symmcomm_path_t path, cudaStream_t stream,
    int* path_taken) {
  return guarded([&] {
    symmcomm::ConstBf16Span const input{static_cast<const symmcomm::bf16*>(input_bf16), count};
    report(symmcomm::quantize_all_gather(comm_of(comm), input, view_of(recv, "recv"), scale, stream,
                                         swizzled_options(path, row_elements)),
           path_taken);
  });
}

symmcomm_status_t symmcomm_reduce_scatter_bf16(symmcomm_comm_t comm, const void* send, void* recv,
                                               size_t recv_count, symmcomm_path_t path,
                                               cudaStream_t stream, int* path_taken) {
  return guarded([&] {
    auto const& c = comm_of(comm);
    report(symmcomm::reduce_scatter(
               c, symmcomm::Bf16Span{bf16_ptr(send), recv_count * static_cast<size_t>(c.size())},
               symmcomm::Bf16Span{bf16_ptr(recv), recv_count}, stream, options_of(path)),
           path_taken);
  });
}

symmcomm_status_t symmcomm_reduce_scatter_nvfp4_bf16(symmcomm_comm_t comm,
                                                     const symmcomm_nvfp4_t* send, void* recv_bf16,
                                                     size_t recv_count, symmcomm_path_t path,
                                                     cudaStream_t stream, int* path_taken) {
  return guarded([&] {
    report(symmcomm::reduce_scatter(comm_of(comm), view_of(send, "send"),
                                    symmcomm::Bf16Span{bf16_ptr(recv_bf16), recv_count}, stream,
                                    options_of(path)),
           path_taken);
  });
}

symmcomm_status_t symmcomm_reduce_scatter_fp8_bf16(symmcomm_comm_t comm, const symmcomm_fp8_t* send,
                                                   void* recv_bf16, size_t recv_count,
                                                   symmcomm_path_t path, cudaStream_t stream,
                                                   int* path_taken) {
  return guarded([&] {
    report(symmcomm::reduce_scatter(comm_of(comm), view_of(send, "send"),
                                    symmcomm::Bf16Span{bf16_ptr(recv_bf16), recv_count}, stream,
                                    options_of(path)),
           path_taken);
  });
}

}  // extern "C"
