// symmcomm's machine report (symmcomm/system_report.hpp): facts gathered once, then written as
// text or JSON. Everything that cannot be learnt (no driver, no GPU, no NCCL) becomes a note in
// the report instead of an error.

#include "symmcomm/system_report.hpp"

#include <cuda_runtime_api.h>
#include <link.h>
#include <nccl.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "symmcomm/build_info.hpp"
#include "symmcomm/c_api.h"
#include "symmcomm/comm/communicator.hpp"
#include "symmcomm/limits.hpp"
#include "symmcomm/runtime.hpp"
#include "symmcomm/version.hpp"
#include "tools/json_writer.hpp"

extern char** environ;

namespace symmcomm {
namespace {

// Variables that change what symmcomm or NCCL do here, reported set or unset.
constexpr const char* kNamedVariables[] = {
    "SYMMCOMM_LOG",     "SYMMCOMM_LSA_LL",      "SYMMCOMM_LL_COUNTS",
    "SYMMCOMM_LSA_PDL", "SYMMCOMM_AGREE_PLANS", "SYMMCOMM_WAIT_TIMEOUT_S",
    "SYMMCOMM_LIBRARY", "NCCL_NVLS_ENABLE",     "NCCL_MULTI_RANK_GPU_ENABLE",
    "NCCL_HOSTID",      "NCCL_MAX_CTAS",        "NCCL_P2P_DISABLE",
    "NCCL_DEBUG",       "CUDA_VISIBLE_DEVICES", "CUDA_MODULE_LOADING"};

struct Gpu {
  int index = 0;
  std::string name;
  int major = 0, minor = 0, sms = 0;
  long long memory_bytes = 0;
  DeviceCode code = DeviceCode::Unknown;
};

struct PathRow {
  const char* name;
  std::string needs;
  bool available = false;
  std::string why;  // what is missing, or what it runs on
};

// What the communicators of a probe found (system_report's probe_ranks).
struct Probe {
  int ranks = 0;
  std::string error;  // why the probe could not run ("" when it ran)
  std::vector<Capabilities> caps;
};

struct Facts {
  Probe probe;
  int cuda_runtime = 0, cuda_driver = 0;
  std::string cuda_note;
  bool nccl_loaded_known = false;
  NcclVersion nccl_loaded{};
  std::string nccl_note;
  std::vector<std::string> nccl_libraries;  // libnccl files mapped into this process
  bool device_api_built = false;
  bool device_api_usable = false;
  std::vector<Gpu> gpus;
  std::string gpu_note;
  std::vector<std::vector<int>> p2p;       // 1 access, 0 none, -1 itself
  std::vector<std::vector<int>> p2p_rank;  // CUDA's performance rank where accessible
  std::vector<std::pair<std::string, std::string>> environment;
  std::vector<std::string> unset;
  std::vector<PathRow> paths;
};

std::string version_text(int code) {  // CUDA's 13000 -> "13.0"
  return std::to_string(code / 1000) + "." + std::to_string((code % 1000) / 10);
}
std::string version_text(NcclVersion v) {
  return std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
}

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, value) == 0;
}

void gather_cuda(Facts& f) {
  if (cudaRuntimeGetVersion(&f.cuda_runtime) != cudaSuccess) f.cuda_runtime = 0;
  if (cudaDriverGetVersion(&f.cuda_driver) != cudaSuccess || f.cuda_driver == 0) {
    f.cuda_driver = 0;
    f.cuda_note = "no CUDA driver found (libcuda is not loaded): no GPU can be used here";
  }
  int count = 0;
  cudaError_t const e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    f.gpu_note = e != cudaSuccess ? std::string("no GPU visible: ") + cudaGetErrorString(e)
                                  : std::string("no GPU visible");
    (void)cudaGetLastError();
    return;
  }
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    Gpu g;
    g.index = d;
    g.name = prop.name;
    g.major = prop.major;
    g.minor = prop.minor;
    g.sms = prop.multiProcessorCount;
    g.memory_bytes = static_cast<long long>(prop.totalGlobalMem);
    g.code = device_code(prop.major, prop.minor);
    f.gpus.push_back(g);
  }
  auto const n = f.gpus.size();
  f.p2p.assign(n, std::vector<int>(n, -1));
  f.p2p_rank.assign(n, std::vector<int>(n, 0));
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      if (a == b) continue;
      int access = 0, rank = 0;
      int const da = f.gpus[a].index, db = f.gpus[b].index;
      if (cudaDeviceCanAccessPeer(&access, da, db) != cudaSuccess) access = 0;
      if (access != 0 &&
          cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, da, db) != cudaSuccess) {
        rank = 0;
      }
      (void)cudaGetLastError();
      f.p2p[a][b] = access != 0 ? 1 : 0;
      f.p2p_rank[a][b] = rank;
    }
  }
}

// The NCCL shared libraries mapped into this process, resolved to their files: which one runs
// is the first question when an engine's PyTorch brings its own NCCL (none: NCCL linked in
// statically).
std::vector<std::string> loaded_nccl_libraries() {
  std::vector<std::string> found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        const char* path = info->dlpi_name;
        if (path == nullptr || *path == '\0') return 0;
        const char* slash = std::strrchr(path, '/');
        const char* base = slash != nullptr ? slash + 1 : path;
        if (std::strncmp(base, "libnccl.so", 10) != 0) return 0;
        char resolved[PATH_MAX];
        auto* out = static_cast<std::vector<std::string>*>(data);
        out->emplace_back(realpath(path, resolved) != nullptr ? resolved : path);
        return 0;
      },
      &found);
  return found;
}

void gather_nccl(Facts& f) {
  f.nccl_libraries = loaded_nccl_libraries();
  int code = 0;
  if (ncclGetVersion(&code) == ncclSuccess && code > 0) {
    f.nccl_loaded_known = true;
    f.nccl_loaded = NcclVersion::from_code(code);
  } else {
    f.nccl_note = "ncclGetVersion failed: the NCCL library could not tell its version";
    return;
  }
#if defined(SYMMCOMM_HAS_NCCL_DEVICE_API)
  f.device_api_built = true;
#endif
  NcclVersion const built = nccl_build_version();
  bool const compatible = nccl_device_api_compatible(f.nccl_loaded, built);
  f.device_api_usable = f.device_api_built && compatible;
  std::ostringstream os;
  if (f.nccl_loaded < kMinNcclVersion) {
    os << "the loaded NCCL is older than 2.27: no symmetric windows; symmcomm refuses it";
  } else if (f.nccl_loaded.major != built.major) {
    os << "the loaded NCCL has another major version than the headers: symmcomm refuses it";
  } else if (!f.device_api_built) {
    os << "built without NCCL's device API (headers older than 2.28 or nccl_device.h did not "
          "compile): symmcomm's own kernels are off";
  } else if (!compatible) {
    os << "the loaded NCCL cannot read the device-API structs of the headers symmcomm was built "
          "with (2.28 needs the very same version; from 2.29.2 a loaded NCCL at least as new): "
          "symmcomm's own kernels are off";
  } else {
    os << "compatible";
    if (!(f.nccl_loaded == built)) os << " (the loaded NCCL differs from the headers)";
  }
  f.nccl_note = os.str();
}

void gather_environment(Facts& f) {
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string const entry = *e;
    std::size_t const eq = entry.find('=');
    if (eq == std::string::npos) continue;
    std::string const name = entry.substr(0, eq);
    bool named = false;
    for (const char* v : kNamedVariables) named = named || name == v;
    if (named || name.rfind("SYMMCOMM_", 0) == 0 || name.rfind("NCCL_", 0) == 0) {
      f.environment.emplace_back(name, entry.substr(eq + 1));
    }
  }
  for (const char* v : kNamedVariables) {
    if (std::getenv(v) == nullptr) f.unset.emplace_back(v);
  }
}

bool any_p2p_pair(const Facts& f) {
  for (const auto& row : f.p2p) {
    for (int v : row) {
      if (v == 1) return true;
    }
  }
  return false;
}

void decide_paths(Facts& f) {
  bool const gpu = !f.gpus.empty();
  bool const nccl = f.nccl_loaded_known && f.nccl_loaded >= kMinNcclVersion;
  bool const shared_gpu = f.nccl_loaded_known && f.nccl_loaded >= NcclVersion{2, 30, 0} &&
                          env_is("NCCL_MULTI_RANK_GPU_ENABLE", "1");
  bool const reach = any_p2p_pair(f) || (gpu && shared_gpu);
  PathRow fallback{"fallback", "NCCL and a GPU (any buffers, any topology, across nodes)",
                   gpu && nccl, ""};
  fallback.why = !gpu ? f.gpu_note : !nccl ? f.nccl_note : "plain NCCL collectives";
  PathRow symmetric{"nccl-symmetric",
                    "NCCL >= 2.27; buffers in symmetric windows; ranks on GPUs that reach each "
                    "other over P2P (one rank per GPU, or NCCL >= 2.30 with "
                    "NCCL_MULTI_RANK_GPU_ENABLE=1 for ranks sharing a GPU); one node",
                    gpu && nccl && reach, ""};
  if (!gpu) {
    symmetric.why = f.gpu_note;
  } else if (!nccl) {
    symmetric.why = f.nccl_note;
  } else if (!reach) {
    symmetric.why = f.gpus.size() < 2 ? "one GPU: ranks can share it only with NCCL >= 2.30 and "
                                        "NCCL_MULTI_RANK_GPU_ENABLE=1"
                                      : "no pair of visible GPUs has P2P access";
  } else {
    symmetric.why = shared_gpu && !any_p2p_pair(f) ? "ranks sharing a GPU (NCCL's multi-rank mode)"
                                                   : "GPUs with P2P access";
  }
  PathRow lsa{"lsa-kernel",
              "what nccl-symmetric needs, NCCL's device API in this build and a loaded NCCL "
              "that reads its structs, an LSA team spanning the communicator, at most " +
                  std::to_string(kMaxKernelRanks) + " ranks",
              symmetric.available && f.device_api_usable, ""};
  lsa.why = !symmetric.available   ? symmetric.why
            : !f.device_api_usable ? f.nccl_note
                                   : "symmcomm's kernels over NCCL's device API";
  PathRow small{"small-message-gather",
                "what lsa-kernel needs, and SYMMCOMM_LSA_LL not 0 on any rank",
                lsa.available && !env_is("SYMMCOMM_LSA_LL", "0"), ""};
  small.why = !lsa.available                   ? lsa.why
              : env_is("SYMMCOMM_LSA_LL", "0") ? "SYMMCOMM_LSA_LL=0 turns it off"
                                               : "all-gathers up to 96 KiB per rank, no barriers";
  PathRow counted{"device-count-kernels",
                  "what lsa-kernel needs; send/receive tensors and counts in windows",
                  lsa.available,
                  lsa.available ? "one-launch gathers and BF16 and NVFP4 reduce-scatters "
                                  "with counts on the device"
                                : lsa.why};
  PathRow lines{"counts-in-the-lines",
                "what small-message-gather and device-count-kernels need, and no rank with "
                "SYMMCOMM_LL_COUNTS=0",
                small.available && !env_is("SYMMCOMM_LL_COUNTS", "0"), ""};
  lines.why =
      !small.available ? small.why
      : !lines.available
          ? "off: SYMMCOMM_LL_COUNTS=0 here (the ranks agree at creation: off on every rank)"
          : "device-count calls at decode capacities carry counts in the scratch lines";
  f.paths = {fallback, symmetric, lsa, small, counted, lines};
}

// `n` ranks of one communicator on GPU 0, each made, probed and torn down by its own thread
// (ranks sharing a GPU must be driven concurrently). More than 2 ranks get NCCL's kernels
// capped so that every rank's fit on the GPU at once.
Probe probe_ranks(const Facts& f, int n) {
  Probe p;
  p.ranks = n;
  if (f.gpus.empty()) {
    p.error = f.gpu_note;
    return p;
  }
  if (n > 1) {
    if (!f.nccl_loaded_known || f.nccl_loaded < NcclVersion{2, 30, 0}) {
      p.error = "ranks share a GPU only with NCCL >= 2.30 (NCCL_MULTI_RANK_GPU_ENABLE)";
      return p;
    }
    setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 0);  // this process only; kept where set
    if (!env_is("NCCL_MULTI_RANK_GPU_ENABLE", "1")) {
      p.error = "NCCL_MULTI_RANK_GPU_ENABLE is set, but not to 1";
      return p;
    }
  }
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) {
    p.error = "ncclGetUniqueId failed";
    return p;
  }
  int const max_ctas = n > 2 ? std::max(1, std::min(32, f.gpus[0].sms / (n + 1))) : 0;
  p.caps.resize(static_cast<std::size_t>(n));
  std::vector<std::string> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      auto const i = static_cast<std::size_t>(r);
      try {
        if (cudaSetDevice(f.gpus[0].index) != cudaSuccess)
          throw std::runtime_error("cudaSetDevice");
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        if (max_ctas > 0) {
          config.minCTAs = 1;
          config.maxCTAs = max_ctas;
        }
        ncclComm_t c = nullptr;
        ncclResult_t const rc = ncclCommInitRankConfig(&c, n, id, r, &config);
        if (rc != ncclSuccess) {
          throw std::runtime_error(std::string("ncclCommInitRankConfig: ") +
                                   ncclGetErrorString(rc));
        }
        Communicator comm = Communicator::own(c);  // probes (collective), torn down at scope end
        p.caps[i] = comm.capabilities();
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (std::size_t i = 0; i < errors.size(); ++i) {
    if (!errors[i].empty()) {
      p.error = "rank " + std::to_string(i) + ": " + errors[i];
      p.caps.clear();
      break;
    }
  }
  return p;
}

Facts gather(int probe) {
  Facts f;
  gather_cuda(f);
  gather_nccl(f);
  gather_environment(f);
  decide_paths(f);
  if (probe > 0) f.probe = probe_ranks(f, probe);
  return f;
}

std::vector<std::string> architectures() {
  std::vector<std::string> out;
  std::string const list = built_cuda_architectures();
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    if (end > start) out.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

void probe_json(detail::JsonWriter& w, const Probe& p) {
  w.begin_object("probe").value("ranks", p.ranks);
  if (!p.error.empty()) {
    w.value("error", p.error).end_object();
    return;
  }
  w.begin_array("communicators");
  for (const Capabilities& c : p.caps) {
    w.begin_object()
        .value("symmetric_memory", c.symmetric_memory)
        .value("lsa_team_size", c.lsa_team_size)
        .value("ranks_per_gpu", c.ranks_per_gpu)
        .value("lsa_sm_share", c.lsa_sm_share)
        .value("lsa_gpu_sms", c.lsa_gpu_sms)
        .value("lsa_kernels", c.lsa_covers(p.ranks))
        .value("reason", c.reason)
        .end_object();
  }
  w.end_array().end_object();
}

void probe_text(std::ostream& os, const Probe& p) {
  os << "Probe: " << p.ranks << " rank(s) of one communicator on GPU 0\n";
  if (!p.error.empty()) {
    os << "  could not run: " << p.error << "\n";
    return;
  }
  for (std::size_t r = 0; r < p.caps.size(); ++r) {
    const Capabilities& c = p.caps[r];
    os << "  rank " << r << ": symmetric memory " << (c.symmetric_memory ? "yes" : "no")
       << ", LSA team " << c.lsa_team_size << ", " << c.ranks_per_gpu << " rank(s) per GPU, "
       << c.lsa_sm_share
       << " SMs per rank; symmcomm's LSA kernels: " << (c.lsa_covers(p.ranks) ? "yes" : "no");
    if (!c.symmetric_memory) os << " (" << c.reason << ")";
    os << "\n";
  }
}

std::string json(const Facts& f) {
  detail::JsonWriter w;
  w.begin_object().value("schema", "symmcomm-info/1");
  w.begin_object("symmcomm")
      .value("version", kVersion)
      .value("c_abi_version", SYMMCOMM_C_ABI_VERSION)
      .begin_array("cuda_architectures");
  for (const std::string& a : architectures()) w.value(nullptr, a);
  w.end_array().value("nccl_device_api", f.device_api_built).end_object();
  w.begin_object("cuda").value("runtime", version_text(f.cuda_runtime));
  if (f.cuda_driver > 0) {
    w.value("driver", version_text(f.cuda_driver));
  } else {
    w.null("driver");
  }
  w.value("note", f.cuda_note).end_object();
  w.begin_object("nccl").value("built", version_text(nccl_build_version()));
  if (f.nccl_loaded_known) {
    w.value("loaded", version_text(f.nccl_loaded));
  } else {
    w.null("loaded");
  }
  w.begin_array("libraries");
  for (const std::string& path : f.nccl_libraries) w.value(nullptr, path);
  w.end_array();
  w.value("device_api_usable", f.device_api_usable).value("note", f.nccl_note).end_object();
  w.begin_array("gpus");
  for (const Gpu& g : f.gpus) {
    w.begin_object()
        .value("index", g.index)
        .value("name", g.name)
        .value("compute_capability", std::to_string(g.major) + "." + std::to_string(g.minor))
        .value("sms", g.sms)
        .value("memory_bytes", g.memory_bytes)
        .value("code", to_string(g.code))
        .end_object();
  }
  w.end_array().value("gpu_note", f.gpu_note);
  w.begin_array("p2p");
  for (std::size_t a = 0; a < f.p2p.size(); ++a) {
    w.begin_array();
    for (std::size_t b = 0; b < f.p2p.size(); ++b) {
      if (f.p2p[a][b] < 0) {
        w.null(nullptr);
      } else {
        w.begin_object()
            .value("access", f.p2p[a][b] == 1)
            .value("performance_rank", f.p2p_rank[a][b])
            .end_object();
      }
    }
    w.end_array();
  }
  w.end_array();
  w.begin_object("environment");
  for (const auto& [name, value] : f.environment) w.value(name.c_str(), value);
  w.end_object().begin_array("unset");
  for (const std::string& name : f.unset) w.value(nullptr, name);
  w.end_array().begin_array("paths");
  for (const PathRow& p : f.paths) {
    w.begin_object()
        .value("name", p.name)
        .value("needs", p.needs)
        .value("available", p.available)
        .value("why", p.why)
        .end_object();
  }
  w.end_array();
  if (f.probe.ranks > 0) probe_json(w, f.probe);
  w.end_object();
  return w.str() + "\n";
}

std::string text(const Facts& f) {
  std::ostringstream os;
  os << "symmcomm " << kVersion << " (C ABI " << SYMMCOMM_C_ABI_VERSION << ")\n"
     << "  built for CUDA architectures: " << built_cuda_architectures() << "\n"
     << "  NCCL device API in this build: " << (f.device_api_built ? "yes" : "no") << "\n"
     << "CUDA runtime " << version_text(f.cuda_runtime) << ", driver "
     << (f.cuda_driver > 0 ? version_text(f.cuda_driver) : std::string("none")) << "\n";
  if (!f.cuda_note.empty()) os << "  " << f.cuda_note << "\n";
  os << "NCCL built against " << version_text(nccl_build_version()) << ", loaded "
     << (f.nccl_loaded_known ? version_text(f.nccl_loaded) : std::string("unknown")) << ": "
     << f.nccl_note << "\n";
  if (f.nccl_libraries.empty())
    os << "  no libnccl in this process: NCCL is linked in statically\n";
  if (f.nccl_libraries.size() > 1) {
    os << "  " << f.nccl_libraries.size()
       << " NCCL libraries in this process: symmcomm and PyTorch may each call another\n";
  }
  for (const std::string& path : f.nccl_libraries) os << "  loaded from " << path << "\n";
  os << "GPUs (" << f.gpus.size() << ")\n";
  if (f.gpus.empty()) os << "  " << f.gpu_note << "\n";
  for (const Gpu& g : f.gpus) {
    os << "  " << g.index << ": " << g.name << ", sm_" << g.major << g.minor << ", " << g.sms
       << " SMs, " << (g.memory_bytes >> 30) << " GiB; symmcomm's kernels: " << to_string(g.code)
       << "\n";
  }
  if (f.gpus.size() > 1) {
    os << "P2P access (row reaches column; rank: CUDA's performance rank, lower is faster; "
          "`nvidia-smi topo -m` tells NVLink from PCIe)\n";
    for (std::size_t a = 0; a < f.p2p.size(); ++a) {
      os << "  " << a << ":";
      for (std::size_t b = 0; b < f.p2p.size(); ++b) {
        os << "  "
           << (f.p2p[a][b] < 0    ? std::string("  -  ")
               : f.p2p[a][b] == 1 ? "yes/" + std::to_string(f.p2p_rank[a][b])
                                  : std::string(" no  "));
      }
      os << "\n";
    }
  }
  os << "Environment\n";
  for (const auto& [name, value] : f.environment) os << "  " << name << "=" << value << "\n";
  os << "  unset:";
  for (const std::string& name : f.unset) os << " " << name;
  os << "\nPaths\n";
  for (const PathRow& p : f.paths) {
    os << "  " << p.name << ": " << (p.available ? "available" : "not available") << " - " << p.why
       << "\n    needs: " << p.needs << "\n";
  }
  if (f.probe.ranks > 0) probe_text(os, f.probe);
  os << "A communicator decides its own capabilities when it is made "
        "(Communicator::capabilities(), SYMMCOMM_LOG=info says why).\n";
  return os.str();
}

}  // namespace

std::string system_report(ReportFormat format, int probe_ranks) {
  Facts const f = gather(probe_ranks);
  return format == ReportFormat::Json ? json(f) : text(f);
}

}  // namespace symmcomm
