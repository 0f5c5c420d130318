#include "core/kernel_preload.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <mutex>
#include <set>
#include <sstream>
#include <string>

#include "core/cuda_utils.hpp"
#include "symmcomm/build_info.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/logging.hpp"

namespace symmcomm::detail {
namespace {

struct Anchor {
  const void* kernel;
  const char* where;
};

// Construct-on-first-use: registrations run from other translation units' static initialisers.
std::vector<Anchor>& anchors() {
  static std::vector<Anchor> list;
  return list;
}
std::mutex& anchors_mutex() {
  static std::mutex m;
  return m;
}

// The driver functions preloading needs (CUDA 12.4), looked up once.
struct Driver {
  PFN_cuFuncGetModule_v11000 func_get_module = nullptr;
  PFN_cuModuleGetFunctionCount_v12040 function_count = nullptr;
  PFN_cuModuleEnumerateFunctions_v12040 enumerate = nullptr;
  PFN_cuFuncIsLoaded_v12040 is_loaded = nullptr;
  PFN_cuFuncLoad_v12040 load = nullptr;
  std::string missing;  // the first entry point the driver lacks, if any
};

template <class Fn>
void lookup(const char* name, unsigned version, Fn& fn, std::string& missing) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  cudaError_t const e =
      cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &found);
  if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || p == nullptr) {
    (void)cudaGetLastError();
    if (missing.empty()) missing = name;
    return;
  }
  fn = reinterpret_cast<Fn>(p);
}

const Driver& driver() {
  static Driver const d = [] {
    Driver r;
    lookup("cuFuncGetModule", 11000, r.func_get_module, r.missing);
    lookup("cuModuleGetFunctionCount", 12040, r.function_count, r.missing);
    lookup("cuModuleEnumerateFunctions", 12040, r.enumerate, r.missing);
    lookup("cuFuncIsLoaded", 12040, r.is_loaded, r.missing);
    lookup("cuFuncLoad", 12040, r.load, r.missing);
    return r;
  }();
  return d;
}

void check(CUresult r, const char* call, const Anchor& a) {
  if (r == CUDA_SUCCESS) return;
  std::ostringstream os;
  os << "loading symmcomm's kernels: " << call << " failed with CUresult " << static_cast<int>(r)
     << " for the module of " << a.where;
  throw CudaError(cudaErrorUnknown, os.str());
}

// The functions of `a`'s module in the current context.
std::vector<CUfunction> module_functions(const Driver& d, const Anchor& a) {
  cudaFunction_t f = nullptr;
  SYMMCOMM_CUDA_TRY(cudaGetFuncBySymbol(&f, a.kernel));
  CUmodule module = nullptr;
  check(d.func_get_module(&module, reinterpret_cast<CUfunction>(f)), "cuFuncGetModule", a);
  unsigned count = 0;
  check(d.function_count(&count, module), "cuModuleGetFunctionCount", a);
  std::vector<CUfunction> functions(count);
  if (count > 0)
    check(d.enumerate(functions.data(), count, module), "cuModuleEnumerateFunctions", a);
  return functions;
}

// Says once per device, before anything loads, when the build has no SASS for it: PTX is
// compiled by the driver at first load (a warning), and a GPU the build has no code for at all
// fails here with the architectures named instead of at the first launch.
void check_device_code(int device) {
  int major = 0, minor = 0;
  SYMMCOMM_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  SYMMCOMM_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  DeviceCode const code = device_code(major, minor);
  if (code == DeviceCode::Sass || code == DeviceCode::Unknown) return;
  cudaDeviceProp prop{};
  SYMMCOMM_CUDA_TRY(cudaGetDeviceProperties(&prop, device));
  std::ostringstream os;
  os << "device " << device << " (" << prop.name << ", sm_" << major << minor
     << "): symmcomm was built for CUDA architectures " << built_cuda_architectures();
  if (code == DeviceCode::None) {
    os << ", none of which this GPU can run; rebuild with -DSYMMCOMM_CUDA_ARCHITECTURES=" << major
       << minor << " (or native)";
    throw CudaError(cudaErrorNoKernelImageForDevice, os.str());
  }
  SYMMCOMM_LOG_WARN(os.str() << " and carries no SASS for it: the driver compiles every symmcomm "
                                "kernel from PTX when it is first loaded (now, for all of them); "
                                "rebuild with -DSYMMCOMM_CUDA_ARCHITECTURES="
                             << major << minor << " (or native) to skip that");
}

std::vector<Anchor> registered() {
  std::lock_guard<std::mutex> lock(anchors_mutex());
  return anchors();
}

}  // namespace

bool register_kernel_module(const void* kernel, const char* where) noexcept {
  try {
    std::lock_guard<std::mutex> lock(anchors_mutex());
    anchors().push_back({kernel, where});
  } catch (...) {  // out of memory at static initialisation: those kernels load lazily
  }
  return true;
}

void preload_kernels(int device) {
  static std::mutex m;
  static std::set<int> done;
  std::lock_guard<std::mutex> lock(m);
  if (done.count(device) != 0) return;
  DeviceGuard guard(device);
  check_device_code(device);
  const Driver& d = driver();
  std::vector<Anchor> const list = registered();
  if (!d.missing.empty()) {
    // A driver older than CUDA 12.4: load the anchors at least, and say what else to do.
    for (const Anchor& a : list) {
      cudaFuncAttributes attr{};
      SYMMCOMM_CUDA_TRY(cudaFuncGetAttributes(&attr, a.kernel));
    }
    SYMMCOMM_LOG_WARN("the CUDA driver lacks "
                      << d.missing << ": symmcomm's kernels load lazily on device " << device
                      << "; with several ranks per process set "
                         "CUDA_MODULE_LOADING=EAGER");
    done.insert(device);
    return;
  }
  int total = 0;
  int loaded_now = 0;
  for (const Anchor& a : list) {
    for (CUfunction f : module_functions(d, a)) {
      CUfunctionLoadingState state = CU_FUNCTION_LOADING_STATE_UNLOADED;
      check(d.is_loaded(&state, f), "cuFuncIsLoaded", a);
      if (state != CU_FUNCTION_LOADING_STATE_LOADED) {
        check(d.load(f), "cuFuncLoad", a);
        ++loaded_now;
      }
      ++total;
    }
  }
  done.insert(device);
  SYMMCOMM_LOG_INFO("device " << device << ": " << total << " symmcomm kernels in " << list.size()
                              << " modules loaded (" << loaded_now << " by this call)");
}

std::vector<ModuleLoadState> kernel_load_state(int device) {
  DeviceGuard guard(device);
  const Driver& d = driver();
  SYMMCOMM_EXPECTS(d.missing.empty(),
                   "kernel_load_state: the CUDA driver lacks " << d.missing << " (CUDA 12.4)");
  std::vector<ModuleLoadState> out;
  for (const Anchor& a : registered()) {
    ModuleLoadState s;
    s.where = a.where;
    for (CUfunction f : module_functions(d, a)) {
      CUfunctionLoadingState state = CU_FUNCTION_LOADING_STATE_UNLOADED;
      check(d.is_loaded(&state, f), "cuFuncIsLoaded", a);
      ++s.functions;
      if (state == CU_FUNCTION_LOADING_STATE_LOADED) ++s.loaded;
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace symmcomm::detail
