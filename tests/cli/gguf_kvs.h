// GGUF metadata written by tests: key/value bytes (strings, string / i32 / f32 arrays), a GGUF
// holding only keys, and a GGUF file with keys added (a tokenizer.ggml.* vocabulary put into a
// converted text encoder, as llama.cpp's convert writes one).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "io/checkpoint_file.h"
#include "io/mapped_file.h"

namespace ggdiff::e2e {

// GGUF key/value bytes; count() keys so far.
class GgufKvs {
  public:
    void str(const std::string& key, const std::string& value) {
        key_(key, 8);
        str_(value);
    }
    void strings(const std::string& key, const std::vector<std::string>& values) {
        array_(key, 8, values.size());
        for (const std::string& s : values) str_(s);
    }
    void i32s(const std::string& key, const std::vector<int32_t>& values) {
        array_(key, 5, values.size());
        for (int32_t v : values) raw_(&v, 4);
    }
    void f32s(const std::string& key, const std::vector<float>& values) {
        array_(key, 6, values.size());
        for (float v : values) raw_(&v, 4);
    }
    // One more string key that brings the length to a multiple of 32 (GGUF's alignment), so
    // that tensor data placed after these keys moves by an aligned amount.
    void pad_to_32() {
        const std::string key = "ggdiff.test.pad";
        const size_t fixed = 8 + key.size() + 4 + 8;  // key length and key, type, value length
        str(key, std::string((32 - (b_.size() + fixed) % 32) % 32, ' '));
    }
    const std::string& bytes() const { return b_; }
    uint64_t count() const { return n_; }

  private:
    void raw_(const void* p, size_t n) { b_.append(static_cast<const char*>(p), n); }
    void u32_(uint32_t v) { raw_(&v, 4); }
    void u64_(uint64_t v) { raw_(&v, 8); }
    void str_(const std::string& s) {
        u64_(s.size());
        b_ += s;
    }
    void key_(const std::string& key, uint32_t type) {
        str_(key);
        u32_(type);
        ++n_;
    }
    void array_(const std::string& key, uint32_t elem, size_t n) {
        key_(key, 9);
        u32_(elem);
        u64_(n);
    }
    std::string b_;
    uint64_t n_ = 0;
};

// A GGUF with no tensors holding only `kvs`.
inline void write_header_only_gguf(const std::string& path, const GgufKvs& kvs) {
    std::string b = "GGUF";
    const uint32_t version = 3;
    const uint64_t counts[2] = {0, kvs.count()};
    b.append(reinterpret_cast<const char*>(&version), 4);
    b.append(reinterpret_cast<const char*>(counts), 16);
    b += kvs.bytes();
    std::ofstream(path, std::ios::binary) << b;
}

// GGUF file `src` with `kvs` (padded to 32 bytes) added before its own keys, into `out`; its
// tensor data is copied with all-zero runs left as holes, and every tensor's offset in the
// data stays as it was.
inline void add_gguf_kvs(const std::string& src, const GgufKvs& kvs, const std::string& out) {
    ASSERT_EQ(kvs.bytes().size() % 32, 0u);
    auto file = ggdiff::MappedFile::open(src);
    ASSERT_TRUE(file.ok()) << file.status().message();
    const uint8_t* p = (*file)->data();
    const uint64_t size = (*file)->size();
    auto header = ggdiff::read_gguf_header_direct(p, size);
    ASSERT_TRUE(header.ok()) << header.status().message();
    uint64_t data_start = size;  // the first tensor sits at the start of the data
    for (const auto& t : header->tensors) data_start = std::min(data_start, t.offset);
    uint64_t n_kv = 0;
    std::memcpy(&n_kv, p + 16, 8);
    n_kv += kvs.count();
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0) << out;
    std::string head(reinterpret_cast<const char*>(p), 16);
    head.append(reinterpret_cast<const char*>(&n_kv), 8);
    head += kvs.bytes();
    head.append(reinterpret_cast<const char*>(p + 24), data_start - 24);
    ASSERT_EQ(::write(fd, head.data(), head.size()), static_cast<ssize_t>(head.size()));
    const uint64_t chunk = 1 << 20;
    const std::vector<uint8_t> zero(chunk, 0);
    for (uint64_t at = data_start; at < size; at += chunk) {
        const uint64_t len = std::min(chunk, size - at);
        if (std::memcmp(p + at, zero.data(), len) == 0) {
            ASSERT_GE(::lseek(fd, static_cast<off_t>(len), SEEK_CUR), 0);
        } else {
            ASSERT_EQ(::write(fd, p + at, len), static_cast<ssize_t>(len));
        }
    }
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(head.size() + size - data_start)), 0);
    ::close(fd);
}

}  // namespace ggdiff::e2e
