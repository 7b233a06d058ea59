#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ggdiff {

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::Error(std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        int err = errno;
        ::close(fd);
        return Status::Error(std::string("cannot stat: ") + std::strerror(err));
    }
    if (S_ISDIR(st.st_mode)) {
        ::close(fd);
        return Status::Error("is a directory, not a checkpoint file");
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return Status::Error("not a regular file");
    }
    if (st.st_size == 0) {
        ::close(fd);
        return Status::Error("empty file (0 bytes)");
    }
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = errno;
    ::close(fd);  // the mapping keeps the file alive
    if (p == MAP_FAILED) return Status::Error(std::string("mmap failed: ") + std::strerror(err));
    return std::unique_ptr<MappedFile>(new MappedFile(path, static_cast<const uint8_t*>(p), size));
}

void MappedFile::release(uint64_t offset, uint64_t n) const {
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    if (offset > size_) return;
    n = std::min(n, size_ - offset);
    const uint64_t begin = (offset + page - 1) / page * page;
    const uint64_t end = (offset + n) / page * page;
    if (end > begin) madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
    if (data_) munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace ggdiff
