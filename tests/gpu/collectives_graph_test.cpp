// Collectives captured in CUDA graphs on a real one-rank NCCL communicator: replay equals eager
// and the host with changing inputs; graphs that captured a communicator are counted and its
// release does not hang.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "comm/comm_state.hpp"
#include "support/comm_fixture.hpp"
#include "support/reference.hpp"
#include "support/tensors.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/formats/codecs.hpp"
#include "symmcomm/logging.hpp"

namespace {

using namespace symmcomm;
using namespace symmcomm::test;

TEST(Collectives, GraphReplayMatchesEagerAndTheHostWithChangingInputs) {
  SYMMCOMM_REQUIRE_GPU();
  Communicator& comm = one_rank_comm();
  std::size_t const n = 16 * 2048;
  DeviceArray<std::uint16_t> input(n), rs_out(n), bf_out(n);
  DeviceNvfp4 quant(n), gathered(n);
  cudaStream_t stream;
  SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto sequence = [&] {
    quantize_nvfp4(reinterpret_cast<const bf16*>(input.get()), quant.view(), ScaleMode::Compute,
                   stream);
    all_gather(comm, quant.view(), gathered.view(), stream);
    reduce_scatter(comm, gathered.view(), Bf16Span{reinterpret_cast<bf16*>(rs_out.get()), n},
                   stream);
    reduce_scatter(comm, Bf16Span{reinterpret_cast<bf16*>(rs_out.get()), n},
                   Bf16Span{reinterpret_cast<bf16*>(bf_out.get()), n}, stream);
  };
  // Eager once (this also sizes the communicator's workspace outside capture).
  input.upload(to_bf16_bits(random_floats(n, 100)));
  sequence();
  SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(stream));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  sequence();
  SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(stream, &graph));
  SYMMCOMM_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 100; ++i) {
    auto const x = to_bf16_bits(
        random_floats(n, 1000 + static_cast<std::uint32_t>(i), 1.0f + static_cast<float>(i)));
    input.upload(x);
    bf_out.poison();
    SYMMCOMM_CUDA_TRY(cudaGraphLaunch(exec, stream));
    SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(stream));
    auto const replayed = bf_out.download();
    bf_out.poison();
    sequence();
    SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(stream));
    ASSERT_EQ(replayed, bf_out.download()) << "replay " << i;
    // And the host: quantize this replay's input, reduce over one rank, round to bf16 (within
    // one bf16 ulp: the device may form the multiplier in another order).
    std::vector<float> xf(n);
    for (std::size_t k = 0; k < n; ++k) xf[k] = bf16_bits_to_float(x[k]);
    auto const ref =
        symmcomm::test::reduce_like_kernel(std::vector<HostNvfp4>{HostNvfp4::quantize(xf)}, 0, n);
    std::size_t off = 0;
    for (std::size_t k = 0; k < n; ++k) {
      off +=
          std::fabs(bf16_bits_to_float(replayed[k]) - ref[k]) <= std::fabs(ref[k]) / 256.0f ? 0 : 1;
    }
    ASSERT_EQ(off, 0u) << "replay " << i << ": elements off the host reference";
  }
  SYMMCOMM_CUDA_TRY(cudaGraphExecDestroy(exec));
  SYMMCOMM_CUDA_TRY(cudaGraphDestroy(graph));
  SYMMCOMM_CUDA_TRY(cudaStreamDestroy(stream));
}

// Polls `done` for up to five seconds (CUDA may run a user object's destructor on its own
// thread after cudaGraphDestroy returns).
template <typename F>
bool eventually(F done) {
  for (int i = 0; i < 500 && !done(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

TEST(Collectives, GraphsThatCapturedACommunicatorAreTrackedAndItsReleaseDoesNotHang) {
  SYMMCOMM_REQUIRE_GPU();
  // An owned communicator of its own: the second half leaks it on purpose.
  auto comms = create_local_communicators({0});
  Communicator comm = std::move(comms.at(0));
  auto const graphs = detail::state_of(comm)->live_graphs;
  std::size_t const n = 4096;
  DeviceArray<std::uint16_t> send(n), recv(n);
  send.upload(to_bf16_bits(random_floats(n, 7)));
  cudaStream_t stream;
  SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto gather = [&] {
    all_gather(comm, ConstBf16Span{reinterpret_cast<const bf16*>(send.get()), n},
               Bf16Span{reinterpret_cast<bf16*>(recv.get()), n}, stream);
  };
  auto capture = [&] {
    cudaGraph_t graph = nullptr;
    SYMMCOMM_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    gather();
    gather();  // two collectives, one graph: one count
    SYMMCOMM_CUDA_TRY(cudaStreamEndCapture(stream, &graph));
    return graph;
  };
  gather();  // eager: no count
  SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(stream));
  EXPECT_EQ(graphs->load(), 0);
  cudaGraph_t first = capture();
  cudaGraph_t second = capture();
  EXPECT_EQ(graphs->load(), 2);
  cudaGraphExec_t exec;
  SYMMCOMM_CUDA_TRY(cudaGraphInstantiate(&exec, first, 0));
  SYMMCOMM_CUDA_TRY(cudaGraphDestroy(first));  // the executable still holds it
  SYMMCOMM_CUDA_TRY(cudaGraphLaunch(exec, stream));
  SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(stream));
  EXPECT_EQ(graphs->load(), 2);
  SYMMCOMM_CUDA_TRY(cudaGraphExecDestroy(exec));
  EXPECT_TRUE(eventually([&] { return graphs->load() == 1; })) << graphs->load();
  // Released while `second` lives: NCCL's destroy would wait for it forever; the release logs
  // why and returns (the NCCL communicator is leaked), and the graph stays valid.
  std::vector<std::string> warnings;
  LogSink previous = set_log_sink([&](LogLevel level, const std::string& text) {
    if (level == LogLevel::Warn) warnings.push_back(text);
  });
  { Communicator gone = std::move(comm); }  // the last reference: the release
  set_log_sink(previous);
  bool said = false;
  for (const std::string& w : warnings) said = said || w.find("CUDA graph(s)") != std::string::npos;
  EXPECT_TRUE(said) << "no warning naming the live graph";
  SYMMCOMM_CUDA_TRY(cudaGraphInstantiate(&exec, second, 0));
  SYMMCOMM_CUDA_TRY(cudaGraphLaunch(exec, stream));
  SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(stream));
  EXPECT_EQ(recv.download(), send.download());
  SYMMCOMM_CUDA_TRY(cudaGraphExecDestroy(exec));
  SYMMCOMM_CUDA_TRY(cudaGraphDestroy(second));
  EXPECT_TRUE(eventually([&] { return graphs->load() == 0; })) << graphs->load();
  SYMMCOMM_CUDA_TRY(cudaStreamDestroy(stream));
}

}  // namespace
