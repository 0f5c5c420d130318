// The call descriptor (src/collectives/call.hpp) without a GPU: typed views become one
// TensorRef and back without losing a field; every (operation, counts, dtypes) row symmcomm
// documents exists (it reaches the communicator check), every other one is refused by name
// before anything else; a gather of two FP8 encodings names both.

#include "collectives/call.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "support/tensors.hpp"
#include "symmcomm/error.hpp"

namespace {

using namespace symmcomm;
using detail::Collective;
using detail::CollectiveCall;
using detail::Counts;
using detail::TensorRef;
using test::logic_error_text;

auto* const kBytes = reinterpret_cast<std::uint8_t*>(std::uintptr_t{1} << 20);
auto* const kFloats = reinterpret_cast<float*>(std::uintptr_t{1} << 21);

TensorRef tensor(DataType dtype, std::size_t count = 64) {
  TensorRef t;
  t.dtype = dtype;
  t.data = kBytes;
  t.count = count;
  if (dtype == DataType::Nvfp4) t.block_scales = kBytes + 4096;
  if (dtype != DataType::Bf16 && dtype != DataType::Fp32) t.scales = kFloats;
  return t;
}

TEST(CallDescriptor, TypedViewsRoundTripThroughOneTensorRef) {
  Nvfp4View const v = Nvfp4View{kBytes, kBytes + 64, kFloats, 256}.with_swizzled_scales(128);
  TensorRef const t = detail::tensor_ref(ConstNvfp4View(v));
  Nvfp4View const back = t.nvfp4();
  EXPECT_EQ(back.data, v.data);
  EXPECT_EQ(back.block_scales, v.block_scales);
  EXPECT_EQ(back.global_scale, v.global_scale);
  EXPECT_EQ(back.count, v.count);
  EXPECT_EQ(back.scale_layout, ScaleLayout::Swizzled128x4);
  EXPECT_EQ(back.row_elements, 128u);
  EXPECT_EQ(t.data_bytes(), 128u);
  Fp8View const f{kBytes, kFloats, 32, Fp8Format::E5M2};
  TensorRef const tf = detail::tensor_ref(ConstFp8View(f));
  EXPECT_EQ(tf.dtype, DataType::Fp8E5M2);
  EXPECT_EQ(tf.fp8().format, Fp8Format::E5M2);
  EXPECT_EQ(tf.fp8().scale, kFloats);
  TensorRef const tb = detail::tensor_ref(ConstBf16Span{reinterpret_cast<const bf16*>(kBytes), 8});
  EXPECT_EQ(tb.data_bytes(), 16u);
  EXPECT_EQ(tb.scales, nullptr);
}

TEST(CallDescriptor, OperationNamesSayWhereTheCountsAre) {
  TensorRef const b = tensor(DataType::Bf16);
  std::size_t const counts[1] = {64};
  EXPECT_STREQ(detail::operation_name(detail::gather_call(b, b)), "all_gather");
  EXPECT_STREQ(
      detail::operation_name(detail::with_host_counts(detail::gather_call(b, b), counts, 1)),
      "all_gatherv");
  EXPECT_STREQ(
      detail::operation_name(detail::with_device_counts(detail::reduce_scatter_call(b, b), {}, 8)),
      "reduce_scatterv (device counts)");
  EXPECT_STREQ(
      detail::operation_name(detail::quantize_gather_call(b, tensor(DataType::Nvfp4), nullptr)),
      "quantize_all_gather");
}

// Every documented row reaches the communicator check (an empty one here); device-count rows
// check their arguments first and name one of them instead.
TEST(CallDescriptor, EveryDocumentedRowExists) {
  Communicator const empty;
  struct Case {
    Collective op;
    Counts counts;
    DataType send, recv;
  };
  using D = DataType;
  std::vector<Case> const rows = {
      {Collective::AllGather, Counts::Equal, D::Bf16, D::Bf16},
      {Collective::AllGather, Counts::Equal, D::Fp8E5M2, D::Fp8E5M2},
      {Collective::AllGather, Counts::Equal, D::Nvfp4, D::Nvfp4},
      {Collective::AllGather, Counts::Host, D::Fp8E4M3, D::Fp8E4M3},
      {Collective::AllGather, Counts::Device, D::Nvfp4, D::Nvfp4},
      {Collective::ReduceScatter, Counts::Equal, D::Fp32, D::Fp32},
      {Collective::ReduceScatter, Counts::Equal, D::Nvfp4, D::Nvfp4},
      {Collective::ReduceScatter, Counts::Equal, D::Fp8E4M3, D::Fp32},
      {Collective::ReduceScatter, Counts::Equal, D::Fp8E5M2, D::Fp8E5M2},
      {Collective::ReduceScatter, Counts::Host, D::Nvfp4, D::Bf16},
      {Collective::ReduceScatter, Counts::Device, D::Bf16, D::Bf16},
      {Collective::ReduceScatter, Counts::Device, D::Nvfp4, D::Bf16},
      {Collective::QuantizeAllGather, Counts::Equal, D::Bf16, D::Fp8E4M3},
  };
  std::size_t const counts[1] = {64};
  for (const Case& c : rows) {
    CollectiveCall call;
    call.op = c.op;
    call.send = tensor(c.send);
    call.recv = tensor(c.recv);
    if (c.counts == Counts::Host) call = detail::with_host_counts(call, counts, 1);
    if (c.counts == Counts::Device) call = detail::with_device_counts(call, {}, 16);
    std::string const text =
        logic_error_text([&] { detail::run(empty, call, nullptr, Options{}); });
    // A reduce-scatter may take counts gathered before the call (count null): its first
    // refusal is then the counts array.
    std::string const want = c.counts != Counts::Device ? "comm is empty"
                             : c.op == Collective::AllGather
                                 ? "counts.count is null"
                                 : "counts.counts and counts.offsets must be device arrays";
    EXPECT_NE(text.find(want), std::string::npos) << detail::operation_name(call) << ": " << text;
    EXPECT_EQ(text.find("not supported"), std::string::npos) << text;
  }
}

TEST(CallDescriptor, UndocumentedRowsAreRefusedByNameBeforeTheCommunicator) {
  Communicator const empty;
  auto const refusal = [&](CollectiveCall call) {
    return logic_error_text([&] { detail::run(empty, call, nullptr, Options{}); });
  };
  EXPECT_NE(refusal(detail::reduce_scatter_call(tensor(DataType::Nvfp4), tensor(DataType::Fp8E4M3)))
                .find("reduce_scatter of send nvfp4 into recv fp8e4m3 is not supported"),
            std::string::npos);
  EXPECT_NE(
      refusal(detail::reduce_scatter_call(tensor(DataType::Fp8E4M3), tensor(DataType::Fp8E5M2)))
          .find("reduce_scatter of send fp8e4m3 into recv fp8e5m2 is not supported"),
      std::string::npos);
  std::size_t const counts[1] = {64};
  EXPECT_NE(refusal(detail::with_host_counts(
                        detail::reduce_scatter_call(tensor(DataType::Fp32), tensor(DataType::Fp32)),
                        counts, 1))
                .find("reduce_scatterv of send fp32 into recv fp32 is not supported"),
            std::string::npos);
  EXPECT_NE(refusal(detail::quantize_gather_call(tensor(DataType::Fp32), tensor(DataType::Nvfp4),
                                                 nullptr))
                .find("quantize_all_gather of input fp32 into recv nvfp4 is not supported"),
            std::string::npos);
  // A gather moves one dtype: two FP8 encodings are named, as any other pair.
  EXPECT_NE(refusal(detail::gather_call(tensor(DataType::Fp8E4M3), tensor(DataType::Fp8E5M2)))
                .find("all_gather: send is fp8e4m3, recv fp8e5m2"),
            std::string::npos);
  EXPECT_NE(
      refusal(detail::with_device_counts(
                  detail::gather_call(tensor(DataType::Bf16), tensor(DataType::Nvfp4)), {}, 16))
          .find("all_gatherv (device counts): send is bf16, recv nvfp4"),
      std::string::npos);
}

}  // namespace
