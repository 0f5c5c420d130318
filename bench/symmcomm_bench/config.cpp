#include "config.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

#include "symmcomm/version.hpp"

namespace symmcomm::bench {

const char* to_string(Operation op) {
  return op == Operation::AllGather ? "allgather" : "reducescatter";
}

const char* to_string(BenchPath path) {
  switch (path) {
    case BenchPath::Auto:
      return "auto";
    case BenchPath::NcclSymmetric:
      return "nccl-symmetric";
    case BenchPath::Lsa:
      return "lsa-kernel";
    case BenchPath::Fallback:
      return "fallback";
    case BenchPath::Nccl:
      return "nccl";
  }
  return "?";
}

std::size_t parse_size(const std::string& text) {
  if (text.empty()) throw std::invalid_argument("size '' is empty");
  std::size_t pos = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &pos);
  } catch (const std::exception&) {
    throw std::invalid_argument("size '" + text +
                                "' is not a number with an optional K/M/G suffix");
  }
  std::string suffix = text.substr(pos);
  std::transform(suffix.begin(), suffix.end(), suffix.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (!suffix.empty() && suffix.back() == 'B') suffix.pop_back();
  static const std::map<std::string, unsigned> shifts = {{"", 0}, {"K", 10}, {"M", 20}, {"G", 30}};
  auto it = shifts.find(suffix);
  if (it == shifts.end() || text[0] == '-') {
    throw std::invalid_argument("size '" + text +
                                "' is not a number with an optional K/M/G suffix");
  }
  if (it->second > 0 && value > (std::numeric_limits<std::size_t>::max() >> it->second)) {
    throw std::invalid_argument("size '" + text + "' does not fit in 64 bits of bytes");
  }
  return static_cast<std::size_t>(value) << it->second;
}

namespace {

// The flags as given, before they become a Config (names, sizes with suffixes, nccl-tests'
// integers), and the options the refusals ask about.
struct Flags {
  std::string op = "allgather", dtype = "bf16", path = "auto", min_size = "32M", max_size = "32M";
  std::string scenario = "none", combine = "bf16", wire = "nvfp4", redop = "sum", step_bytes;
  int check = 1, registration = -1, threads = 1, parallel_init = 0, average = 1, blocking = 0;
  int cpu_time = 0;
  CLI::Option *path_option = nullptr, *min_option = nullptr, *max_option = nullptr;
  CLI::Option *factor_option = nullptr, *step_option = nullptr;
};

// What is measured: operation, type, path, sizes.
void add_what_options(CLI::App& app, Config& c, Flags& f) {
  app.add_option("--op", f.op, "allgather | reducescatter")
      ->check(CLI::IsMember({"allgather", "reducescatter"}));
  // nccl-tests' type names are accepted beside the short ones.
  app.add_option("--dtype,-d", f.dtype,
                 "nvfp4 | fp8e4m3 (f8e4m3) | fp8e5m2 (f8e5m2) | bf16 (bfloat16)")
      ->check(
          CLI::IsMember({"nvfp4", "fp8e4m3", "f8e4m3", "fp8e5m2", "f8e5m2", "bf16", "bfloat16"}));
  app.add_option("-o,--op_type", f.redop,
                 "reduction of reducescatter: sum (the only one; symmcomm sums in fp32)")
      ->check(CLI::IsMember({"sum"}));
  f.path_option =
      app.add_option("--path", f.path,
                     "auto | nccl-symmetric | lsa-kernel (lsa) | fallback | nccl (plain NCCL on "
                     "cudaMalloc buffers)")
          ->check(
              CLI::IsMember({"auto", "nccl-symmetric", "lsa-kernel", "lsa", "fallback", "nccl"}));
  app.add_option("-R,--local_register", f.registration,
                 "nccl-tests' registration, as a path: 0 none (--path nccl), 1 registered "
                 "buffers with NCCL's own algorithms (--path fallback on symmetric windows), 2 "
                 "symmetric windows (--path auto); -1: use --path")
      ->check(CLI::Range(-1, 2))
      ->excludes(f.path_option);
  f.min_option = app.add_option("-b,--minbytes", f.min_size, "smallest size (K/M/G suffixes)");
  f.max_option = app.add_option("-e,--maxbytes", f.max_size, "largest size (K/M/G suffixes)");
  f.factor_option = app.add_option("-f,--stepfactor", c.step_factor, "size multiplication factor")
                        ->check(CLI::Range(2, 1 << 20));
  f.step_option = app.add_option("-i,--stepbytes", f.step_bytes,
                                 "fixed size increment (K/M/G suffixes) instead of -f")
                      ->excludes(f.factor_option);
}

// How it is timed and checked.
void add_timing_options(CLI::App& app, Config& c, Flags& f) {
  app.add_option("-G,--cudagraph", c.graph_launches,
                 "0: plain launches; N > 0: capture the -n iterations in a CUDA graph and "
                 "replay it N times (times are per call)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("-a,--average", f.average,
                 "time reported: 0 rank 0's, 1 mean over ranks, 2 minimum, 3 maximum")
      ->check(CLI::Range(0, 3));
  app.add_option("-z,--blocking", f.blocking, "1: the host waits for each call (0: stream-ordered)")
      ->check(CLI::Range(0, 1));
  app.add_option("-m,--agg_iters", c.agg_iters,
                 "calls per timed iteration, issued back to back (not grouped: symmcomm's own "
                 "paths launch kernels of their own)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("-N,--run_cycles", c.run_cycles, "run the whole sweep this many times (>= 1)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("-T,--timeout", c.timeout_s,
                 "seconds one size's timed calls may take before the run stops naming the size "
                 "and rank (0: no limit)")
      ->check(CLI::Range(0, 1 << 24));
  app.add_option("-C,--report_cputime", f.cpu_time,
                 "1: report host wall-clock time per call (enqueue to completion) instead of "
                 "device time")
      ->check(CLI::Range(0, 1));
  app.add_option("-n,--iters", c.iters, "timed iterations per size")->check(CLI::Range(1, 1 << 24));
  app.add_option("-w,--warmup_iters", c.warmup, "warm-up iterations per size")
      ->check(CLI::Range(0, 1 << 24));
  app.add_option("-c,--check", f.check,
                 "check results: 0 no; N > 0: N checks per size and column (out of place, in "
                 "place), each with fresh inputs uploaded in stream order, outputs poisoned, "
                 "one call, every output compared with the host")
      ->check(CLI::Range(0, 1 << 24));
}

// Where it runs, what it writes, and the moe-dp scenario.
void add_run_options(CLI::App& app, Config& c, Flags& f) {
  app.add_option("-t,--nthreads", f.threads,
                 "threads per process: 1 only (one rank per GPU, each on its own thread; more "
                 "ranks: -g or mpirun)");
  app.add_option("-p,--parallel_init", f.parallel_init,
                 "0 only (communicators are created together in one NCCL group)");
  app.add_option("-g,--gpus", c.gpus, "GPUs to drive (one rank each; 0: all visible)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--ranks-per-gpu", c.ranks_per_gpu,
                 "ranks of this process on each GPU (> 1: NCCL >= 2.30 with "
                 "NCCL_MULTI_RANK_GPU_ENABLE=1; the ranks share the GPU's SMs and memory, so "
                 "compare paths within one run only; not under mpirun)")
      ->check(CLI::Range(1, 64));
  app.add_option("--json", c.json_path, "write results as JSON to this file");
  app.add_option("--csv", c.csv_path, "write results as CSV to this file");
  app.add_option("--scenario", f.scenario,
                 "none | moe-dp (DeepSeek-R1 MoE layer, DP attention + EP: all-gather dispatch, "
                 "reduce-scatter combine) | moe-a2a (the same layer by expert: symmcomm's MoE "
                 "group beside the all-gather/reduce-scatter layer and ncclAlltoAll padded). "
                 "Each sets its own sizes, formats and paths: -d, -b, -e, -f, -i, --op, --path, "
                 "-R are refused; -G captures its layers' calls as it does the sweep's")
      ->check(CLI::IsMember({"none", "moe-dp", "moe-a2a"}));
  app.add_option("--moe-experts", c.moe_experts, "moe-a2a experts (a multiple of the ranks)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--moe-wire", f.wire,
                 "moe-a2a rows' format: nvfp4 | fp8e4m3 | bf16 (the group's wire and the "
                 "bytes ncclAlltoAll moves)")
      ->check(CLI::IsMember({"bf16", "fp8e4m3", "nvfp4"}));
  app.add_option("--moe-hidden", c.moe_hidden, "moe-dp hidden size")
      ->check(CLI::Range(16, 1 << 20));
  app.add_option("--moe-topk", c.moe_topk, "moe-dp experts per token")->check(CLI::Range(1, 256));
  app.add_option("--moe-max-tokens", c.moe_max_tokens, "moe-dp largest tokens per rank")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--moe-min-tokens", c.moe_min_tokens,
                 "the scenarios' first tokens per rank, doubled up to --moe-max-tokens (one "
                 "size alone for a profiler: both the same)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--moe-combine", f.combine, "moe-dp combine format: bf16 | nvfp4")
      ->check(CLI::IsMember({"bf16", "nvfp4"}));
}

// Flags of nccl-tests that have no meaning here, and combinations that cannot run: the reason,
// naming the flag, or "" when the command line is fine.
std::string refusal(const CLI::App& app, const Config& c, const Flags& f) {
  if (f.threads != 1) {
    return "-t " + std::to_string(f.threads) +
           ": one thread per process only (each rank, one per GPU, runs on its own thread; more "
           "ranks: -g or mpirun -n)";
  }
  if (f.parallel_init != 0) {
    return "-p " + std::to_string(f.parallel_init) +
           ": parallel initialisation is not supported (the communicators are created together "
           "in one NCCL group)";
  }
  if (!f.step_bytes.empty() && c.step_bytes == 0) return "-i 0: the step must be positive";
  if (c.graph_launches > 0 && f.blocking != 0) {
    return "-z 1 with -G " + std::to_string(c.graph_launches) +
           ": the host cannot wait for calls inside a captured graph";
  }
  if (f.scenario == "none") return "";
  if (c.moe_min_tokens > c.moe_max_tokens) {
    return "--moe-min-tokens " + std::to_string(c.moe_min_tokens) + " is above --moe-max-tokens " +
           std::to_string(c.moe_max_tokens);
  }
  for (const CLI::Option* o : std::initializer_list<const CLI::Option*>{
           app.get_option("--dtype"), f.min_option, f.max_option, f.factor_option, f.step_option,
           app.get_option("--op"), f.path_option, app.get_option("--local_register")}) {
    if (o->count() > 0) {
      return "--scenario " + f.scenario +
             " sets its own sizes, formats and paths: " + o->get_name() +
             " is not used there (see --moe-* and --help)";
    }
  }
  return "";
}

// The names and numbers of the flags into `c`.
void finish(Config& c, const Flags& f, int argc, const char* const* argv) {
  c.op = f.op == "allgather" ? Operation::AllGather : Operation::ReduceScatter;
  static const std::map<std::string, DataType> dtypes = {
      {"nvfp4", DataType::Nvfp4},     {"fp8e4m3", DataType::Fp8E4M3}, {"f8e4m3", DataType::Fp8E4M3},
      {"fp8e5m2", DataType::Fp8E5M2}, {"f8e5m2", DataType::Fp8E5M2},  {"bf16", DataType::Bf16},
      {"bfloat16", DataType::Bf16}};
  c.dtype = dtypes.at(f.dtype);
  static const std::map<std::string, BenchPath> paths = {
      {"auto", BenchPath::Auto},         {"nccl-symmetric", BenchPath::NcclSymmetric},
      {"lsa-kernel", BenchPath::Lsa},    {"lsa", BenchPath::Lsa},
      {"fallback", BenchPath::Fallback}, {"nccl", BenchPath::Nccl}};
  static const char* const by_registration[] = {"nccl", "fallback", "auto"};
  c.path = paths.at(f.registration >= 0 ? by_registration[f.registration] : f.path);
  c.check = f.check != 0;
  c.check_rounds = f.check;
  c.average = static_cast<Average>(f.average);
  c.blocking = f.blocking != 0;
  c.cpu_time = f.cpu_time != 0;
  c.scenario = f.scenario == "moe-dp"    ? Scenario::MoeDp
               : f.scenario == "moe-a2a" ? Scenario::MoeA2a
                                         : Scenario::None;
  c.moe_combine = dtypes.at(f.combine);
  c.moe_wire = dtypes.at(f.wire);
  for (int i = 0; i < argc; ++i) c.command_line += (i ? " " : "") + std::string(argv[i]);
}

ParseResult usage_error(const std::string& why) {
  std::fprintf(stderr, "symmcomm-bench: %s\nRun with --help for more information.\n", why.c_str());
  return ParseResult{std::nullopt, 1};
}

}  // namespace

ParseResult parse_command_line(int argc, const char* const* argv) {
  Config c;
  Flags f;
  CLI::App app{
      "symmcomm-bench: all-gather and reduce-scatter in NVFP4, FP8 and BF16 over NCCL "
      "symmetric memory, beside plain NCCL (nccl-tests' flags and columns)"};
  app.option_defaults()->always_capture_default();  // --help shows every default
  app.set_version_flag("--version", std::string("symmcomm-bench ") + kVersion + " (symmcomm " +
                                        kVersion + ", built against NCCL " + kNcclBuildVersion +
                                        ")");
  add_what_options(app, c, f);
  add_timing_options(app, c, f);
  add_run_options(app, c, f);
  try {
    app.parse(argc, argv);
    c.min_bytes = parse_size(f.min_size);
    c.max_bytes = parse_size(f.max_size);
    if (!f.step_bytes.empty()) c.step_bytes = parse_size(f.step_bytes);
  } catch (const CLI::ParseError& e) {
    int const code = app.exit(e);  // prints help, or the usage error
    return ParseResult{std::nullopt, code == 0 ? 0 : 1};
  } catch (const std::invalid_argument& e) {
    return usage_error(e.what());
  }
  // Flags of nccl-tests that have no meaning here are refused by name, never ignored.
  if (std::string const why = refusal(app, c, f); !why.empty()) return usage_error(why);
  if (c.min_bytes == 0 || c.max_bytes < c.min_bytes) {
    std::fprintf(stderr, "symmcomm-bench: -b %zu / -e %zu: need 0 < minbytes <= maxbytes\n",
                 c.min_bytes, c.max_bytes);
    return ParseResult{std::nullopt, 1};
  }
  finish(c, f, argc, argv);
  return ParseResult{c, 0};
}

std::vector<std::size_t> size_sweep(std::size_t min_bytes, std::size_t max_bytes,
                                    std::size_t factor, std::size_t step_bytes) {
  std::vector<std::size_t> sizes;
  if (step_bytes > 0) {
    for (std::size_t s = min_bytes; s <= max_bytes; s += step_bytes) {
      sizes.push_back(s);
      if (s > max_bytes - step_bytes) break;  // the next step would pass max (or overflow)
    }
    if (sizes.empty()) sizes.push_back(max_bytes);
    return sizes;
  }
  if (factor < 2) factor = 2;
  for (std::size_t s = min_bytes; s <= max_bytes; s *= factor) {
    sizes.push_back(s);
    if (s > max_bytes / factor) break;
  }
  if (sizes.empty()) sizes.push_back(max_bytes);
  return sizes;
}

double bytes_per_element(DataType dtype) {
  switch (dtype) {
    case DataType::Nvfp4:
      return 9.0 / 16.0;
    case DataType::Fp8E4M3:
    case DataType::Fp8E5M2:
      return 1.0;
    case DataType::Bf16:
      return 2.0;
    case DataType::Fp32:
      return 4.0;
  }
  return 1.0;
}

std::size_t element_count(DataType dtype, std::size_t bytes, int ranks) {
  std::size_t const unit = 16 * static_cast<std::size_t>(ranks);
  auto const raw = static_cast<std::size_t>(static_cast<double>(bytes) / bytes_per_element(dtype));
  std::size_t const count = raw / unit * unit;
  return count > 0 ? count : unit;
}

double bus_bandwidth(double algbw, int ranks) {
  return ranks > 0 ? algbw * static_cast<double>(ranks - 1) / static_cast<double>(ranks) : 0.0;
}

std::string to_json(const Meta& meta, const std::vector<Result>& results,
                    const std::vector<MoeResult>& moe) {
  nlohmann::json doc;
  doc["meta"] = {{"gpu", meta.gpu},         {"gpu_count", meta.gpu_count},
                 {"nccl", meta.nccl},       {"date", meta.date},
                 {"command", meta.command}, {"symmcomm", meta.symmcomm},
                 {"ranks", meta.ranks},     {"sharing", meta.sharing},
                 {"cycles", meta.cycles},   {"cycles_done", meta.cycles_done}};
  doc["results"] = nlohmann::json::array();
  for (const auto& r : results) {
    doc["results"].push_back({{"op", r.op},
                              {"dtype", r.dtype},
                              {"path", r.path},
                              {"requested_path", r.requested},
                              {"plan", r.plan},
                              {"size", r.size},
                              {"count", r.count},
                              {"time_us", r.time_us},
                              {"algbw_GBps", r.algbw},
                              {"busbw_GBps", r.busbw},
                              {"wrong", r.wrong},
                              {"baseline", r.baseline},
                              {"baseline_time_us", r.baseline_time_us},
                              {"ratio_to_baseline", r.ratio()},
                              {"in_place", r.has_in_place}});
    if (r.has_in_place) {
      auto& j = doc["results"].back();
      j["in_place_time_us"] = r.in_place_time_us;
      j["in_place_algbw_GBps"] = r.in_place_algbw;
      j["in_place_busbw_GBps"] = r.in_place_busbw;
      j["in_place_wrong"] = r.in_place_wrong;
    }
  }
  doc["moe"] = nlohmann::json::array();
  for (const auto& m : moe) {
    doc["moe"].push_back({{"cycle", m.cycle},
                          {"tokens_per_rank", m.tokens_per_rank},
                          {"path", m.path},
                          {"dispatch_us", m.dispatch_us},
                          {"combine_us", m.combine_us},
                          {"total_us", m.total_us()}});
  }
  return doc.dump(2);
}

std::string to_csv(const std::vector<Result>& results) {
  std::ostringstream os;
  os << "op,dtype,path,size,count,time_us,algbw_GBps,busbw_GBps,wrong,baseline,baseline_time_us,"
        "ratio_to_baseline,requested_path,in_place_time_us,in_place_busbw_GBps,in_place_wrong\n";
  for (const auto& r : results) {
    os << r.op << ',' << r.dtype << ',' << r.path << ',' << r.size << ',' << r.count << ','
       << r.time_us << ',' << r.algbw << ',' << r.busbw << ',' << r.wrong << ',' << r.baseline
       << ',' << r.baseline_time_us << ',' << r.ratio() << ',' << r.requested << ',';
    if (r.has_in_place) {
      os << r.in_place_time_us << ',' << r.in_place_busbw << ',' << r.in_place_wrong;
    } else {
      os << ",,";
    }
    os << '\n';
  }
  return os.str();
}

std::string to_csv(const std::vector<MoeResult>& moe) {
  std::ostringstream os;
  os << "tokens_per_rank,path,dispatch_us,combine_us,total_us,cycle\n";
  for (const auto& m : moe) {
    os << m.tokens_per_rank << ',' << m.path << ',' << m.dispatch_us << ',' << m.combine_us << ','
       << m.total_us() << ',' << m.cycle << '\n';
  }
  return os.str();
}

bool write_file_atomically(const std::string& path, const std::string& text) {
  std::string const partial = path + ".partial";
  {
    std::ofstream f(partial, std::ios::out | std::ios::trunc);
    f << text;
    if (!f.flush()) return false;
  }
  return std::rename(partial.c_str(), path.c_str()) == 0;
}

std::string check_output_paths(const Config& config) {
  for (auto const& [flag, path] :
       {std::pair<const char*, const std::string&>{"--json", config.json_path},
        std::pair<const char*, const std::string&>{"--csv", config.csv_path}}) {
    if (path.empty()) continue;
    std::ofstream f(path, std::ios::out | std::ios::trunc);
    if (!f)
      return std::string(flag) + " " + path + ": cannot be written (" + std::strerror(errno) + ")";
  }
  return "";
}

std::string timing_note(const Config& config) {
  static const char* const kAverage[] = {"rank 0's time", "mean over ranks", "minimum over ranks",
                                         "maximum over ranks"};
  std::string note = std::string("# times: ") + (config.cpu_time ? "host wall clock" : "device") +
                     " per call, " + kAverage[static_cast<int>(config.average)];
  if (config.graph_launches > 0) {
    note += ", CUDA graph: " + std::to_string(config.iters) + " iterations captured, replayed " +
            std::to_string(config.graph_launches) + " times";
  }
  if (config.blocking) note += ", blocking (host waits for each call)";
  if (config.agg_iters > 1)
    note += ", " + std::to_string(config.agg_iters) + " calls per iteration";
  return note + "\n";
}

std::string table_header() {
  char line[1024];
  std::snprintf(line, sizeof line,
                "#%11s %12s %8s %6s %15s   %37s   %37s   %18s\n"
                "#%11s %12s %8s %6s %15s   %10s %8s %8s %7s   %10s %8s %8s %7s   %10s %7s\n"
                "#%11s %12s %8s %6s %15s   %10s %8s %8s %7s   %10s %8s %8s %7s   %10s %7s\n",
                "", "", "", "", "", "out-of-place", "in-place", "vs plain NCCL", "size", "count",
                "type", "redop", "path", "time", "algbw", "busbw", "#wrong", "time", "algbw",
                "busbw", "#wrong", "nccl time", "ratio", "(B)", "(elements)", "", "", "", "(us)",
                "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "");
  return line;
}

namespace {
std::string wrong_text(long long wrong) {
  return wrong < 0 ? std::string("N/A") : std::to_string(wrong);
}
}  // namespace

std::string format_row(const Result& r) {
  char line[512];
  char in_place[96], baseline[32], ratio[32];
  if (r.has_in_place) {
    std::snprintf(in_place, sizeof in_place, "%10.2f %8.2f %8.2f %7s", r.in_place_time_us,
                  r.in_place_algbw, r.in_place_busbw, wrong_text(r.in_place_wrong).c_str());
  } else {
    std::snprintf(in_place, sizeof in_place, "%10s %8s %8s %7s", "-", "-", "-", "-");
  }
  if (r.baseline_time_us > 0) {
    std::snprintf(baseline, sizeof baseline, "%.2f", r.baseline_time_us);
    std::snprintf(ratio, sizeof ratio, "%.3f", r.ratio());
  } else {
    std::snprintf(baseline, sizeof baseline, "-");
    std::snprintf(ratio, sizeof ratio, "-");
  }
  std::snprintf(
      line, sizeof line, " %11zu %12zu %8s %6s %15s   %10.2f %8.2f %8.2f %7s   %s   %10s %7s",
      r.size, r.count, r.dtype.c_str(), r.op == "allgather" ? "none" : "sum", r.path.c_str(),
      r.time_us, r.algbw, r.busbw, wrong_text(r.wrong).c_str(), in_place, baseline, ratio);
  return line;
}

std::string table_footer(const std::vector<Result>& results) {
  if (results.empty()) return "";
  // As nccl-tests: wrong values and the average over every column group measured.
  double sum = 0;
  int columns = 0;
  long long wrong = 0;
  bool checked = true;
  for (const auto& r : results) {
    sum += r.busbw;
    ++columns;
    if (r.wrong < 0) checked = false;
    wrong += r.wrong < 0 ? 0 : r.wrong;
    if (r.has_in_place) {
      sum += r.in_place_busbw;
      ++columns;
      if (r.in_place_wrong < 0) checked = false;
      wrong += r.in_place_wrong < 0 ? 0 : r.in_place_wrong;
    }
  }
  char line[256];
  std::string out;
  if (checked) {
    std::snprintf(line, sizeof line, "# Out of bounds values : %lld %s\n", wrong,
                  wrong == 0 ? "OK" : "FAILED");
    out += line;
  }
  std::snprintf(line, sizeof line, "# Avg bus bandwidth    : %g\n",
                sum / static_cast<double>(columns));
  return out + line;
}

}  // namespace symmcomm::bench
