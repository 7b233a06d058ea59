#include "core/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/log.h"
#include "core/safe_text.h"

namespace ggdiff {

namespace {

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
    if (fd < 0) return Status::Error(std::strerror(errno));
    FdCloser closer(fd);
    struct stat st;
    if (::fstat(fd, &st) != 0) return Status::Error(std::strerror(errno));
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
            return Status::Error(std::strerror(errno));
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

Result<std::string> read_text_file(const std::string& path, uint64_t max_bytes) {
    auto bytes = read_file_bytes(path, max_bytes);
    if (!bytes.ok()) return bytes.status().with_context("cannot read " + quote_name(path));
    return std::string(bytes->begin(), bytes->end());
}

Status check_json_nesting(std::string_view text, int max_depth) {
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') {
                ++i;  // the escaped character, whatever it is
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth) {
                return Status::Error(
                    string_format("JSON nests deeper than %d levels (at byte %zu)", max_depth, i));
            }
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return Status::Ok();
}

}  // namespace ggdiff
