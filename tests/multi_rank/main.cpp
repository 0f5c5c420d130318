// Entry point of the multi-rank tier: picks how ranks share GPUs, makes one communicator and
// pool per process, runs the tests on every rank and agrees on the exit status.
//
// Modes (chosen from the NCCL found at run time, printed by rank 0):
// - one GPU per rank: nothing special;
// - ranks share a GPU, NCCL >= 2.30: NCCL_MULTI_RANK_GPU_ENABLE=1 (real symmetric windows,
//   NCCL's symmetric kernels and symmcomm's LSA kernels under the production policy);
// - ranks share a GPU, NCCL < 2.30: a distinct NCCL_HOSTID per rank (NCCL then sees separate
//   hosts and runs over its socket transport: the fallback path across real ranks).
// Without a GPU every rank prints "SYMMCOMM_SKIP: ..." (ctest reports the test as skipped)
// unless SYMMCOMM_REQUIRE_GPU=1, which makes that a failure.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "multi_rank/world.hpp"
#include "support/skip_policy.hpp"
#include "symmcomm/comm/mpi.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm::test {

namespace {
World* the_world = nullptr;
}  // namespace

World& world() {
  return *the_world;
}

std::vector<PathChoice> paths_to_try(bool nccl_can, bool lsa_can) {
  std::vector<PathChoice> paths = {PathChoice::Auto, PathChoice::Fallback};
  if (nccl_can) paths.push_back(PathChoice::NcclSymmetric);
  if (lsa_can) paths.push_back(PathChoice::LsaKernel);
  return paths;
}

std::vector<int> all_ranks(int mine) {
  std::vector<int> all(static_cast<std::size_t>(world().size));
  MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
  return all;
}

void expect_same_path_everywhere(Path mine, const char* what) {
  std::vector<int> const paths = all_ranks(static_cast<int>(mine));
  for (std::size_t r = 0; r < paths.size(); ++r) {
    EXPECT_EQ(paths[r], static_cast<int>(mine))
        << what << ": rank " << r << " took " << to_string(static_cast<Path>(paths[r])) << ", rank "
        << world().rank << " took " << to_string(mine);
  }
}

namespace {

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string(v) == value;
}

}  // namespace
}  // namespace symmcomm::test

int main(int argc, char** argv) {
  using namespace symmcomm;
  int gpus = 0;
  cudaError_t const e = cudaGetDeviceCount(&gpus);
  if (e != cudaSuccess || gpus == 0) {
    std::string const why = e != cudaSuccess ? cudaGetErrorString(e) : "0 devices";
    if (test::env_is("SYMMCOMM_REQUIRE_GPU", "1")) {
      std::printf(
          "symmcomm multi-rank tests: no usable CUDA device (%s) and "
          "SYMMCOMM_REQUIRE_GPU=1\n",
          why.c_str());
      return 1;
    }
    std::printf("SYMMCOMM_SKIP: the multi-rank tests need a GPU: no usable CUDA device (%s)\n",
                why.c_str());
    return 0;
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int rc = 1;
  {
    test::World world;
    MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world.size);
    try {
      world.mode = share_gpus_if_needed(MPI_COMM_WORLD);
    } catch (const std::exception& ex) {
      std::fprintf(stderr, "rank %d: %s\n", world.rank, ex.what());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    try {
      world.comm = create_mpi_communicator(MPI_COMM_WORLD);
      SYMMCOMM_CUDA_TRY(cudaSetDevice(world.comm.device()));
      SYMMCOMM_CUDA_TRY(cudaStreamCreateWithFlags(&world.stream, cudaStreamNonBlocking));
      world.pool = std::make_unique<SymmAllocator>(world.comm, PoolOptions{256u << 20});
    } catch (const std::exception& ex) {
      std::fprintf(stderr, "rank %d: setting up the world failed: %s\n", world.rank, ex.what());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    test::the_world = &world;
    if (world.rank == 0) {
      const Capabilities& c = world.comm.capabilities();
      std::printf(
          "symmcomm multi-rank tests: %d ranks, %s; NCCL %d.%d.%d loaded; symmetric "
          "memory %s%s%s; LSA team %d, %d rank(s) per GPU, %d SMs per rank\n",
          world.size, world.mode.c_str(), c.runtime_version.major, c.runtime_version.minor,
          c.runtime_version.patch, c.symmetric_memory ? "on" : "off",
          c.symmetric_memory ? "" : ": ", c.symmetric_memory ? "" : c.reason.c_str(),
          c.lsa_team_size, c.ranks_per_gpu, c.lsa_sm_share);
      std::fflush(stdout);
    }
    // Unexpected skips (support/skip_policy.hpp) count as failures in the verdict all ranks share.
    test::exit_on_unexpected_skips(false);
    int const mine = RUN_ALL_TESTS() != 0 || test::unexpected_skips() > 0 ? 1 : 0;
    MPI_Allreduce(&mine, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    // Collective teardown in the same order everywhere: windows, then the communicator.
    world.pool.reset();
    world.comm = Communicator();
    if (world.stream != nullptr) cudaStreamDestroy(world.stream);
    test::the_world = nullptr;
  }
  MPI_Finalize();
  return rc;
}
