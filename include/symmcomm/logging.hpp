#pragma once
/// @file logging.hpp
/// @brief Logging controlled by the environment variable `SYMMCOMM_LOG=off|warn|info|debug`
/// (default `warn`). Messages go to stderr, or to a sink installed with set_log_sink().

#include <functional>
#include <sstream>
#include <string>

namespace symmcomm {

/// @brief Severity of a log message; a message is emitted when its level <= the active level.
enum class LogLevel { Off = 0, Warn = 1, Info = 2, Debug = 3 };

/// @brief The active level: `SYMMCOMM_LOG` read at first use, or the last set_log_level().
LogLevel log_level() noexcept;
/// @brief Overrides the level from the environment (thread-safe).
void set_log_level(LogLevel level) noexcept;
/// @brief Parses "off", "warn", "info", "debug" (case-insensitive). @throws LogicError otherwise.
LogLevel parse_log_level(const std::string& text);

/// @brief Receives each emitted message; an empty function restores the stderr sink.
using LogSink = std::function<void(LogLevel, const std::string&)>;
/// @brief Installs a sink (thread-safe); returns the previous one.
LogSink set_log_sink(LogSink sink);
/// @brief Emits `message` at `level` if enabled. Never throws.
void log_message(LogLevel level, const std::string& message) noexcept;

}  // namespace symmcomm

/// @brief Streams a message at a level, building the string only when the level is enabled.
#define SYMMCOMM_LOG(level, msg)                                                \
  do {                                                                          \
    if (static_cast<int>(level) <= static_cast<int>(::symmcomm::log_level())) { \
      std::ostringstream symmcomm_log_os_;                                      \
      symmcomm_log_os_ << msg; /* NOLINT(bugprone-macro-parentheses) */         \
      ::symmcomm::log_message(level, symmcomm_log_os_.str());                   \
    }                                                                           \
  } while (0)
/// @brief SYMMCOMM_LOG at LogLevel::Warn.
#define SYMMCOMM_LOG_WARN(msg) SYMMCOMM_LOG(::symmcomm::LogLevel::Warn, msg)
/// @brief SYMMCOMM_LOG at LogLevel::Info.
#define SYMMCOMM_LOG_INFO(msg) SYMMCOMM_LOG(::symmcomm::LogLevel::Info, msg)
/// @brief SYMMCOMM_LOG at LogLevel::Debug.
#define SYMMCOMM_LOG_DEBUG(msg) SYMMCOMM_LOG(::symmcomm::LogLevel::Debug, msg)
