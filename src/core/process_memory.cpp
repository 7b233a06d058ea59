#include "core/process_memory.h"

#include <fstream>
#include <string>

namespace ggdiff {
namespace {

// A "Name:   123 kB" line of /proc/self/status, in bytes.
uint64_t status_kib(const char* key) {
    std::ifstream f("/proc/self/status");
    std::string line;
    const std::string prefix = std::string(key) + ":";
    while (std::getline(f, line)) {
        if (line.compare(0, prefix.size(), prefix) == 0) {
            return std::stoull(line.substr(prefix.size())) * 1024;
        }
    }
    return 0;
}

}  // namespace

uint64_t peak_resident_bytes() {
    return status_kib("VmHWM");
}

bool reset_peak_resident() {
    std::ofstream f("/proc/self/clear_refs");
    if (!f) return false;
    f << "5";
    f.flush();
    return static_cast<bool>(f);
}

}  // namespace ggdiff
