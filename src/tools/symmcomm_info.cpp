// symmcomm-info: prints what symmcomm will do on this machine (symmcomm/system_report.hpp), as
// text or, with --json, as JSON for bug reports. Exits 0 whatever it could not learn (no GPU, no
// driver): the report says what and why.

#include <CLI/CLI.hpp>

#include <iostream>

#include "symmcomm/system_report.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "symmcomm-info: what symmcomm will do on this machine (attach --json to bug reports)"};
  bool json = false;
  int ranks = 0;
  app.add_flag("--json", json, "JSON (schema symmcomm-info/1) instead of text");
  app.add_option("--ranks", ranks,
                 "also make this many ranks of one communicator sharing GPU 0 (threads of this "
                 "process; > 1 needs NCCL >= 2.30, NCCL_MULTI_RANK_GPU_ENABLE=1 is set for them) "
                 "and report what each found")
      ->check(CLI::Range(0, 64));
  CLI11_PARSE(app, argc, argv);
  try {
    std::cout << symmcomm::system_report(
        json ? symmcomm::ReportFormat::Json : symmcomm::ReportFormat::Text, ranks);
  } catch (const std::exception& e) {
    std::cerr << "symmcomm-info: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
