#include "summary.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

namespace symmcomm::bench {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::size_t const n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string span(const std::vector<double>& v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f (%.1f-%.1f)", median(v),
                *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()));
  return text;
}

struct Series {
  std::vector<double> dispatch, combine, total;
};

}  // namespace

std::string moe_summary(const std::vector<MoeResult>& rows, const std::string& reference) {
  int cycles = 0;
  std::vector<std::pair<int, std::string>> order;
  std::map<std::pair<int, std::string>, Series> series;
  for (const MoeResult& r : rows) {
    cycles = std::max(cycles, r.cycle + 1);
    auto const key = std::make_pair(r.tokens_per_rank, r.path);
    if (series.count(key) == 0) order.push_back(key);
    Series& s = series[key];
    s.dispatch.push_back(r.dispatch_us);
    s.combine.push_back(r.combine_us);
    s.total.push_back(r.total_us());
  }
  if (cycles < 2) return "";
  std::string out = "# summary: medians of " + std::to_string(cycles) + " cycles (min-max), us" +
                    (reference.empty() ? "" : "; x: the sum's median over " + reference + "'s") +
                    "\n";
  char line[256];
  std::snprintf(line, sizeof line, "#%9s %18s %20s %20s %20s%s\n", "tokens", "path", "dispatch",
                "combine", "total", reference.empty() ? "" : "      x");
  out += line;
  for (const auto& key : order) {
    const Series& s = series[key];
    std::string ratio;
    auto const ref = series.find(std::make_pair(key.first, reference));
    if (!reference.empty() && ref != series.end()) {
      char r[32];
      std::snprintf(r, sizeof r, " %6.2f", median(s.total) / median(ref->second.total));
      ratio = r;
    }
    std::snprintf(line, sizeof line, " %9d %18s %20s %20s %20s%s\n", key.first, key.second.c_str(),
                  span(s.dispatch).c_str(), span(s.combine).c_str(), span(s.total).c_str(),
                  ratio.c_str());
    out += line;
  }
  return out;
}

}  // namespace symmcomm::bench
