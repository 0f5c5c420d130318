// The one argument check of every call (src/collectives/validate_call.hpp) without a GPU: the
// shape rules between send, recv, host counts and device counts, each refused with the argument
// named and its value. The Python package and the C ABI pass these through untouched (their own
// checks stop at what only they know: Python types, devices, the sizes of scale tensors).

#include "collectives/validate_call.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "symmcomm/error.hpp"

namespace {

using namespace symmcomm;
using detail::CollectiveCall;
using detail::TensorRef;

// Aligned stand-in addresses (never dereferenced: validation reads pointers only).
auto* const kBytes = reinterpret_cast<std::uint8_t*>(std::uintptr_t{1} << 20);
auto* const kFloats = reinterpret_cast<float*>(std::uintptr_t{1} << 21);
auto* const kInts = reinterpret_cast<std::int32_t*>(std::uintptr_t{1} << 22);

TensorRef tensor(DataType dtype, std::size_t count) {
  TensorRef t;
  t.dtype = dtype;
  t.data = kBytes;
  t.count = count;
  if (dtype == DataType::Nvfp4) t.block_scales = kBytes + (std::size_t{1} << 16);
  if (dtype != DataType::Bf16 && dtype != DataType::Fp32) t.scales = kFloats;
  return t;
}

// The text validate_call refuses `call` with at `ranks` ranks (this rank `rank`); empty if it
// passes.
std::string refusal(const CollectiveCall& call, int ranks, int rank = 0) {
  try {
    detail::validate_call(call, ranks, rank);
  } catch (const LogicError& e) {
    return e.what();
  }
  return "";
}

TEST(ValidateCall, GathersNameTheCountThatDoesNotAddUp) {
  TensorRef const bf = tensor(DataType::Bf16, 64);
  EXPECT_EQ(refusal(detail::gather_call(bf, tensor(DataType::Bf16, 128)), 2), "");
  EXPECT_NE(refusal(detail::gather_call(bf, tensor(DataType::Bf16, 96)), 2)
                .find("recv.count 96 is not send.count 64 x comm.size() 2"),
            std::string::npos);
  EXPECT_NE(
      refusal(detail::gather_call(tensor(DataType::Nvfp4, 24), tensor(DataType::Nvfp4, 48)), 2)
          .find("send.count 24 is not a multiple of the NVFP4 block size 16"),
      std::string::npos);
  EXPECT_NE(refusal(detail::quantize_gather_call(tensor(DataType::Bf16, 40),
                                                 tensor(DataType::Nvfp4, 80), nullptr),
                    2)
                .find("input.count 40 is not a multiple of 16"),
            std::string::npos);
  EXPECT_NE(refusal(detail::quantize_gather_call(tensor(DataType::Bf16, 32),
                                                 tensor(DataType::Nvfp4, 32), nullptr),
                    2)
                .find("recv.count 32 is not input.count 32 x comm.size() 2"),
            std::string::npos);
}

TEST(ValidateCall, SwizzledRowsAreWholeBlocksAndWholeRows) {
  TensorRef recv = tensor(DataType::Nvfp4, 672);
  recv.scale_layout = ScaleLayout::Swizzled128x4;
  recv.row_elements = 112;
  TensorRef const send = tensor(DataType::Nvfp4, 336);
  EXPECT_EQ(refusal(detail::gather_call(send, recv), 2), "");
  recv.row_elements = 256;
  EXPECT_NE(refusal(detail::gather_call(send, recv), 2)
                .find("recv.count 672 is not whole rows of row_elements 256"),
            std::string::npos);
  recv.row_elements = 100;
  EXPECT_NE(refusal(detail::gather_call(send, recv), 2)
                .find("recv.row_elements 100 is not a positive multiple of 16"),
            std::string::npos);
}

TEST(ValidateCall, HostCountsAreCheckedAgainstBothTensors) {
  TensorRef const send = tensor(DataType::Nvfp4, 32);
  std::size_t const good[2] = {32, 48};
  EXPECT_EQ(refusal(detail::with_host_counts(detail::gather_call(send, tensor(DataType::Nvfp4, 80)),
                                             good, 2),
                    2),
            "");
  // Whole blocks per count: 24 + 8 = 32, so only the counts themselves are wrong.
  std::size_t const odd[3] = {32, 24, 8};
  EXPECT_NE(refusal(detail::with_host_counts(detail::gather_call(send, tensor(DataType::Nvfp4, 64)),
                                             odd, 3),
                    3)
                .find("counts[1] = 24 is not a multiple of 16"),
            std::string::npos);
  std::size_t const other[2] = {16, 48};
  EXPECT_NE(refusal(detail::with_host_counts(detail::gather_call(send, tensor(DataType::Nvfp4, 64)),
                                             other, 2),
                    2)
                .find("send.count 32 differs from counts[0] = 16"),
            std::string::npos);
  EXPECT_NE(refusal(detail::with_host_counts(detail::gather_call(send, tensor(DataType::Nvfp4, 64)),
                                             good, 2),
                    2)
                .find("recv.count 64 differs from the sum of counts 80"),
            std::string::npos);
  EXPECT_NE(refusal(detail::with_host_counts(detail::gather_call(send, tensor(DataType::Nvfp4, 80)),
                                             good, 1),
                    2)
                .find("counts has 1 entries for 2 ranks"),
            std::string::npos);
  // A reduce-scatter's counts are its shards: this rank's is recv, their sum send (rank 1 here).
  TensorRef const bf_send = tensor(DataType::Bf16, 12);
  std::size_t const shards[2] = {5, 7};
  EXPECT_EQ(refusal(detail::with_host_counts(
                        detail::reduce_scatter_call(bf_send, tensor(DataType::Bf16, 7)), shards, 2),
                    2, 1),
            "");
  EXPECT_NE(refusal(detail::with_host_counts(
                        detail::reduce_scatter_call(bf_send, tensor(DataType::Bf16, 5)), shards, 2),
                    2, 1)
                .find("recv.count 5 differs from counts[1] = 7"),
            std::string::npos);
}

TEST(ValidateCall, ReduceScattersNameTheShardRule) {
  EXPECT_EQ(
      refusal(detail::reduce_scatter_call(tensor(DataType::Nvfp4, 64), tensor(DataType::Bf16, 16)),
              4),
      "");
  EXPECT_NE(
      refusal(detail::reduce_scatter_call(tensor(DataType::Nvfp4, 64), tensor(DataType::Bf16, 32)),
              4)
          .find("send.count 64 is not recv.count 32 x comm.size() 4"),
      std::string::npos);
  EXPECT_NE(
      refusal(detail::reduce_scatter_call(tensor(DataType::Fp8E4M3, 16), tensor(DataType::Bf16, 8)),
              2)
          .find("recv.count 8 is not a multiple of 16 (quantized shards"),
      std::string::npos);
  EXPECT_NE(
      refusal(detail::reduce_scatter_call(tensor(DataType::Nvfp4, 24), tensor(DataType::Bf16, 12)),
              2)
          .find("send.count 24 is not a multiple of the NVFP4 block size 16"),
      std::string::npos);
}

TEST(ValidateCall, DeviceCountShapesAreCapacityRows) {
  DeviceCounts counts;
  counts.count = kInts;
  counts.counts = kInts + 4;
  counts.offsets = kInts + 8;
  counts.overflow = kInts + 12;
  counts.capacity = 4;
  // A gather: send holds capacity rows of 32, recv comm.size() times as many.
  auto const gather = [&](std::size_t send, std::size_t recv, std::size_t row) {
    return detail::with_device_counts(
        detail::gather_call(tensor(DataType::Bf16, send), tensor(DataType::Bf16, recv)), counts,
        row);
  };
  EXPECT_EQ(refusal(gather(128, 256, 32), 2), "");
  EXPECT_NE(refusal(gather(64, 128, 32), 2)
                .find("send.count 64 is not counts.capacity 4 x row_elements 32"),
            std::string::npos);
  EXPECT_NE(refusal(gather(128, 128, 32), 2)
                .find("recv.count 128 is not comm.size() 2 x counts.capacity 4 x row_elements 32"),
            std::string::npos);
  // A reduce-scatter the other way round.
  auto const scatter = detail::with_device_counts(
      detail::reduce_scatter_call(tensor(DataType::Bf16, 128), tensor(DataType::Bf16, 64)), counts,
      32);
  EXPECT_NE(refusal(scatter, 2)
                .find("send.count 128 is not comm.size() 2 x counts.capacity 4 x row_elements 32"),
            std::string::npos);
  counts.overflow = nullptr;
  EXPECT_NE(refusal(gather(128, 256, 32), 2).find("counts.overflow is null"), std::string::npos);
}

}  // namespace
