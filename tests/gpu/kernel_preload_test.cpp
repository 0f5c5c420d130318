// Every symmcomm kernel is loaded on the device once a communicator exists, so that no first,
// lazy load (which may wait for the whole device) falls between ranks of one collective
// (core/kernel_preload.hpp).

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <iostream>
#include <set>
#include <string>

#include "core/kernel_preload.hpp"
#include "support/comm_fixture.hpp"
#include "symmcomm/error.hpp"

namespace {

using namespace symmcomm;
using namespace symmcomm::test;

int unloaded(const std::vector<detail::ModuleLoadState>& modules) {
  int n = 0;
  for (const auto& m : modules) n += m.functions - m.loaded;
  return n;
}

TEST(KernelPreload, EveryKernelOfTheLibraryIsLoadedOnceACommunicatorExists) {
  SYMMCOMM_REQUIRE_GPU();
  int device = 0;
  SYMMCOMM_CUDA_TRY(cudaGetDevice(&device));
  auto const before = detail::kernel_load_state(device);
  Communicator& comm = one_rank_comm();
  ASSERT_EQ(comm.device(), device);
  auto const after = detail::kernel_load_state(device);
  ASSERT_EQ(after.size(), before.size());
  std::set<std::string> modules;
  int functions = 0;
  for (const auto& m : after) {
    modules.insert(m.where);
    functions += m.functions;
    EXPECT_GT(m.functions, 0) << m.where;
    EXPECT_EQ(m.loaded, m.functions)
        << m.where << ": " << m.functions - m.loaded << " kernels not loaded";
  }
  // The modules this program's collectives use (a static symmcomm links only the objects a
  // program reaches: no device-count call here, so no kernels/compact.cu - nor a launch of its
  // kernel).
  for (const char* m : {"formats/codecs.cu", "kernels/lsa.cu", "kernels/lsa_ll.cu"}) {
    EXPECT_EQ(modules.count(m), 1u) << m << " registered no kernel";
  }
  // In a process of its own (ctest) under lazy loading, most were not loaded before.
  std::cout << functions << " kernels in " << after.size() << " modules; " << unloaded(before)
            << " were not loaded before the communicator was made\n";
}

TEST(KernelPreload, TheLoadStateOfADeviceThatDoesNotExistIsAnError) {
  SYMMCOMM_REQUIRE_GPU();
  int count = 0;
  SYMMCOMM_CUDA_TRY(cudaGetDeviceCount(&count));
  EXPECT_THROW(detail::kernel_load_state(count), CudaError);
}

}  // namespace
