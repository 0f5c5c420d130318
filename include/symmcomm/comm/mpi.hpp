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

#include "symmcomm/comm/communicator.hpp"

namespace symmcomm {

/// @brief The rank of this process among the processes of its node (MPI_COMM_TYPE_SHARED).
/// **Collective** over `mpi_comm`.
int mpi_local_rank(MPI_Comm mpi_comm);

/// @brief One NCCL communicator over the processes of `mpi_comm`, rank = MPI rank: rank 0
/// creates the NCCL unique id and broadcasts it with MPI, then every process initialises its
/// rank on `device` (-1: its node-local rank, modulo the visible devices) and probes
/// capabilities. **Collective** over `mpi_comm`; MPI must be initialised.
/// @throws LogicError (no GPU, bad device), NcclError.
Communicator create_mpi_communicator(MPI_Comm mpi_comm, int device = -1,
                                     ncclConfig_t* config = nullptr);

}  // namespace symmcomm
