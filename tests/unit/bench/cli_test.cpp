#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "config.hpp"
#include "support/shared_gpu.hpp"
#include "symmcomm/runtime.hpp"
#include "symmcomm/version.h"

namespace {

using namespace symmcomm::bench;
using symmcomm::DataType;
using symmcomm::Operation;

ParseResult parse(std::vector<const char*> args) {
  args.insert(args.begin(), "symmcomm-bench");
  return parse_command_line(static_cast<int>(args.size()), args.data());
}

TEST(BenchCli, SizesWithSuffixes) {
  EXPECT_EQ(parse_size("512"), 512u);
  EXPECT_EQ(parse_size("4K"), 4096u);
  EXPECT_EQ(parse_size("1m"), 1u << 20);
  EXPECT_EQ(parse_size("2G"), std::size_t{2} << 30);
  EXPECT_EQ(parse_size("8KB"), 8192u);
  EXPECT_THROW(parse_size("12X"), std::invalid_argument);
  EXPECT_THROW(parse_size("K"), std::invalid_argument);
  EXPECT_THROW(parse_size("-4K"), std::invalid_argument);
  EXPECT_THROW(parse_size(""), std::invalid_argument);
}

TEST(BenchCli, NcclTestsFlags) {
  auto r = parse({"--op",   "reducescatter",
                  "-d",     "nvfp4",
                  "--path", "fallback",
                  "-b",     "1K",
                  "-e",     "1G",
                  "-f",     "4",
                  "-n",     "7",
                  "-w",     "2",
                  "-c",     "0",
                  "-g",     "2",
                  "--json", "o.json"});
  ASSERT_TRUE(r.config.has_value());
  Config const& c = *r.config;
  EXPECT_EQ(c.op, Operation::ReduceScatter);
  EXPECT_EQ(c.dtype, DataType::Nvfp4);
  EXPECT_EQ(c.path, BenchPath::Fallback);
  EXPECT_EQ(c.min_bytes, 1024u);
  EXPECT_EQ(c.max_bytes, std::size_t{1} << 30);
  EXPECT_EQ(c.step_factor, 4u);
  EXPECT_EQ(c.iters, 7);
  EXPECT_EQ(c.warmup, 2);
  EXPECT_FALSE(c.check);
  EXPECT_EQ(c.gpus, 2);
  EXPECT_EQ(c.json_path, "o.json");
  EXPECT_NE(c.command_line.find("--op reducescatter"), std::string::npos);
}

TEST(BenchCli, BadFlagsAreUsageErrors) {
  EXPECT_EQ(parse({"--dtype", "fp16"}).exit_code, 1);
  EXPECT_EQ(parse({"--path", "magic"}).exit_code, 1);
  EXPECT_EQ(parse({"--bogus"}).exit_code, 1);
  EXPECT_EQ(parse({"-b", "1Q"}).exit_code, 1);
  EXPECT_EQ(parse({"-b", "1G", "-e", "1M"}).exit_code, 1);
  EXPECT_EQ(parse({"-f", "1"}).exit_code, 1);
  EXPECT_FALSE(parse({"-n", "0"}).config.has_value());
  auto help = parse({"--help"});
  EXPECT_FALSE(help.config.has_value());
  EXPECT_EQ(help.exit_code, 0);
  auto moe = parse({"--scenario", "moe-dp", "--moe-combine", "nvfp4"});
  ASSERT_TRUE(moe.config.has_value());
  EXPECT_EQ(moe.config->scenario, Scenario::MoeDp);
  EXPECT_EQ(moe.config->moe_combine, DataType::Nvfp4);
}

TEST(BenchCli, RanksPerGpuIsParsedAndBounded) {
  EXPECT_EQ(parse({}).config->ranks_per_gpu, 1);
  auto r = parse({"--ranks-per-gpu", "4", "--scenario", "moe-dp"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->ranks_per_gpu, 4);
  EXPECT_EQ(parse({"--ranks-per-gpu", "0"}).exit_code, 1);
  EXPECT_EQ(parse({"--ranks-per-gpu", "65"}).exit_code, 1);
}

// Whether ranks of one process may share a GPU: said from the loaded NCCL and the variable
// NCCL reads, before anything is created (symmcomm-bench --ranks-per-gpu, the rank world of
// the micro-benchmarks).
TEST(BenchCli, SharingAGpuNeedsNccl230AndTheVariable) {
  symmcomm::NcclVersion const v = symmcomm::nccl_runtime_version();
  const char* before = std::getenv("NCCL_MULTI_RANK_GPU_ENABLE");
  std::string const saved = before != nullptr ? before : "";
  bool const new_enough = v.major > 2 || (v.major == 2 && v.minor >= 30);
  unsetenv("NCCL_MULTI_RANK_GPU_ENABLE");
  std::string const unset = symmcomm::test::why_ranks_cannot_share_a_gpu();
  setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 1);
  std::string const set = symmcomm::test::why_ranks_cannot_share_a_gpu();
  if (before != nullptr) {
    setenv("NCCL_MULTI_RANK_GPU_ENABLE", saved.c_str(), 1);
  } else {
    unsetenv("NCCL_MULTI_RANK_GPU_ENABLE");
  }
  if (new_enough) {
    EXPECT_NE(unset.find("set NCCL_MULTI_RANK_GPU_ENABLE=1"), std::string::npos) << unset;
    EXPECT_EQ(set, "");
  } else {
    std::string const version = "NCCL " + std::to_string(v.major) + "." + std::to_string(v.minor) +
                                "." + std::to_string(v.patch) +
                                " cannot put several ranks on one GPU";
    EXPECT_NE(unset.find(version), std::string::npos) << unset;
    EXPECT_NE(set.find(version), std::string::npos) << set;
  }
}

TEST(BenchCli, SizeSweep) {
  EXPECT_EQ(size_sweep(1024, 8192, 2), (std::vector<std::size_t>{1024, 2048, 4096, 8192}));
  EXPECT_EQ(size_sweep(1024, 5000, 2), (std::vector<std::size_t>{1024, 2048, 4096}));
  EXPECT_EQ(size_sweep(1 << 10, 1 << 30, 4).size(), 11u);
  EXPECT_EQ(size_sweep(64, 64, 2), (std::vector<std::size_t>{64}));
  EXPECT_EQ(size_sweep(std::size_t{1} << 62, std::size_t{1} << 63, 4).size(), 1u);  // no overflow
}

TEST(BenchCli, BusBandwidthAndCounts) {
  EXPECT_DOUBLE_EQ(bus_bandwidth(100.0, 8), 87.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth(100.0, 1), 0.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth(100.0, 2), 50.0);
  EXPECT_EQ(element_count(DataType::Bf16, 1 << 20, 8), (1u << 19));
  EXPECT_EQ(element_count(DataType::Nvfp4, 9 << 10, 1), 16u << 10);
  EXPECT_EQ(element_count(DataType::Fp8E4M3, 100, 8) % (16 * 8), 0u);
  EXPECT_EQ(element_count(DataType::Fp8E4M3, 1, 8), 128u);  // never empty
}

TEST(BenchCli, JsonSchemaAndTableRow) {
  Result r;
  r.op = "allgather";
  r.dtype = "nvfp4";
  r.path = "auto";
  r.plan = "fallback: ...";
  r.size = 1 << 20;
  r.count = 1864135;
  r.time_us = 10.0;
  r.algbw = 104.8576;
  r.busbw = 91.75;
  r.wrong = 0;
  r.baseline_time_us = 20.0;
  r.baseline = "nccl";
  MoeResult m{16, "auto", 5.0, 7.0};
  Meta meta{"NVIDIA H200",
            8,
            "2.28.3",
            "2026-12-02",
            "symmcomm-bench -b 1M",
            "0.1.0",
            8,
            "8 ranks of this process share each GPU: NCCL_MULTI_RANK_GPU_ENABLE=1"};
  meta.cycles = 5;
  meta.cycles_done = 3;
  auto const doc = nlohmann::json::parse(to_json(meta, {r}, {m}));
  EXPECT_EQ(doc["meta"]["cycles"], 5);
  EXPECT_EQ(doc["meta"]["cycles_done"], 3) << "a run stopped early says how far it came";
  EXPECT_EQ(doc["meta"]["gpu_count"], 8);
  EXPECT_EQ(doc["meta"]["ranks"], 8);
  EXPECT_EQ(doc["meta"]["sharing"],
            "8 ranks of this process share each GPU: "
            "NCCL_MULTI_RANK_GPU_ENABLE=1");
  EXPECT_EQ(doc["meta"]["nccl"], "2.28.3");
  ASSERT_EQ(doc["results"].size(), 1u);
  for (const char* key :
       {"op", "dtype", "path", "requested_path", "plan", "size", "count", "time_us", "algbw_GBps",
        "busbw_GBps", "wrong", "baseline", "baseline_time_us", "ratio_to_baseline"}) {
    EXPECT_TRUE(doc["results"][0].contains(key)) << key;
  }
  EXPECT_DOUBLE_EQ(doc["results"][0]["ratio_to_baseline"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(doc["moe"][0]["total_us"].get<double>(), 12.0);
  EXPECT_EQ(doc["moe"][0]["cycle"], 0);
  std::string const row = format_row(r);
  EXPECT_NE(row.find("1048576"), std::string::npos);
  EXPECT_NE(row.find("nvfp4"), std::string::npos);
  EXPECT_NE(row.find("0.500"), std::string::npos);
  EXPECT_NE(table_header().find("busbw"), std::string::npos);
  EXPECT_NE(to_csv({r}).find("op,dtype,path,size"), std::string::npos);
}

TEST(BenchCli, OutputsAreReplacedWholeOrNotAtAll) {
  std::string const dir = ::testing::TempDir();
  std::string const path = dir + "/symmcomm-bench-outputs-test.json";
  ASSERT_TRUE(write_file_atomically(path, "{\"cycle\": 1}"));
  ASSERT_TRUE(write_file_atomically(path, "{\"cycle\": 2}"));
  std::ifstream in(path);
  std::string const text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "{\"cycle\": 2}") << "the later write replaces the earlier one whole";
  EXPECT_FALSE(std::ifstream(path + ".partial").good()) << "no temporary file is left behind";
  std::remove(path.c_str());
  EXPECT_FALSE(write_file_atomically(dir + "/no-such-directory/out.json", "{}"))
      << "an unwritable path is reported, not ignored";
}

TEST(BenchCli, NcclTestsNamesForTypesReductionRegistrationAndCheck) {
  auto bf = parse({"-d", "bfloat16"});
  ASSERT_TRUE(bf.config.has_value());
  EXPECT_EQ(bf.config->dtype, DataType::Bf16);
  EXPECT_EQ(parse({"-d", "f8e4m3"}).config->dtype, DataType::Fp8E4M3);
  EXPECT_EQ(parse({"-d", "f8e5m2"}).config->dtype, DataType::Fp8E5M2);
  EXPECT_EQ(parse({"-d", "float"}).exit_code, 1);  // no fp32 collectives in the benchmark
  EXPECT_TRUE(parse({"--op", "reducescatter", "-o", "sum"}).config.has_value());
  EXPECT_EQ(parse({"-o", "max"}).exit_code, 1);  // symmcomm only sums
  // -R: registration as nccl-tests means it, mapped onto paths.
  EXPECT_EQ(parse({"-R", "0"}).config->path, BenchPath::Nccl);
  EXPECT_EQ(parse({"-R", "1"}).config->path, BenchPath::Fallback);
  EXPECT_EQ(parse({"-R", "2"}).config->path, BenchPath::Auto);
  EXPECT_EQ(parse({"-R", "3"}).exit_code, 1);
  EXPECT_EQ(parse({"-R", "2", "--path", "lsa"}).exit_code, 1);  // one or the other
  // The library's name for the path, and the short one.
  EXPECT_EQ(parse({"--path", "lsa-kernel"}).config->path, BenchPath::Lsa);
  EXPECT_EQ(parse({"--path", "lsa"}).config->path, BenchPath::Lsa);
  EXPECT_STREQ(to_string(BenchPath::Lsa), "lsa-kernel");
  // -c is nccl-tests' check iteration count: any positive count checks.
  EXPECT_TRUE(parse({"-c", "5"}).config->check);
  EXPECT_FALSE(parse({"-c", "0"}).config->check);
  // ... and symmcomm runs that many checks (fresh inputs each): the stream-order stress case.
  EXPECT_EQ(parse({"-c", "200"}).config->check_rounds, 200);
  EXPECT_EQ(parse({}).config->check_rounds, 1);
}

TEST(BenchCli, HelpShowsDefaults) {
  ::testing::internal::CaptureStdout();
  auto const help = parse({"--help"});
  std::string const text = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(text.find("32M"), std::string::npos) << text;        // -b / -e
  EXPECT_NE(text.find("allgather"), std::string::npos) << text;  // --op
}

TEST(BenchCli, VersionNamesTheLibraryAndTheNcclItWasBuiltAgainst) {
  ::testing::internal::CaptureStdout();
  auto const version = parse({"--version"});
  std::string const text = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_FALSE(version.config.has_value());
  EXPECT_NE(text.find(std::string("symmcomm-bench ") + SYMMCOMM_VERSION_STRING), std::string::npos)
      << text;
  EXPECT_NE(text.find(std::string("built against NCCL ") + SYMMCOMM_NCCL_BUILD_VERSION_STRING),
            std::string::npos)
      << text;
}

TEST(BenchCli, FooterSaysWrongValuesAndAverageBusBandwidth) {
  Result a, b;
  a.busbw = 10.0;
  b.busbw = 30.0;
  a.wrong = 0;
  b.wrong = 0;
  std::string footer = table_footer({a, b});
  EXPECT_NE(footer.find("# Out of bounds values : 0 OK"), std::string::npos) << footer;
  EXPECT_NE(footer.find("# Avg bus bandwidth    : 20"), std::string::npos) << footer;
  b.wrong = 3;
  EXPECT_NE(table_footer({a, b}).find(": 3 FAILED"), std::string::npos);
  b.wrong = -1;  // not checked: no verdict line
  EXPECT_EQ(table_footer({a, b}).find("Out of bounds"), std::string::npos);
  EXPECT_EQ(table_footer({}), "");
}

// nccl-tests' two column groups: out-of-place, then in-place where the call has one.
TEST(BenchCli, InPlaceColumnsWhereMeaningfulAndTalliedInTheFooter) {
  Result r;
  r.op = "allgather";
  r.dtype = "bf16";
  r.path = "lsa-kernel";
  r.size = 4096;
  r.count = 2048;
  r.time_us = 10.0;
  r.busbw = 10.0;
  r.wrong = 0;
  EXPECT_NE(table_header().find("out-of-place"), std::string::npos) << table_header();
  EXPECT_NE(table_header().find("in-place"), std::string::npos) << table_header();
  auto const dashes = [](const std::string& row) {
    std::istringstream words(row);
    int count = 0;
    for (std::string w; words >> w;) count += w == "-";
    return count;
  };
  std::string row = format_row(r);
  EXPECT_EQ(dashes(row), 6) << row;  // four in-place columns, no baseline, no ratio
  r.has_in_place = true;
  r.in_place_time_us = 12.5;
  r.in_place_algbw = 0.33;
  r.in_place_busbw = 30.0;
  r.in_place_wrong = 0;
  row = format_row(r);
  EXPECT_EQ(dashes(row), 2) << row;
  EXPECT_NE(row.find("12.50"), std::string::npos) << row;
  EXPECT_NE(row.find("30.00"), std::string::npos) << row;
  std::string footer = table_footer({r});
  EXPECT_NE(footer.find("# Avg bus bandwidth    : 20"), std::string::npos) << footer;  // (10+30)/2
  r.in_place_wrong = 5;
  EXPECT_NE(table_footer({r}).find(": 5 FAILED"), std::string::npos);
  auto const doc = nlohmann::json::parse(to_json(
      Meta{"gpu", 1, "2.28.3", "2026-12-03", "cmd", "0.1.0", 1, "one GPU per rank"}, {r}, {}));
  EXPECT_EQ(doc["results"][0]["in_place_wrong"], 5);
  EXPECT_DOUBLE_EQ(doc["results"][0]["in_place_time_us"].get<double>(), 12.5);
  EXPECT_NE(to_csv({r}).find(",12.5,30,5"), std::string::npos) << to_csv({r});
}

}  // namespace

namespace {

// What a refused command line printed on stderr (and that it was refused with exit code 1).
std::string refusal(std::vector<const char*> args) {
  ::testing::internal::CaptureStderr();
  ParseResult const r = parse(std::move(args));
  std::string const text = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(r.config.has_value()) << text;
  EXPECT_EQ(r.exit_code, 1) << text;
  return text;
}

TEST(BenchCli, NcclTestsTimingFlags) {
  auto r = parse(
      {"-G", "5", "-a", "3", "-m", "4", "-N", "2", "-T", "30", "-C", "1", "-t", "1", "-p", "0"});
  ASSERT_TRUE(r.config.has_value());
  Config const& c = *r.config;
  EXPECT_EQ(c.graph_launches, 5);
  EXPECT_EQ(c.average, Average::Max);
  EXPECT_EQ(c.agg_iters, 4);
  EXPECT_EQ(c.run_cycles, 2);
  EXPECT_EQ(c.timeout_s, 30);
  EXPECT_TRUE(c.cpu_time);
  EXPECT_FALSE(c.blocking);
  // nccl-tests' defaults: the mean over ranks, plain launches, one call per iteration.
  Config const d = *parse({}).config;
  EXPECT_EQ(d.average, Average::Mean);
  EXPECT_EQ(d.graph_launches, 0);
  EXPECT_EQ(d.agg_iters, 1);
  EXPECT_EQ(d.run_cycles, 1);
  EXPECT_EQ(d.timeout_s, 0);
  EXPECT_TRUE(parse({"-z", "1"}).config->blocking);
  // The header says how times were taken.
  std::string const note = timing_note(c);
  EXPECT_NE(note.find("host wall clock"), std::string::npos) << note;
  EXPECT_NE(note.find("maximum over ranks"), std::string::npos) << note;
  EXPECT_NE(note.find("CUDA graph: 20 iterations captured, replayed 5 times"), std::string::npos)
      << note;
  EXPECT_NE(note.find("4 calls per iteration"), std::string::npos) << note;
  EXPECT_NE(timing_note(d).find("device per call, mean over ranks"), std::string::npos);
}

TEST(BenchCli, StepBytesGrowSizesAdditively) {
  auto r = parse({"-b", "1K", "-e", "4K", "-i", "1K"});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->step_bytes, 1024u);
  EXPECT_EQ(size_sweep(1024, 4096, 2, 1024), (std::vector<std::size_t>{1024, 2048, 3072, 4096}));
  EXPECT_EQ(size_sweep(1024, 4000, 2, 1024), (std::vector<std::size_t>{1024, 2048, 3072}));
  EXPECT_EQ(size_sweep(~std::size_t{0} - 10, ~std::size_t{0}, 2, 8).size(), 2u);  // no overflow
  EXPECT_NE(refusal({"-i", "1K", "-f", "4"}).find("excludes"), std::string::npos);
  EXPECT_NE(refusal({"-i", "0"}).find("-i 0"), std::string::npos);
}

TEST(BenchCli, FlagsWithoutMeaningHereAreRefusedByName) {
  EXPECT_NE(refusal({"-t", "4"}).find("-t 4: one thread per process only"), std::string::npos);
  EXPECT_NE(refusal({"-p", "1"}).find("-p 1: parallel initialisation is not supported"),
            std::string::npos);
  EXPECT_NE(refusal({"-G", "1", "-z", "1"}).find("-z 1 with -G 1"), std::string::npos);
  EXPECT_NE(refusal({"-N", "0"}).find("--run_cycles"), std::string::npos);
  EXPECT_NE(refusal({"-a", "4"}).find("--average"), std::string::npos);
  // moe-dp sets its own sizes, formats and paths: the sweep's flags are not silently ignored.
  for (const char* flag : {"-d", "-b", "--path"}) {
    const char* value = std::string(flag) == "-d"   ? "nvfp4"
                        : std::string(flag) == "-b" ? "1K"
                                                    : "lsa";
    std::string const text = refusal({"--scenario", "moe-dp", flag, value});
    EXPECT_NE(text.find("--scenario moe-dp sets its own"), std::string::npos)
        << flag << ": " << text;
  }
  EXPECT_TRUE(parse({"--scenario", "moe-dp", "--moe-max-tokens", "256"}).config.has_value());
  // One size alone (a profiler's run), and a first size past the last refused by name.
  auto const one =
      parse({"--scenario", "moe-a2a", "--moe-min-tokens", "256", "--moe-max-tokens", "256"});
  ASSERT_TRUE(one.config.has_value());
  EXPECT_EQ(one.config->moe_min_tokens, 256);
  EXPECT_NE(refusal({"--scenario", "moe-dp", "--moe-min-tokens", "512", "--moe-max-tokens", "256"})
                .find("--moe-min-tokens 512 is above --moe-max-tokens 256"),
            std::string::npos);
  // CUDA graphs apply to moe-dp's layers as to the sweep (decode runs in graphs).
  auto const graphs = parse({"--scenario", "moe-dp", "-G", "10"});
  ASSERT_TRUE(graphs.config.has_value());
  EXPECT_EQ(graphs.config->graph_launches, 10);
  EXPECT_NE(timing_note(*graphs.config).find("CUDA graph"), std::string::npos);
  // moe-a2a: the layer by expert, its experts settable, the sweep's flags refused as for moe-dp.
  auto const a2a = parse({"--scenario", "moe-a2a", "--moe-experts", "64", "-G", "5"});
  ASSERT_TRUE(a2a.config.has_value());
  EXPECT_EQ(a2a.config->scenario, Scenario::MoeA2a);
  EXPECT_EQ(a2a.config->moe_experts, 64);
  EXPECT_EQ(a2a.config->moe_wire, DataType::Nvfp4);
  auto const wire = parse({"--scenario", "moe-a2a", "--moe-wire", "bf16"});
  ASSERT_TRUE(wire.config.has_value());
  EXPECT_EQ(wire.config->moe_wire, DataType::Bf16);
  EXPECT_NE(refusal({"--scenario", "moe-a2a", "-b", "1K"}).find("--scenario moe-a2a sets its own"),
            std::string::npos);
  EXPECT_NE(refusal({"--scenario", "moe-a2a", "--moe-experts", "0"}).find("--moe-experts"),
            std::string::npos);
}

TEST(BenchCli, SizesThatOverflowAreRefused) {
  EXPECT_THROW(parse_size("17179869185G"), std::invalid_argument);
  EXPECT_THROW(parse_size("99999999999999999999999"), std::invalid_argument);
  EXPECT_EQ(parse_size("16G"), std::size_t{16} << 30);
  EXPECT_NE(refusal({"-e", "17179869185G"}).find("does not fit in 64 bits"), std::string::npos);
}

TEST(BenchCli, OutputPathsAreCheckedBeforeTheSweepWithTheOsReason) {
  Config c;
  c.json_path = "/nonexistent-dir/out.json";
  std::string const why = check_output_paths(c);
  EXPECT_NE(
      why.find("--json /nonexistent-dir/out.json: cannot be written (No such file or directory)"),
      std::string::npos)
      << why;
  c.json_path = ::testing::TempDir() + "symmcomm-bench-out.json";
  c.csv_path = "/proc/forbidden.csv";
  EXPECT_NE(check_output_paths(c).find("--csv /proc/forbidden.csv: cannot be written ("),
            std::string::npos);
  c.csv_path = ::testing::TempDir() + "symmcomm-bench-out.csv";
  EXPECT_EQ(check_output_paths(c), "");
}

TEST(BenchCli, MoeCsvHasItsRows) {
  MoeResult m;
  m.tokens_per_rank = 64;
  m.path = "auto";
  m.dispatch_us = 10.5;
  m.combine_us = 2;
  MoeResult again = m;
  again.cycle = 1;
  std::string const csv = to_csv(std::vector<MoeResult>{m, again});
  EXPECT_EQ(csv,
            "tokens_per_rank,path,dispatch_us,combine_us,total_us,cycle\n"
            "64,auto,10.5,2,12.5,0\n64,auto,10.5,2,12.5,1\n");
}

}  // namespace
