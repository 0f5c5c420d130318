#include "symmcomm/comm/mpi.hpp"

#include <cuda_runtime_api.h>

#include "symmcomm/error.hpp"

namespace symmcomm {
namespace {
void mpi_check(int code, const char* what) {
  if (code != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    SYMMCOMM_FAIL(what << " failed: " << std::string(text, static_cast<std::size_t>(length)));
  }
}
}  // namespace

int mpi_local_rank(MPI_Comm mpi_comm) {
  int world_rank = 0;
  mpi_check(MPI_Comm_rank(mpi_comm, &world_rank), "MPI_Comm_rank");
  MPI_Comm node;
  mpi_check(MPI_Comm_split_type(mpi_comm, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  int local = 0;
  mpi_check(MPI_Comm_rank(node, &local), "MPI_Comm_rank");
  MPI_Comm_free(&node);
  return local;
}

Communicator create_mpi_communicator(MPI_Comm mpi_comm, int device, ncclConfig_t* config) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  SYMMCOMM_EXPECTS(initialized != 0, "create_mpi_communicator: MPI is not initialised");
  int rank = 0, size = 0;
  mpi_check(MPI_Comm_rank(mpi_comm, &rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(mpi_comm, &size), "MPI_Comm_size");
  int const local = mpi_local_rank(mpi_comm);
  int visible = 0;
  cudaError_t const e = cudaGetDeviceCount(&visible);
  SYMMCOMM_EXPECTS(e == cudaSuccess && visible > 0,
                   "create_mpi_communicator: rank " << rank << " sees no CUDA device");
  if (device < 0) device = local % visible;
  SYMMCOMM_EXPECTS(device < visible, "create_mpi_communicator: device "
                                         << device << " is not one of the " << visible
                                         << " visible");
  check_nccl_runtime();
  SYMMCOMM_CUDA_TRY(cudaSetDevice(device));
  ncclUniqueId id;
  if (rank == 0) SYMMCOMM_NCCL_TRY(ncclGetUniqueId(&id));
  mpi_check(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, mpi_comm), "MPI_Bcast of the NCCL id");
  ncclComm_t comm = nullptr;
  if (config != nullptr) {
    SYMMCOMM_NCCL_TRY(ncclCommInitRankConfig(&comm, size, id, rank, config));
  } else {
    SYMMCOMM_NCCL_TRY(ncclCommInitRank(&comm, size, id, rank));
  }
  return Communicator::own(comm, Communicator::Probe::Yes);
}

}  // namespace symmcomm
