#include "huge_pages_exec.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace ggdiff::app {
namespace {

constexpr const char* kSwitch = "GGDIFF_HUGE_PAGES";
constexpr const char* kTunable = "glibc.malloc.hugetlb";

// The kernel's THP mode, e.g. "always [madvise] never" -> "madvise".
std::string thp_mode() {
    std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string line;
    if (!std::getline(in, line)) return "";
    const size_t open = line.find('['), close = line.find(']');
    if (open == std::string::npos || close == std::string::npos || close < open) return "";
    return line.substr(open + 1, close - open - 1);
}

}  // namespace

void restart_with_huge_pages(char** argv) {
    if (std::getenv(kSwitch) != nullptr) return;  // turned off, or already restarted
    if (thp_mode() != "madvise") return;          // "always" has them, "never" has none
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    std::string value = tunables ? tunables : "";
    if (value.find(kTunable) != std::string::npos) return;  // the user chose
    value += (value.empty() ? "" : ":") + std::string(kTunable) + "=1";
    if (setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0 || setenv(kSwitch, "1", 1) != 0) return;
    execv("/proc/self/exe", argv);
    // No restart (no /proc?): carry on as we are, with the environment as it was.
    if (tunables) {
        setenv("GLIBC_TUNABLES", tunables, 1);
    } else {
        unsetenv("GLIBC_TUNABLES");
    }
    unsetenv(kSwitch);
}

}  // namespace ggdiff::app
