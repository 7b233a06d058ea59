#include "image/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
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

// Directory part of `path` ("." when it has none) and the final component.
void split_path(const std::string& path, std::string& dir, std::string& base) {
    const size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) {
        dir = ".";
        base = path;
    } else {
        dir = slash == 0 ? "/" : path.substr(0, slash);
        base = path.substr(slash + 1);
    }
}

void sync_directory(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;  // best effort: the rename itself already happened
    if (::fsync(fd) != 0) GGDIFF_LOG_DEBUG("fsync of directory %s failed", dir.c_str());
    ::close(fd);
}

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

Status write_file_atomic(const std::string& path, const uint8_t* data, size_t size) {
    std::string dir, base;
    split_path(path, dir, base);
    if (base.empty() || base == "." || base == "..") {
        return Status::Error("'" + path + "' does not name a file");
    }
    static std::atomic<unsigned> counter{0};
    const std::string prefix = path.substr(0, path.size() - base.size()) + "." +
                               base.substr(0, 180) + ".tmp-" + std::to_string(::getpid()) + "-";
    std::string tmp;
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
        tmp = prefix + std::to_string(counter.fetch_add(1));
        fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) {
            return Status::Error("cannot create a temporary file in '" + dir +
                                 "': " + errno_text(errno));
        }
    }
    if (fd < 0) return Status::Error("cannot create a temporary file in '" + dir + "'");

    const auto fail = [&](const std::string& what, int err) {
        if (fd >= 0) ::close(fd);
        ::unlink(tmp.c_str());
        return Status::Error(what + ": " + errno_text(err));
    };
    size_t done = 0;
    while (done < size) {
        const ssize_t n = ::write(fd, data + done, size - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail("writing '" + tmp + "'", errno);
        }
        done += static_cast<size_t>(n);
    }
    if (::fsync(fd) != 0) return fail("syncing '" + tmp + "'", errno);
    const int closed = ::close(fd);
    fd = -1;
    if (closed != 0) return fail("closing '" + tmp + "'", errno);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        return fail("renaming '" + tmp + "' to '" + path + "'", errno);
    }
    sync_directory(dir);
    return Status::Ok();
}

}  // namespace ggdiff
