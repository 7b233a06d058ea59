#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <vector>

#include "core/safe_text.h"

namespace ggdiff {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::Info)};
std::atomic<bool> g_color{false};
std::mutex g_mutex;
LogSink g_sink;

std::string vformat(const char* fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = std::vsnprintf(nullptr, 0, fmt, ap2);
    va_end(ap2);
    if (n <= 0) return std::string();
    std::vector<char> buf(static_cast<size_t>(n) + 1);
    std::vsnprintf(buf.data(), buf.size(), fmt, ap);
    return std::string(buf.data(), static_cast<size_t>(n));
}
}  // namespace

void set_log_level(LogLevel level) {
    g_level = static_cast<int>(level);
}
LogLevel log_level() {
    return static_cast<LogLevel>(g_level.load());
}

void set_log_color(bool enabled) {
    g_color = enabled;
}

void set_log_sink(LogSink sink) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_sink = std::move(sink);
}

std::string string_format(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::string s = vformat(fmt, ap);
    va_end(ap);
    return s;
}

void log_message(LogLevel level, const char* fmt, ...) {
    if (static_cast<int>(level) < g_level.load()) return;
    va_list ap;
    va_start(ap, fmt);
    std::string s = vformat(fmt, ap);
    va_end(ap);
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_sink) {
        g_sink(level, s);
        return;
    }
    static const char* kPrefix[] = {"[debug] ", "", "warning: ", "error: ", ""};
    // ANSI colors per level: grey, none, yellow, red.
    static const char* kColor[] = {"\033[90m", "", "\033[33m", "\033[31m", ""};
    const int l = static_cast<int>(level);
    // Messages quote file contents: no control sequence reaches the terminal.
    const std::string safe = escape_log_text(s);
    if (g_color && kColor[l][0] != '\0' && kPrefix[l][0] != '\0') {
        std::fprintf(stderr, "%s%s\033[0m%s\n", kColor[l], kPrefix[l], safe.c_str());
    } else {
        std::fprintf(stderr, "%s%s\n", kPrefix[l], safe.c_str());
    }
    std::fflush(stderr);
}

}  // namespace ggdiff
