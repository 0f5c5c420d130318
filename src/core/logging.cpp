#include "symmcomm/logging.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "symmcomm/error.hpp"

namespace symmcomm {
namespace {

int level_from_environment() {
  const char* env = std::getenv("SYMMCOMM_LOG");
  if (env == nullptr || *env == '\0') return static_cast<int>(LogLevel::Warn);
  try {
    return static_cast<int>(parse_log_level(env));
  } catch (const LogicError&) {
    std::fprintf(stderr,
                 "[symmcomm:warn] SYMMCOMM_LOG=%s is not one of off|warn|info|debug; "
                 "using warn\n",
                 env);
    return static_cast<int>(LogLevel::Warn);
  }
}

std::atomic<int>& level_storage() {
  static std::atomic<int> level{level_from_environment()};
  return level;
}

std::mutex& sink_mutex() {
  static std::mutex m;
  return m;
}
LogSink& sink_storage() {
  static LogSink sink;
  return sink;
}

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::Warn:
      return "warn";
    case LogLevel::Info:
      return "info";
    case LogLevel::Debug:
      return "debug";
    case LogLevel::Off:
      break;
  }
  return "off";
}

}  // namespace

LogLevel log_level() noexcept {
  return static_cast<LogLevel>(level_storage().load(std::memory_order_relaxed));
}

void set_log_level(LogLevel level) noexcept {
  level_storage().store(static_cast<int>(level), std::memory_order_relaxed);
}

LogLevel parse_log_level(const std::string& text) {
  std::string t = text;
  std::transform(t.begin(), t.end(), t.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (t == "off") return LogLevel::Off;
  if (t == "warn") return LogLevel::Warn;
  if (t == "info") return LogLevel::Info;
  if (t == "debug") return LogLevel::Debug;
  SYMMCOMM_FAIL("log level '" << text << "' is not one of off|warn|info|debug");
}

LogSink set_log_sink(LogSink sink) {
  std::lock_guard<std::mutex> lock(sink_mutex());
  LogSink previous = std::move(sink_storage());
  sink_storage() = std::move(sink);
  return previous;
}

void log_message(LogLevel level, const std::string& message) noexcept {
  try {
    std::lock_guard<std::mutex> lock(sink_mutex());
    if (sink_storage()) {
      sink_storage()(level, message);
      return;
    }
    std::fprintf(stderr, "[symmcomm:%s] %s\n", level_name(level), message.c_str());
  } catch (...) {
    // Logging must never take the caller down.
  }
}

}  // namespace symmcomm
