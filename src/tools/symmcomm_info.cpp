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
  app.add_flag("--json", json, "JSON (schema symmcomm-info/1) instead of text");
  CLI11_PARSE(app, argc, argv);
  try {
    std::cout << symmcomm::system_report(json ? symmcomm::ReportFormat::Json
                                              : symmcomm::ReportFormat::Text);
  } catch (const std::exception& e) {
    std::cerr << "symmcomm-info: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
