// symmcomm-bench: all-gather and reduce-scatter in NVFP4, FP8 and BF16, nccl-tests' flags and
// columns, each size beside plain NCCL measured in the same run; and the moe-dp scenario.

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "config.hpp"
#include "runner.hpp"
#include "summary.hpp"
#include "support/shared_gpu.hpp"
#include "symmcomm/runtime.hpp"
#include "symmcomm/version.hpp"

#if defined(SYMMCOMM_WITH_MPI)
#include <mpi.h>

#include "symmcomm/comm/mpi.hpp"
#endif

using namespace symmcomm::bench;

namespace {
std::string today() {
  std::time_t const t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

// Launched by mpirun (Open MPI, or a PMI/PMIx launcher): one rank per process.
bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}

// Initialises MPI for the program's lifetime when launched by mpirun and built with MPI.
struct MpiSession {
  bool active = false;
  MpiSession() {
#if defined(SYMMCOMM_WITH_MPI)
    if (launched_by_mpi()) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
      active = true;
    }
#endif
  }
  ~MpiSession() {
#if defined(SYMMCOMM_WITH_MPI)
    if (active) MPI_Finalize();
#endif
  }
};

// Everything that can be refused before a GPU is touched, then the GPUs: 0 to go on with `gpus`
// GPUs, else the exit code (after saying why).
int preflight(const Config& c, const MpiSession& mpi, int& gpus) {
  // Output files are checked before anything is measured (an unwritable path found after a
  // long sweep loses it); only the printing rank writes them.
  bool const writes_outputs = !launched_by_mpi() ||
                              std::getenv("OMPI_COMM_WORLD_RANK") == nullptr ||
                              std::string(std::getenv("OMPI_COMM_WORLD_RANK")) == "0";
  if (writes_outputs) {
    std::string const unwritable = check_output_paths(c);
    if (!unwritable.empty()) {
      std::fprintf(stderr, "symmcomm-bench: %s\n", unwritable.c_str());
      return 1;
    }
  }
  if (launched_by_mpi() && !mpi.active) {
    std::fprintf(stderr,
                 "symmcomm-bench: launched by mpirun but built without MPI; rebuild with "
                 "-DSYMMCOMM_WITH_MPI=ON\n");
    return 1;
  }
  int visible = 0;
  cudaError_t const e = cudaGetDeviceCount(&visible);
  if (e != cudaSuccess || visible == 0) {
    std::fprintf(stderr,
                 "symmcomm-bench: no CUDA GPU on this machine (%s). The benchmark measures "
                 "collectives on GPUs and needs at least one.\n",
                 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 2;
  }
  gpus = c.gpus == 0 ? visible : c.gpus;
  if (c.ranks_per_gpu > 1) {
    std::string const why = mpi.active
                                ? std::string(
                                      "ranks of one process; under mpirun start more processes "
                                      "(they share the GPUs by themselves)")
                                : symmcomm::test::why_ranks_cannot_share_a_gpu();
    if (!why.empty()) {
      std::fprintf(stderr, "symmcomm-bench: --ranks-per-gpu %d: %s\n", c.ranks_per_gpu,
                   why.c_str());
      return 1;
    }
  }
  if (!mpi.active && gpus > visible) {
    std::fprintf(stderr, "symmcomm-bench: -g %d asks for more GPUs than the %d visible\n", gpus,
                 visible);
    return 1;
  }
  return 0;
}

// Pool bytes per rank: three of the largest size, or the moe-dp layer's tensors.
std::size_t pool_bytes(const Config& c, int world) {
  std::size_t pool = 3 * c.max_bytes + (std::size_t{64} << 20);
  if (c.scenario != Scenario::None) {
    std::size_t const per_rank =
        static_cast<std::size_t>(c.moe_max_tokens) * static_cast<std::size_t>(c.moe_hidden);
    pool = std::max(pool, per_rank * static_cast<std::size_t>(world) * 4 + (std::size_t{64} << 20));
  }
  return pool;
}

void print_banner(const Meta& meta, const Ranks& ranks, int gpus) {
  std::printf("# symmcomm-bench %s | %d x %s | NCCL %s | %s\n# %s\n", meta.symmcomm.c_str(), gpus,
              meta.gpu.c_str(), meta.nccl.c_str(), meta.date.c_str(), meta.command.c_str());
  std::printf("# ranks: %d, %s\n", ranks.world(), meta.sharing.c_str());
  const symmcomm::Capabilities& caps = ranks.comms[0].capabilities();
  std::printf("# symmetric memory: %s\n", caps.symmetric_memory ? "yes" : caps.reason.c_str());
}

// --json and --csv with the rows so far: "" when written, else the flag and path that failed.
std::string write_outputs(const Config& c, const Meta& meta, const std::vector<Result>& results,
                          const std::vector<MoeResult>& moe) {
  if (!c.json_path.empty() && !write_file_atomically(c.json_path, to_json(meta, results, moe))) {
    return "--json " + c.json_path;
  }
  if (!c.csv_path.empty() &&
      !write_file_atomically(c.csv_path,
                             c.scenario != Scenario::None ? to_csv(moe) : to_csv(results))) {
    return "--csv " + c.csv_path;
  }
  return "";
}

// After a cycle of several: the outputs rewritten with every row so far, so that a run stopped
// before its last cycle (a time limit, a hang) keeps what it measured. Failures are reported
// once, at the end (finish).
void checkpoint(const Config& c, Meta& meta, int cycle, const std::vector<Result>& results,
                const std::vector<MoeResult>& moe) {
  meta.cycles_done = cycle + 1;
  if (cycle + 1 < c.run_cycles) write_outputs(c, meta, results, moe);  // finish() writes the last
}

// The sweep (-N cycles) or the moe-dp scenario, printed as they finish (the printing rank's
// outputs rewritten after each cycle).
void run_and_print(const Config& c, Meta& meta, Ranks& ranks, std::vector<Result>& results,
                   std::vector<MoeResult>& moe) {
  bool const prints = ranks.prints();
  meta.cycles = c.run_cycles;
  if (c.scenario != Scenario::None) {
    // -N repeats the scenario (each row once per cycle: medians over cycles are the figures).
    for (int cycle = 0; cycle < c.run_cycles; ++cycle) {
      std::vector<MoeResult> rows =
          c.scenario == Scenario::MoeDp ? run_moe(c, ranks) : run_moe_a2a(c, ranks);
      for (auto& m : rows) m.cycle = cycle;
      if (prints) {
        if (c.run_cycles > 1) std::printf("# cycle %d of %d\n", cycle + 1, c.run_cycles);
        std::printf("%s#%9s %18s %12s %12s %12s\n", timing_note(c).c_str(), "tokens", "path",
                    "dispatch_us", "combine_us", "total_us");
        for (const auto& m : rows) {
          std::printf(" %9d %18s %12.2f %12.2f %12.2f\n", m.tokens_per_rank, m.path.c_str(),
                      m.dispatch_us, m.combine_us, m.total_us());
        }
      }
      moe.insert(moe.end(), rows.begin(), rows.end());
      if (prints) checkpoint(c, meta, cycle, results, moe);
    }
    // The figures: medians over the cycles with min-max, moe-a2a's beside the AG/RS layer's.
    if (prints) {
      std::printf("%s", moe_summary(moe, c.scenario == Scenario::MoeA2a ? "ag-rs" : "").c_str());
    }
    return;
  }
  for (int cycle = 0; cycle < c.run_cycles; ++cycle) {
    std::vector<Result> const cycle_results = run_sweep(c, ranks);
    if (prints) {
      if (c.run_cycles > 1) std::printf("# cycle %d of %d\n", cycle + 1, c.run_cycles);
      std::printf("%s%s", timing_note(c).c_str(), table_header().c_str());
      for (const auto& r : cycle_results) std::printf("%s\n", format_row(r).c_str());
      if (!cycle_results.empty()) std::printf("# path: %s\n", cycle_results.back().plan.c_str());
      std::printf("%s", table_footer(cycle_results).c_str());
    }
    results.insert(results.end(), cycle_results.begin(), cycle_results.end());
    if (prints) checkpoint(c, meta, cycle, results, moe);
  }
}

// --json, --csv, and the verdict: 0, 1 (an output not written) or 3 (wrong values).
int finish(const Config& c, const Meta& meta, const std::vector<Result>& results,
           const std::vector<MoeResult>& moe) {
  if (std::string const failed = write_outputs(c, meta, results, moe); !failed.empty()) {
    std::fprintf(stderr, "symmcomm-bench: cannot write %s\n", failed.c_str());
    return 1;
  }
  long long wrong = 0;
  for (const auto& r : results) {
    wrong += r.wrong > 0 ? r.wrong : 0;
    wrong += r.has_in_place && r.in_place_wrong > 0 ? r.in_place_wrong : 0;
  }
  if (wrong > 0) {
    std::fprintf(stderr, "symmcomm-bench: %lld wrong elements\n", wrong);
    return 3;
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  ParseResult parsed = parse_command_line(argc, argv);
  if (!parsed.config) return parsed.exit_code;
  Config const& c = *parsed.config;
  if (c.ranks_per_gpu > 1) symmcomm::test::keep_nccl_stack_at_init();  // before NCCL's first call
  MpiSession mpi;
  int gpus = 0;
  if (int const refused = preflight(c, mpi, gpus); refused != 0) return refused;
  try {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    auto const v = symmcomm::nccl_runtime_version();
    Meta meta{
        prop.name,
        gpus,
        std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch),
        today(),
        c.command_line,
        symmcomm::kVersion,
        0,
        c.ranks_per_gpu > 1 ? std::to_string(c.ranks_per_gpu) +
                                  " ranks of this process share each GPU: "
                                  "NCCL_MULTI_RANK_GPU_ENABLE=1"
                            : std::string("one GPU per rank")};
#if defined(SYMMCOMM_WITH_MPI)
    // More ranks than GPUs on a node (a one-GPU machine): let them share (mpi.hpp).
    if (mpi.active) meta.sharing = symmcomm::share_gpus_if_needed(MPI_COMM_WORLD);
#endif
    Ranks ranks =
        make_ranks(gpus, c.ranks_per_gpu, pool_bytes(c, gpus * c.ranks_per_gpu), mpi.active);
    meta.gpu_count = ranks.world();
    meta.ranks = ranks.world();
    bool const prints = ranks.prints();
    if (prints) print_banner(meta, ranks, gpus);
    std::vector<Result> results;
    std::vector<MoeResult> moe;
    run_and_print(c, meta, ranks, results, moe);
    release_ranks(ranks);
    return prints ? finish(c, meta, results, moe) : 0;
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "symmcomm-bench: %s\n", ex.what());
    return 1;
  }
}
