#pragma once
// Private to symmcomm (and its own tests, which add src/ to their include path).
/// @file kernel_preload.hpp
/// @brief Loads every symmcomm kernel onto a device before any collective can wait on a peer.
///
/// Since CUDA 12.2 kernels load lazily: the first launch of each one loads it, and loading may
/// synchronise the whole context (CUDA Programming Guide, "Lazy Loading", potential hazards:
/// concurrent execution). With several ranks in one process sharing a GPU, a rank whose first
/// launch of a kernel waits for the context to drain, while a peer's collective kernel spins
/// for that rank's part of the collective, never returns; the other rank threads then queue
/// behind the driver lock it holds (e.g. one rank thread in cuLaunchKernel of a kernel's first
/// launch while NCCL's symmetric all-gather kernel spins on the GPU for that rank). NCCL loads its
/// own kernels when a communicator is made; every communicator symmcomm makes or wraps calls
/// preload_kernels() for its device, so symmcomm's are loaded too.
///
/// Each translation unit with kernels is a module of its own (the library is compiled without
/// device linking) and registers one of its kernels at static initialisation; preloading
/// enumerates the functions of each registered module and loads them (cuModuleEnumerateFunctions
/// and cuFuncLoad, CUDA 12.4 drivers and later, reached through cudaGetDriverEntryPointByVersion
/// so that the library does not link libcuda).

#include <vector>

namespace symmcomm::detail {

/// Records `kernel` (a `__global__` function's host address) as the anchor of its module;
/// `where` names the source file for messages. Called from static initialisers; returns true.
bool register_kernel_module(const void* kernel, const char* where) noexcept;

/// What one module holds on a device.
struct ModuleLoadState {
  const char* where = "";  ///< the registering source file
  int functions = 0;       ///< kernels in the module
  int loaded = 0;          ///< of which loaded on the device
};

/// Loads every function of every registered module onto `device`; does the work once per
/// device and process (later calls return at once). May wait for work already running on the
/// device (loading can synchronise the context), so it belongs before a collective, not in one.
/// Throws CudaError when the driver cannot enumerate or load a module's functions.
void preload_kernels(int device);

/// The registered modules and how many of their functions are loaded on `device`, without
/// loading anything (tests and diagnostics).
std::vector<ModuleLoadState> kernel_load_state(int device);

}  // namespace symmcomm::detail
