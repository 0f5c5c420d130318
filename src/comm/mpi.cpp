#include "symmcomm/comm/mpi.hpp"

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <string>

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

namespace {
// This process's rank among the processes of its node, and how many there are.
struct NodePlace {
  int rank = 0;
  int size = 1;
};
NodePlace node_place(MPI_Comm mpi_comm) {
  int world_rank = 0;
  mpi_check(MPI_Comm_rank(mpi_comm, &world_rank), "MPI_Comm_rank");
  MPI_Comm node;
  mpi_check(MPI_Comm_split_type(mpi_comm, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  NodePlace place;
  mpi_check(MPI_Comm_rank(node, &place.rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(node, &place.size), "MPI_Comm_size");
  MPI_Comm_free(&node);
  return place;
}
}  // namespace

int mpi_local_rank(MPI_Comm mpi_comm) {
  return node_place(mpi_comm).rank;
}

std::string share_gpus_if_needed(MPI_Comm mpi_comm) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  SYMMCOMM_EXPECTS(initialized != 0, "share_gpus_if_needed: MPI is not initialised");
  int rank = 0;
  mpi_check(MPI_Comm_rank(mpi_comm, &rank), "MPI_Comm_rank");
  int const local_size = node_place(mpi_comm).size;
  int gpus = 0;
  cudaError_t const e = cudaGetDeviceCount(&gpus);
  SYMMCOMM_EXPECTS(e == cudaSuccess && gpus > 0, "share_gpus_if_needed: rank "
                                                     << rank << " sees no CUDA device ("
                                                     << cudaGetErrorString(e) << ")");
  if (local_size <= gpus) return "one GPU per rank";
  setenv("NCCL_NVLS_ENABLE", "0", 1);  // no NVLink multicast with ranks sharing a GPU
  std::string const sharing =
      std::to_string(local_size) + " ranks share " + std::to_string(gpus) + " GPU(s): ";
  int version = 0;
  SYMMCOMM_NCCL_TRY(ncclGetVersion(&version));
  if (version >= 23000) {
    setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 0);
    // Measured with NCCL 2.30.7 and 2 ranks on one H200: ncclSend/ncclRecv on the SIMPLE
    // protocol never complete in this mode (a 32 KiB FP8 shard exchange hangs; the same with
    // NCCL_P2P_LL_THRESHOLD=1 GiB passes, and NCCL_PROTO=Simple makes 16 KiB hang too). Keep
    // point-to-point traffic on LL while ranks share a GPU.
    setenv("NCCL_P2P_LL_THRESHOLD", "1073741824", 0);
    return sharing + "NCCL_MULTI_RANK_GPU_ENABLE=1, NCCL_P2P_LL_THRESHOLD=1073741824";
  }
  std::string const host = "symmcomm-rank-" + std::to_string(rank);
  setenv("NCCL_HOSTID", host.c_str(), 0);
  setenv("NCCL_SOCKET_IFNAME", "lo", 0);
  return sharing + "one NCCL_HOSTID per rank (socket transport, no symmetric memory)";
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
