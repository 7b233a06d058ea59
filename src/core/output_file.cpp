#include "core/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "core/log.h"
#include "core/safe_text.h"

namespace ggdiff {

namespace {

// Zero runs at least this long are written as holes (AtomicFile::write).
constexpr size_t kHoleBytes = 64 * 1024;

std::string errno_text(int err) {
    return std::strerror(err);
}

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

const char* kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "not a regular file";
}

void sync_directory(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;  // best effort: the rename itself already happened
    if (::fsync(fd) != 0) GGDIFF_LOG_DEBUG("fsync of a folder failed");
    ::close(fd);
}

}  // namespace

Result<std::string> resolve_output_target(const std::string& path) {
    std::string dir, base;
    split_path(path, dir, base);
    if (base.empty() || base == "." || base == "..") {
        return Status::Error(quote_name(path) + " does not name a file");
    }
    std::string target = path;
    struct stat lst;
    if (::lstat(path.c_str(), &lst) == 0) {
        if (S_ISLNK(lst.st_mode)) {
            struct stat st;
            if (::stat(path.c_str(), &st) != 0) {
                return Status::Error(quote_name(path) +
                                     " is a symbolic link to nothing that can be written (" +
                                     errno_text(errno) + ")");
            }
            char resolved[PATH_MAX];
            if (::realpath(path.c_str(), resolved) == nullptr) {
                return Status::Error("cannot resolve the symbolic link " + quote_name(path) + ": " +
                                     errno_text(errno));
            }
            if (!S_ISREG(st.st_mode)) {
                return Status::Error(quote_name(path) + " is a symbolic link to " +
                                     kind_of(st.st_mode) + " (" + quote_name(resolved) +
                                     "); ggdiff writes only regular files");
            }
            target = resolved;
            split_path(target, dir, base);
        } else if (!S_ISREG(lst.st_mode)) {
            return Status::Error(quote_name(path) + " is " + kind_of(lst.st_mode) +
                                 "; ggdiff writes only regular files");
        }
    } else if (errno != ENOENT) {
        return Status::Error(quote_name(path) + ": " + errno_text(errno));
    }
    struct stat dst;
    if (::stat(dir.c_str(), &dst) != 0) {
        return Status::Error("the folder " + quote_name(dir) + " cannot be used (" +
                             errno_text(errno) + ")");
    }
    if (!S_ISDIR(dst.st_mode)) return Status::Error(quote_name(dir) + " is not a folder");
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
        return Status::Error("cannot write into the folder " + quote_name(dir) + ": " +
                             errno_text(errno));
    }
    return target;
}

Status check_output_target(const std::string& path) {
    Result<std::string> target = resolve_output_target(path);
    return target.ok() ? Status::Ok() : target.status();
}

Result<std::unique_ptr<AtomicFile>> AtomicFile::create(const std::string& path) {
    Result<std::string> target = resolve_output_target(path);
    if (!target.ok()) return target.status();
    std::unique_ptr<AtomicFile> f(new AtomicFile());
    f->path_ = path;
    f->target_ = *target;
    std::string dir, base;
    split_path(f->target_, dir, base);
    static std::atomic<unsigned> counter{0};
    const std::string prefix = f->target_.substr(0, f->target_.size() - base.size()) + "." +
                               base.substr(0, 180) + ".tmp-" + std::to_string(::getpid()) + "-";
    for (int attempt = 0; attempt < 100 && f->fd_ < 0; ++attempt) {
        f->tmp_ = prefix + std::to_string(counter.fetch_add(1));
        f->fd_ =
            ::open(f->tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (f->fd_ < 0 && errno != EEXIST) {
            return Status::Error("cannot create a temporary file in " + quote_name(dir) + ": " +
                                 errno_text(errno));
        }
    }
    if (f->fd_ < 0) {
        return Status::Error("cannot create a temporary file in " + quote_name(dir));
    }
    return f;
}

AtomicFile::~AtomicFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
}

Status AtomicFile::write(const void* data, size_t size) {
    if (fd_ < 0) return Status::Error("writing " + quote_name(tmp_) + ": the file is closed");
    const auto* p = static_cast<const uint8_t*>(data);
    // A long run of zeros (the zero blocks of a sparse checkpoint being converted) is left as a
    // hole: the file reads the same and takes no disk for it. commit() sets the final length.
    if (size >= kHoleBytes && std::all_of(p, p + size, [](uint8_t b) { return b == 0; })) {
        if (::lseek(fd_, static_cast<off_t>(size), SEEK_CUR) < 0) {
            return Status::Error("writing " + quote_name(tmp_) + ": " + errno_text(errno));
        }
        written_ += size;
        return Status::Ok();
    }
    size_t done = 0;
    while (done < size) {
        const ssize_t n = ::write(fd_, p + done, size - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            return Status::Error("writing " + quote_name(tmp_) + ": " + errno_text(errno));
        }
        done += static_cast<size_t>(n);
    }
    written_ += size;
    return Status::Ok();
}

Status AtomicFile::commit() {
    if (fd_ < 0) return Status::Error("committing " + quote_name(tmp_) + ": the file is closed");
    if (::ftruncate(fd_, static_cast<off_t>(written_)) != 0) {  // a trailing hole's length
        return Status::Error("writing " + quote_name(tmp_) + ": " + errno_text(errno));
    }
    if (::fsync(fd_) != 0) {
        return Status::Error("syncing " + quote_name(tmp_) + ": " + errno_text(errno));
    }
    const int closed = ::close(fd_);
    fd_ = -1;
    if (closed != 0) {
        return Status::Error("closing " + quote_name(tmp_) + ": " + errno_text(errno));
    }
    // The target may have changed since create(): never rename over anything but a file.
    struct stat lst;
    if (::lstat(target_.c_str(), &lst) == 0 && !S_ISREG(lst.st_mode)) {
        return Status::Error(quote_name(target_) + " became " + kind_of(lst.st_mode) +
                             " while it was being written; not replaced");
    }
    if (::rename(tmp_.c_str(), target_.c_str()) != 0) {
        return Status::Error("renaming " + quote_name(tmp_) + " to " + quote_name(target_) + ": " +
                             errno_text(errno));
    }
    committed_ = true;
    std::string dir, base;
    split_path(target_, dir, base);
    sync_directory(dir);
    return Status::Ok();
}

Status write_file_atomic(const std::string& path, const void* data, size_t size) {
    auto file = AtomicFile::create(path);
    if (!file.ok()) return file.status();
    GGDIFF_TRY((*file)->write(data, size));
    return (*file)->commit();
}

}  // namespace ggdiff
