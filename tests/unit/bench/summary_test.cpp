// symmcomm-bench's summary of a scenario run over cycles: medians and min-max, never the best.
#include "summary.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using symmcomm::bench::moe_summary;
using symmcomm::bench::MoeResult;

MoeResult row(int tokens, const char* path, double dispatch, double combine, int cycle) {
  MoeResult r;
  r.tokens_per_rank = tokens;
  r.path = path;
  r.dispatch_us = dispatch;
  r.combine_us = combine;
  r.cycle = cycle;
  return r;
}

TEST(BenchSummary, MediansWithMinMaxAndTheRatioToTheReference) {
  std::vector<MoeResult> rows;
  double const lsa[] = {30, 10, 20};  // the cycles' dispatch times: median 20, min 10, max 30
  for (int cycle = 0; cycle < 3; ++cycle) {
    rows.push_back(row(1, "moe-group-lsa", lsa[cycle], 5, cycle));
    rows.push_back(row(1, "ag-rs", 8, 2, cycle));
  }
  std::string const text = moe_summary(rows, "ag-rs");
  EXPECT_NE(text.find("medians of 3 cycles (min-max), us; x: the sum's median over ag-rs's"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("20.0 (10.0-30.0)"), std::string::npos) << text;  // dispatch
  EXPECT_NE(text.find("25.0 (15.0-35.0)"), std::string::npos) << text;  // the sum
  EXPECT_NE(text.find("2.50"), std::string::npos) << text;              // 25 / 10
  EXPECT_NE(text.find("1.00"), std::string::npos) << text;              // the reference itself
  EXPECT_LT(text.find("moe-group-lsa"), text.find("ag-rs     "));       // first-seen order
}

TEST(BenchSummary, OneCycleHasNoSummaryAndNoReferenceNoRatio) {
  EXPECT_EQ(moe_summary({row(4, "padded", 1, 1, 0)}, "ag-rs"), "");
  std::string const text = moe_summary({row(4, "padded", 1, 1, 0), row(4, "padded", 3, 1, 1)}, "");
  EXPECT_NE(text.find("3.0 (2.0-4.0)"), std::string::npos) << text;
  EXPECT_EQ(text.find(" x"), std::string::npos) << text;
}

}  // namespace
