// MPI factory of communicators, run as an MPI singleton (or under mpirun): one rank per process.

#include <gtest/gtest.h>
#include <mpi.h>

#include "support/gpu_test.hpp"
#include "symmcomm/comm/mpi.hpp"
#include "symmcomm/memory/symm_allocator.hpp"
#include "symmcomm/memory/verify.hpp"

namespace {

using namespace symmcomm;

TEST(Mpi, CommunicatorOverMpiWorld) {
  SYMMCOMM_REQUIRE_GPU();
  int world_rank = 0, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  int visible = symmcomm::test::gpu_count();
  if (world_size > visible) GTEST_SKIP() << world_size << " processes but " << visible << " GPUs";
  Communicator comm = create_mpi_communicator(MPI_COMM_WORLD);
  EXPECT_EQ(comm.rank(), world_rank);
  EXPECT_EQ(comm.size(), world_size);
  EXPECT_EQ(comm.device(), mpi_local_rank(MPI_COMM_WORLD) % visible);
  EXPECT_TRUE(comm.capabilities().probed);
  SymmAllocator pool(comm, PoolOptions{1 << 20});
  void* p = pool.allocate(4096);
  EXPECT_NO_THROW(verify_symmetric(comm));
  pool.deallocate(p);
}

TEST(Mpi, BadDeviceIsRefused) {
  SYMMCOMM_REQUIRE_GPU();
  EXPECT_THROW(create_mpi_communicator(MPI_COMM_WORLD, 4096), LogicError);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int const rc = RUN_ALL_TESTS();
  MPI_Finalize();
  return rc;
}
