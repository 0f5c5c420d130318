#pragma once
// Private: symmcomm's one-launch BF16 and NVFP4 -> BF16 reduce-scatter with this rank's shard
// size on the device (lsa.hpp, DeviceCountsReduceArgs) and its launch body, a template over the
// peer description as in lsa_launchers.cuh (production: lsa_device_counts_reduce.cu; loopback: the
// testing library).

#include <cuda_bf16.h>

#include <cstdint>
#include <type_traits>

#include "formats/device_codecs.cuh"
#include "lsa.hpp"
#include "lsa_counts.cuh"
#include "lsa_launch.cuh"
#include "lsa_policy.cuh"
#include "lsa_reduce.cuh"
#include "symmcomm/error.hpp"

namespace symmcomm::detail::lsa {

// Adds the 8 bf16 of `v` to `acc` (exact conversions, fp32 adds).
__device__ __forceinline__ void add_bf16x8(float (&acc)[8], const uint4& v) {
  std::uint32_t const w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    acc[2 * k] += bf16_lo(w[k]);
    acc[2 * k + 1] += bf16_hi(w[k]);
  }
}

// NVFP4 rows: one 16-element block per item (8 code bytes and one scale code from each peer),
// summed in rank order with the pull kernel's accumulate(), so the two kernels agree bit for
// bit; out's rows past this rank's count are written as 0.
template <class P>
__device__ __forceinline__ void reduce_nvfp4_rows(const P& peers, const DeviceCountsReduceArgs& a,
                                                  const CountPrefix& prefix) {
  __shared__ const std::uint8_t* codes[kMaxRanks];
  __shared__ const std::uint8_t* scales[kMaxRanks];
  __shared__ float mult[kMaxRanks];
  int const n = peers.size();
  std::size_t const first = static_cast<std::size_t>(prefix.first) * a.row_elements;
  for (int p = static_cast<int>(threadIdx.x); p < n; p += static_cast<int>(blockDim.x)) {
    codes[p] = reinterpret_cast<const std::uint8_t*>(peers.ptr(a.send, p)) + first / 2;
    scales[p] = reinterpret_cast<const std::uint8_t*>(peers.ptr(a.block_scales, p)) +
                first / kNvfp4BlockSize;
    // 2^14 / global scale: the decoder's values are 2^-14 scaled (lsa_reduce.cuh).
    mult[p] = 16384.0f / *reinterpret_cast<const float*>(peers.ptr(a.scale, p));
  }
  __syncthreads();
  std::size_t const items = static_cast<std::size_t>(prefix.mine) * a.row_elements / 16;
  std::size_t const all = a.capacity * a.row_elements / 16;
  for (std::size_t i = global_thread(); i < all; i += grid_threads()) {
    float acc[16] = {};
    if (i < items) {
      for (int p = 0; p < n; ++p) {
        accumulate<true, 8>(load_item<true, 8>(codes[p], scales[p], i), mult[p], Fp8Format::E4M3,
                            acc);
      }
    }
    store_floats<16>(a.out, i * 16, acc);
  }
}

template <class P>
__global__ void __launch_bounds__(kThreads)
    device_counts_reduce_kernel(const __grid_constant__ P peers,
                                const __grid_constant__ DeviceCountsReduceArgs a) {
  programmatic_wait(peers);
  __shared__ const char* src[kMaxRanks];
  __shared__ CountPrefix prefix;
  int const n = peers.size();
  if (!peers.barrier()) return;  // peers' send rows complete, their counts arrays free
  if (!exchange_counts(peers, a)) return;
  count_prefix(peers, a, prefix);
  if (a.type == DataType::Nvfp4) {
    __syncthreads();
    reduce_nvfp4_rows(peers, a, prefix);
    if (!peers.barrier()) return;  // every peer has read this rank's rows
    programmatic_release(peers);
    return;
  }
  for (int p = static_cast<int>(threadIdx.x); p < n; p += static_cast<int>(blockDim.x)) {
    src[p] = peers.ptr(a.send, p);
  }
  __syncthreads();
  // This rank's rows start at element `first` of every peer's send; `mine` elements are summed,
  // the rest of out's capacity rows written as 0.
  std::size_t const first = static_cast<std::size_t>(prefix.first) * a.row_elements;
  std::size_t const mine = static_cast<std::size_t>(prefix.mine) * a.row_elements;
  std::size_t const room = a.capacity * a.row_elements;
  if (a.vector) {
    std::size_t const items = mine / 8, all = room / 8;  // rows are whole 8-element items
    auto* out = reinterpret_cast<uint4*>(a.out);
    for (std::size_t i = global_thread(); i < all; i += grid_threads()) {
      uint4 r = make_uint4(0, 0, 0, 0);
      if (i < items) {
        float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
        for (int p = 0; p < n; ++p) {
          add_bf16x8(acc, reinterpret_cast<const uint4*>(src[p] + first * sizeof(bf16))[i]);
        }
        r = make_uint4(pack_bf16x2(acc[0], acc[1]), pack_bf16x2(acc[2], acc[3]),
                       pack_bf16x2(acc[4], acc[5]), pack_bf16x2(acc[6], acc[7]));
      }
      out[i] = r;
    }
  } else {
    auto* out = reinterpret_cast<std::uint16_t*>(a.out);
    for (std::size_t i = global_thread(); i < room; i += grid_threads()) {
      std::uint16_t r = 0;
      if (i < mine) {
        float acc = 0.f;
        for (int p = 0; p < n; ++p) {
          acc += __uint_as_float(static_cast<std::uint32_t>(reinterpret_cast<const std::uint16_t*>(
                                     src[p] + first * sizeof(bf16))[i])
                                 << 16);
        }
        r = __bfloat16_as_ushort(__float2bfloat16_rn(acc));
      }
      out[i] = r;
    }
  }
  if (!peers.barrier()) return;  // every peer has read this rank's send
  programmatic_release(peers);
}

template <class Desc>
void launch_device_counts_reduce(const Desc& peers, const DeviceCountsReduceArgs& args,
                                 cudaStream_t stream) {
  check_device_counts(peers, args, "lsa device-count reduce");
  SYMMCOMM_EXPECTS(args.row_elements > 0, "lsa device-count reduce: row_elements is 0");
  SYMMCOMM_EXPECTS(args.out != nullptr || args.capacity == 0,
                   "lsa device-count reduce: out is null");
  check_ref(peers, args.send, "send.data");
  std::uintptr_t const send_bits = address_bits(peers, args.send);
  DeviceCountsReduceArgs a = args;
  if (a.type == DataType::Nvfp4) {
    SYMMCOMM_EXPECTS(a.row_elements % kNvfp4BlockSize == 0,
                     "lsa device-count reduce: row_elements "
                         << a.row_elements << " is not whole NVFP4 blocks of 16");
    check_ref(peers, a.block_scales, "send.block_scales");
    check_ref(peers, a.scale, "send.global_scale");
    SYMMCOMM_EXPECTS(send_bits % 8 == 0, "lsa device-count reduce: send.data at offset "
                                             << a.send.offset << " is not 8-byte aligned");
    SYMMCOMM_EXPECTS(address_bits(peers, a.scale) % 4 == 0,
                     "lsa device-count reduce: send.global_scale at offset "
                         << a.scale.offset << " is not 4-byte aligned");
    SYMMCOMM_EXPECTS(reinterpret_cast<std::uintptr_t>(a.out) % 16 == 0,
                     "lsa device-count reduce: out is not 16-byte aligned");
  } else {
    SYMMCOMM_EXPECTS(a.type == DataType::Bf16, "lsa device-count reduce: rows of "
                                                   << to_string(a.type) << " (bf16 or nvfp4)");
    SYMMCOMM_EXPECTS(send_bits % sizeof(bf16) == 0, "lsa device-count reduce: send.data at offset "
                                                        << a.send.offset
                                                        << " is not 2-byte aligned");
    // Every row offset is a multiple of 8 elements (16 bytes) when rows are: 16-byte items then.
    a.vector = a.row_elements % 8 == 0 && send_bits % 16 == 0 &&
               reinterpret_cast<std::uintptr_t>(a.out) % 16 == 0;
  }
  unsigned const grid = grid_for_units(a.grid_bytes / 16, grid_cap(peers, kCtasPerSm));
  with_policy(peers, [&](const auto& p) {
    auto* kernel = device_counts_reduce_kernel<std::decay_t<decltype(p)>>;
    launch_resident(kernel, peers.share, grid, stream, p, a);
  });
}

}  // namespace symmcomm::detail::lsa
