#pragma once
/// @file mpi.hpp
/// @brief Communicators across processes launched by MPI (Open MPI's mpirun is symmcomm's
/// launcher across processes and nodes; there is no home-made bootstrap). Available when
/// symmcomm is built with `-DSYMMCOMM_WITH_MPI=ON`.

#if !defined(SYMMCOMM_WITH_MPI)
#error "symmcomm/comm/mpi.hpp needs symmcomm built with -DSYMMCOMM_WITH_MPI=ON"
#endif

#include <mpi.h>
#include <nccl.h>

#include <string>

#include "symmcomm/comm/communicator.hpp"

namespace symmcomm {

/// @brief The rank of this process among the processes of its node (MPI_COMM_TYPE_SHARED).
/// **Collective** over `mpi_comm`.
int mpi_local_rank(MPI_Comm mpi_comm);

/// @brief Lets more ranks than GPUs run on a node, for testing and benchmarking multi-rank code
/// on a machine with fewer GPUs. When this node runs more processes of `mpi_comm` than it has
/// visible GPUs, sets (without overriding what the user set) the NCCL environment that makes
/// ranks share a GPU, chosen from the NCCL loaded:
/// - NCCL >= 2.30: `NCCL_MULTI_RANK_GPU_ENABLE=1` (experimental in NCCL): real symmetric
///   windows, NCCL's symmetric kernels and symmcomm's LSA kernels; NCCL fits 2 ranks per GPU
///   with its defaults, more run slower. Also `NCCL_P2P_LL_THRESHOLD=1073741824`: in this mode
///   NCCL 2.30.7's send/recv hang on the SIMPLE protocol (measured), LL works;
/// - older NCCL: a distinct `NCCL_HOSTID` per rank and `NCCL_SOCKET_IFNAME=lo` (NCCL then sees
///   separate hosts and uses its socket transport: no symmetric memory, the fallback path).
/// Always sets `NCCL_NVLS_ENABLE=0` when ranks share a GPU. Call before creating communicators.
/// **Collective** over `mpi_comm`; MPI must be initialised.
/// @return how ranks use GPUs here, e.g. "2 ranks share 1 GPU(s): NCCL_MULTI_RANK_GPU_ENABLE=1"
/// or "one GPU per rank".
std::string share_gpus_if_needed(MPI_Comm mpi_comm);

/// @brief One NCCL communicator over the processes of `mpi_comm`, rank = MPI rank: rank 0
/// creates the NCCL unique id and broadcasts it with MPI, then every process initialises its
/// rank on `device` (-1: its node-local rank, modulo the visible devices) and probes
/// capabilities. **Collective** over `mpi_comm`; MPI must be initialised.
/// @throws LogicError (no GPU, bad device), NcclError.
Communicator create_mpi_communicator(MPI_Comm mpi_comm, int device = -1,
                                     ncclConfig_t* config = nullptr);

}  // namespace symmcomm
