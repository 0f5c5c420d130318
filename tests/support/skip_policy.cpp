// The skip policy of every test program (skip_policy.hpp): a gtest listener installed at static
// initialisation, before any main runs RUN_ALL_TESTS.

#include "support/skip_policy.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace symmcomm::test {
namespace {

std::vector<std::string> allowed_reasons(bool& active) {
  std::vector<std::string> out;
  const char* v = std::getenv("SYMMCOMM_ALLOWED_SKIPS");
  active = v != nullptr;
  if (v == nullptr) return out;
  std::string const list = v;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = list.find('|', start);
    if (end == std::string::npos) end = list.size();
    if (end > start) out.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

class SkipPolicy : public ::testing::EmptyTestEventListener {
 public:
  SkipPolicy() { allowed_ = allowed_reasons(active_); }

  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.skipped()) reason_ = r.message();
  }
  void OnTestStart(const ::testing::TestInfo&) override { reason_.clear(); }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (!info.result()->Skipped()) return;
    Skip s{std::string(info.test_suite_name()) + "." + info.name(), reason_, !active_};
    for (const std::string& a : allowed_)
      s.allowed = s.allowed || reason_.find(a) != std::string::npos;
    if (!s.allowed) ++unexpected_;
    skips_.push_back(s);
  }
  void OnTestProgramEnd(const ::testing::UnitTest&) override {
    if (skips_.empty()) return;
    std::printf("Skipped tests (%zu%s):\n", skips_.size(),
                active_ ? (", " + std::to_string(unexpected_) + " unexpected").c_str() : "");
    for (const Skip& s : skips_) {
      std::printf("  %s%s: %s\n", s.allowed ? "" : "UNEXPECTED SKIP ", s.name.c_str(),
                  s.reason.c_str());
    }
    if (active_ && unexpected_ > 0) {
      std::printf("SYMMCOMM_ALLOWED_SKIPS allows: %s\n", std::getenv("SYMMCOMM_ALLOWED_SKIPS"));
    }
    std::fflush(stdout);
    if (exit_ && unexpected_ > 0) std::_Exit(1);
  }

  int unexpected_ = 0;
  bool exit_ = true;

 private:
  struct Skip {
    std::string name, reason;
    bool allowed;
  };
  bool active_ = false;
  std::vector<std::string> allowed_;
  std::string reason_;
  std::vector<Skip> skips_;
};

SkipPolicy& policy() {
  static SkipPolicy* p = [] {
    auto* installed = new SkipPolicy;  // owned by gtest's listener list from here on
    ::testing::UnitTest::GetInstance()->listeners().Append(installed);
    return installed;
  }();
  return *p;
}

[[maybe_unused]] const bool kInstalled = (policy(), true);

}  // namespace

int unexpected_skips() {
  return policy().unexpected_;
}

void exit_on_unexpected_skips(bool exit) {
  policy().exit_ = exit;
}

}  // namespace symmcomm::test
