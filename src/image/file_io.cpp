#include "image/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/log.h"

namespace ggdiff {

namespace {

std::string errno_text(int err) {
    return std::strerror(err);
}

class FdCloser {
  public:
    explicit FdCloser(int fd) : fd_(fd) {}
    ~FdCloser() {
        if (fd_ >= 0) ::close(fd_);
    }
    FdCloser(const FdCloser&) = delete;
    FdCloser& operator=(const FdCloser&) = delete;

  private:
    int fd_;
};

}  // namespace

Result<std::vector<uint8_t>> read_file_bytes(const std::string& path, uint64_t max_bytes) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::Error(errno_text(errno));
    FdCloser closer(fd);
    struct stat st;
    if (::fstat(fd, &st) != 0) return Status::Error(errno_text(errno));
    if (S_ISDIR(st.st_mode)) return Status::Error("is a directory, not a file");
    std::vector<uint8_t> bytes;
    if (S_ISREG(st.st_mode)) {
        if (st.st_size == 0) return Status::Error("file is empty");
        if (static_cast<uint64_t>(st.st_size) > max_bytes) {
            return Status::Error(string_format("file is too large (%lld bytes, limit %llu)",
                                               (long long)st.st_size,
                                               (unsigned long long)max_bytes));
        }
        bytes.reserve(static_cast<size_t>(st.st_size));
    }
    // Read to EOF (the size may change under us, and pipes have none).
    uint8_t buf[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            return Status::Error(errno_text(errno));
        }
        if (n == 0) break;
        if (bytes.size() + static_cast<size_t>(n) > max_bytes) {
            return Status::Error(string_format("file is too large (limit %llu bytes)",
                                               (unsigned long long)max_bytes));
        }
        bytes.insert(bytes.end(), buf, buf + n);
    }
    if (bytes.empty()) return Status::Error("file is empty");
    return bytes;
}

}  // namespace ggdiff
