// symmcomm's abort word (src/comm/abort_word.hpp) reaches a kernel that is already waiting, on
// one GPU and any NCCL line (no communicator needed): a kernel spinning for a flag that never
// comes, polling the word as the LSA kernels do, ends once the host raises it; without the
// word it would still spin. Each communicator gets a word of its own, zeroed.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>

#include "comm/abort_word.hpp"
#include "gpu/abort_wait_kernel.hpp"
#include "support/gpu_test.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm::test {
namespace {

TEST(AbortWord, RaisingItEndsAKernelThatWaitsForAFlagThatNeverComes) {
  SYMMCOMM_REQUIRE_GPU();
  detail::AbortWord const word = detail::take_abort_word();
  ASSERT_NE(word.device, nullptr);
  EXPECT_EQ(*word.host, 0u);
  DeviceArray<std::uint32_t> flag(1);
  DeviceArray<int> outcome(1);
  cudaStream_t stream = nullptr;
  SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  SYMMCOMM_CUDA_TRY(cudaMemsetAsync(flag.get(), 0, sizeof(std::uint32_t), stream));
  SYMMCOMM_CUDA_TRY(cudaMemsetAsync(outcome.get(), 0, sizeof(int), stream));
  launch_wait_for_flag(flag.get(), word.device, outcome.get(), stream);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(cudaStreamQuery(stream), cudaErrorNotReady) << "the kernel did not wait";
  detail::raise_abort(word);
  auto const start = std::chrono::steady_clock::now();
  cudaError_t state = cudaErrorNotReady;
  while (state == cudaErrorNotReady &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    state = cudaStreamQuery(stream);
  }
  if (state != cudaSuccess) {
    // Release the kernel through its flag (a copy on another stream runs beside it), so that
    // the failure is reported instead of the process hanging at exit.
    cudaStream_t other = nullptr;
    SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
    support::upload_value_on(other, flag.get(), std::uint32_t{1});
    SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(other));
    SYMMCOMM_CUDA_TRY(cudaStreamDestroy(other));
    SYMMCOMM_CUDA_TRY(cudaStreamSynchronize(stream));
    SYMMCOMM_CUDA_TRY(cudaStreamDestroy(stream));
    FAIL() << "the kernel still waited 20 s after the word was raised: "
           << cudaGetErrorString(state);
  }
  int got = 0;
  support::copy_on(stream, &got, outcome.get(), sizeof got);
  EXPECT_EQ(got, 2) << "the kernel left, but not through the abort word";
  SYMMCOMM_CUDA_TRY(cudaStreamDestroy(stream));
}

TEST(AbortWord, EveryCommunicatorGetsAZeroedWordOfItsOwn) {
  SYMMCOMM_REQUIRE_GPU();
  detail::AbortWord const a = detail::take_abort_word();
  detail::raise_abort(a);
  detail::AbortWord const b = detail::take_abort_word();
  EXPECT_NE(a.host, b.host);
  EXPECT_EQ(*a.host, 1u);
  EXPECT_EQ(*b.host, 0u);
}

}  // namespace
}  // namespace symmcomm::test
