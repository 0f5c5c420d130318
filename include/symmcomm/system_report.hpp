#pragma once
/// @file system_report.hpp
/// @brief What symmcomm will do on this machine, for bug reports and first runs (the
/// `symmcomm-info` tool and `python -m symmcomm.info` print it): library and C ABI versions,
/// the CUDA architectures built, CUDA runtime and driver, the NCCL built against and the one
/// loaded, each visible GPU and whether the build has SASS for it, P2P reachability between the
/// GPUs, the environment variables that change symmcomm's or NCCL's behaviour, and for each path
/// what it needs and whether this machine has it.

#include <cstdint>
#include <string>

namespace symmcomm {

/// @brief Text for people, or JSON (schema "symmcomm-info/1") for bug reports and tools.
enum class ReportFormat : std::uint8_t { Text, Json };

/// @brief The report. Never fails for what it cannot learn (no GPU, no driver, no NCCL): the
/// report says what it could not learn and why. With `probe_ranks` = 0 it creates no
/// communicator and allocates no device memory (it initialises the CUDA runtime where a driver
/// is present). With `probe_ranks` >= 1 it also makes that many ranks of one communicator in
/// this process, each on its own thread, on GPU 0 (several ranks share it: NCCL >= 2.30 with
/// NCCL_MULTI_RANK_GPU_ENABLE=1, which the probe sets for this process when unset), reports
/// what each communicator found (symmetric memory, LSA team, SM share, why not) and tears them
/// down: what a run with ranks sharing the GPU would get.
std::string system_report(ReportFormat format = ReportFormat::Text, int probe_ranks = 0);

}  // namespace symmcomm
