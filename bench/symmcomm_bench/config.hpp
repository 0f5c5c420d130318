#pragma once
// symmcomm-bench's configuration and the pure arithmetic of its report (CPU-testable): command
// line parsing with nccl-tests' flags, size sweeps, bus bandwidth, JSON/CSV output.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "symmcomm/collectives/options.hpp"
#include "symmcomm/formats/traits.hpp"

namespace symmcomm::bench {

/// Paths the benchmark can ask for; Nccl is plain NCCL on plain cudaMalloc buffers.
enum class BenchPath { Auto, NcclSymmetric, Lsa, Fallback, Nccl };
enum class Scenario { None, MoeDp, MoeA2a };
/// nccl-tests' -a: the time reported is rank 0's, the ranks' mean, minimum or maximum.
enum class Average { Rank0 = 0, Mean = 1, Min = 2, Max = 3 };

/// nccl-tests' name of an operation ("allgather", "reducescatter"); data types print as the
/// library names them (to_string(DataType): "nvfp4", "fp8e4m3", "fp8e5m2", "bf16").
const char* to_string(Operation op);
const char* to_string(BenchPath path);

struct Config {
  Operation op = Operation::AllGather;
  DataType dtype = DataType::Bf16;
  BenchPath path = BenchPath::Auto;
  std::size_t min_bytes = 32 << 20;
  std::size_t max_bytes = 32 << 20;
  std::size_t step_factor = 2;
  std::size_t step_bytes = 0;  // -i: sizes grow by this many bytes (0: by -f)
  int iters = 20;
  int warmup = 5;
  bool check = true;
  int check_rounds = 1;    // -c N: N checks per size and column, each with fresh inputs
  int graph_launches = 0;  // -G N: capture the -n iterations as a CUDA graph, replay it N times
  Average average = Average::Mean;  // -a: how the ranks' times combine
  bool blocking = false;            // -z 1: the host waits for every call
  int agg_iters = 1;                // -m: calls per timed iteration
  int run_cycles = 1;               // -N: the whole sweep this many times
  int timeout_s = 0;                // -T: a size's measurement gives up after this (0: never)
  bool cpu_time = false;            // -C 1: host wall-clock time instead of device time
  int gpus = 0;                     // 0: all visible
  int ranks_per_gpu = 1;            // --ranks-per-gpu: ranks of this process on each GPU
  std::string json_path;
  std::string csv_path;
  Scenario scenario = Scenario::None;
  int moe_hidden = 7168;
  int moe_topk = 8;
  int moe_max_tokens = 4096;
  int moe_min_tokens = 1;  // the scenarios' first tokens per rank, doubled up to moe_max_tokens
  int moe_experts = 256;   // moe-a2a: experts of the layer (a multiple of the ranks)
  DataType moe_wire = DataType::Nvfp4;    // moe-a2a: the rows' format (Nvfp4, Fp8E4M3, Bf16)
  DataType moe_combine = DataType::Bf16;  // Bf16 or Nvfp4
  std::string command_line;
};

/// Parses "512", "4K", "1M", "1G" (binary multiples, case-insensitive). Throws
/// std::invalid_argument naming the text.
std::size_t parse_size(const std::string& text);

/// Parses the command line. Returns the config, or an exit code when it printed help or a
/// usage error (0 for --help, 1 for bad flags).
struct ParseResult {
  std::optional<Config> config;
  int exit_code = 0;
};
ParseResult parse_command_line(int argc, const char* const* argv);

/// min, min*f, ... up to max (inclusive of max when reached exactly; max alone if min > max);
/// with `step_bytes` > 0: min, min+step, ... up to max (nccl-tests' -i).
std::vector<std::size_t> size_sweep(std::size_t min_bytes, std::size_t max_bytes,
                                    std::size_t factor, std::size_t step_bytes = 0);

/// Checks that --json and --csv can be written, before any measurement: "" when they can, else
/// the flag, the path and the operating system's reason. Creates (truncates) the files.
std::string check_output_paths(const Config& config);

/// The column header's note on how times were taken (-G, -C, -a, -z, -m), "" for the defaults.
std::string timing_note(const Config& config);

/// Payload bytes per element: nvfp4 9/16 (data + block scales), fp8 1, bf16 2.
double bytes_per_element(DataType dtype);

/// Elements for a size in bytes on `ranks` ranks: total count, a multiple of 16 * ranks (every
/// rank's part a whole number of NVFP4 blocks and 16-element reduction groups), at least that.
std::size_t element_count(DataType dtype, std::size_t bytes, int ranks);

/// nccl-tests' bus bandwidth for all-gather and reduce-scatter: algbw * (n - 1) / n.
double bus_bandwidth(double algbw, int ranks);

/// One line of the report.
struct Result {
  std::string op, dtype;
  std::string requested;        // --path as given
  std::string path;             // the path the call took (symmcomm's names, "nccl" for plain NCCL)
  std::string plan;             // the reason symmcomm gave for it
  std::size_t size = 0;         // bytes (nccl-tests' meaning: whole payload)
  std::size_t count = 0;        // elements (whole payload)
  double time_us = 0;           // mean per iteration, max over ranks
  double algbw = 0;             // GB/s
  double busbw = 0;             // GB/s
  long long wrong = -1;         // -1: not checked
  double baseline_time_us = 0;  // plain NCCL measured in the same run (0: none)
  std::string baseline;         // what the baseline was
  double ratio() const { return baseline_time_us > 0 ? time_us / baseline_time_us : 0.0; }
  // In place (nccl-tests' second column group): the all-gather's send is the rank's segment of
  // the receive buffer, the bf16 reduce-scatter's output the rank's shard of its input. Absent
  // where the types differ (quantized reduce-scatter into bf16).
  bool has_in_place = false;
  double in_place_time_us = 0, in_place_algbw = 0, in_place_busbw = 0;
  long long in_place_wrong = -1;
};

/// The moe-dp and moe-a2a scenarios: one MoE layer's communication per tokens-per-rank value.
struct MoeResult {
  int tokens_per_rank = 0;
  std::string path;
  double dispatch_us = 0, combine_us = 0;
  int cycle = 0;  ///< which -N repetition of the scenario (0-based)
  double total_us() const { return dispatch_us + combine_us; }
};

/// Run metadata for the JSON/CSV outputs.
struct Meta {
  std::string gpu;
  int gpu_count = 0;
  std::string nccl;
  std::string date;
  std::string command;
  std::string symmcomm;
  int ranks = 0;        ///< ranks in the communicator (gpu_count counts them as well)
  std::string sharing;  ///< how ranks map to GPUs ("one GPU per rank", or how they share)
  int cycles = 1;       ///< -N: the cycles asked for
  /// Cycles whose rows the outputs hold: the outputs are rewritten after every cycle, so a run
  /// stopped early keeps what it measured and says so (cycles_done < cycles).
  int cycles_done = 0;
};

/// JSON document: {"meta": {...}, "results": [...], "moe": [...]}.
std::string to_json(const Meta& meta, const std::vector<Result>& results,
                    const std::vector<MoeResult>& moe);
/// Writes `text` to `path` through a temporary file renamed over it, so that a run stopped while
/// writing leaves the previous complete file, never a truncated one. False when it cannot.
bool write_file_atomically(const std::string& path, const std::string& text);
/// CSV with a header line, one row per result.
std::string to_csv(const std::vector<Result>& results);
/// CSV of the moe-dp scenario: a header line, one row per tokens-per-rank value.
std::string to_csv(const std::vector<MoeResult>& moe);
/// The nccl-tests-style table line for a result.
std::string format_row(const Result& r);
/// The table header (two lines).
std::string table_header();
/// nccl-tests' closing lines: "# Out of bounds values : N OK|FAILED" (omitted when nothing was
/// checked; counts in-place columns too) and "# Avg bus bandwidth    : X" (mean busbw over the
/// sizes' out-of-place and in-place columns, GB/s).
std::string table_footer(const std::vector<Result>& results);

}  // namespace symmcomm::bench
