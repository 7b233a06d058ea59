// Leveled logging to stderr. Thread-safe; the level is process-wide.
#pragma once

#include <cstdarg>
#include <functional>
#include <string>

namespace ggdiff {

enum class LogLevel { Debug = 0, Info = 1, Warn = 2, Error = 3, Quiet = 4 };

void set_log_level(LogLevel level);
LogLevel log_level();
// Colors the level tags of the default sink with ANSI escapes (--color).
void set_log_color(bool enabled);

// Replaces the sink (default: stderr). Pass nullptr to restore the default.
using LogSink = std::function<void(LogLevel, const std::string&)>;
void set_log_sink(LogSink sink);

void log_message(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
std::string string_format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace ggdiff

#define GGDIFF_LOG_DEBUG(...) ::ggdiff::log_message(::ggdiff::LogLevel::Debug, __VA_ARGS__)
#define GGDIFF_LOG_INFO(...) ::ggdiff::log_message(::ggdiff::LogLevel::Info, __VA_ARGS__)
#define GGDIFF_LOG_WARN(...) ::ggdiff::log_message(::ggdiff::LogLevel::Warn, __VA_ARGS__)
#define GGDIFF_LOG_ERROR(...) ::ggdiff::log_message(::ggdiff::LogLevel::Error, __VA_ARGS__)
