// Shared by the fuzz targets: hand an input to code that wants a file path, and a scratch
// folder for outputs. Targets must be deterministic and keep no state between inputs.
#pragma once

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace ggdiff::fuzz {

// Stops the process (a libFuzzer crash, a replay failure) when a property does not hold.
#define GGDIFF_FUZZ_CHECK(cond)                                                                    \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "fuzz property failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
            std::abort();                                                                          \
        }                                                                                          \
    } while (0)

// The input as a file, without touching the disk: one memfd per process, rewritten for each
// input, reachable as /proc/self/fd/N. Empty when memfd is unavailable.
inline std::string input_as_file(const uint8_t* data, size_t size) {
    static const int fd = memfd_create("ggdiff-fuzz-input", MFD_CLOEXEC);
    if (fd < 0) return "";
    if (ftruncate(fd, 0) != 0) return "";
    size_t done = 0;
    while (done < size) {
        const ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
        if (n <= 0) return "";
        done += static_cast<size_t>(n);
    }
    return "/proc/self/fd/" + std::to_string(fd);
}

// A private scratch folder (in /dev/shm when it exists, so that fsync costs nothing), removed
// with its contents when the process exits normally.
inline const std::string& scratch_dir() {
    // Never destroyed, so that the exit handler can still use it.
    static const std::string* dir = [] {
        const char* base = std::getenv("GGDIFF_FUZZ_TMP");
        std::string b = base ? base : (access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
        auto* d = new std::string(b + "/ggdiff-fuzz-" + std::to_string(getpid()));
        mkdir(d->c_str(), 0700);
        std::atexit([] {
            std::error_code ec;
            std::filesystem::remove_all(scratch_dir(), ec);
        });
        return d;
    }();
    return *dir;
}

}  // namespace ggdiff::fuzz
