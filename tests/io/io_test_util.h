// Helpers for the io tests: temp dirs and tiny safetensors writers.
#pragma once

#include <ggml.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../support/scratch.h"

namespace ggdiff::testing {

inline void make_dirs(const std::string& path) {
    std::string cur;
    for (size_t i = 0; i <= path.size(); ++i) {
        if (i == path.size() || path[i] == '/') {
            if (!cur.empty()) mkdir(cur.c_str(), 0755);
        }
        if (i < path.size()) cur += path[i];
    }
}

// A fresh directory under GGDIFF_TEST_TMP for one test, removed when it passes.
inline std::string test_dir(const std::string& name) {
    return ggdiff::scratch::fresh(std::string(GGDIFF_TEST_TMP) + "/" + name);
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

struct FakeTensor {
    std::string name;
    std::string dtype;  // safetensors spelling
    std::vector<int64_t> shape;
    std::string data;  // raw bytes
};

template <class T>
std::string to_bytes(const std::vector<T>& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

inline std::string f16_bytes(const std::vector<float>& v) {
    std::vector<ggml_fp16_t> h(v.size());
    ggml_fp32_to_fp16_row(v.data(), h.data(), static_cast<int64_t>(v.size()));
    return to_bytes(h);
}

inline int64_t numel(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

// Deterministic values in [-1, 1).
inline std::vector<float> pattern(int64_t n, uint32_t seed = 1) {
    std::vector<float> v(static_cast<size_t>(n));
    uint32_t s = seed * 2654435761u + 12345u;
    for (auto& x : v) {
        s = s * 1664525u + 1013904223u;
        x = static_cast<float>((s >> 8) & 0xFFFF) / 32768.0f - 1.0f;
    }
    return v;
}

inline FakeTensor f32_tensor(const std::string& name, std::vector<int64_t> shape,
                             uint32_t seed = 1) {
    return {name, "F32", shape, to_bytes(pattern(numel(shape), seed))};
}

inline FakeTensor f16_tensor(const std::string& name, std::vector<int64_t> shape,
                             uint32_t seed = 1) {
    return {name, "F16", shape, f16_bytes(pattern(numel(shape), seed))};
}

// The header JSON (without the length prefix) for tensors laid out back to back.
inline nlohmann::ordered_json safetensors_json(
    const std::vector<FakeTensor>& tensors, const std::map<std::string, std::string>& meta = {}) {
    nlohmann::ordered_json h = nlohmann::ordered_json::object();
    if (!meta.empty()) h["__metadata__"] = meta;
    uint64_t off = 0;
    for (const FakeTensor& t : tensors) {
        h[t.name] = {
            {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {off, off + t.data.size()}}};
        off += t.data.size();
    }
    return h;
}

inline std::string safetensors_file(const std::string& header_json, const std::string& data) {
    uint64_t n = header_json.size();
    std::string out(reinterpret_cast<const char*>(&n), 8);
    return out + header_json + data;
}

inline void write_safetensors(const std::string& path, const std::vector<FakeTensor>& tensors,
                              const std::map<std::string, std::string>& meta = {}) {
    std::string data;
    for (const FakeTensor& t : tensors) data += t.data;
    write_bytes(path, safetensors_file(safetensors_json(tensors, meta).dump(), data));
}

}  // namespace ggdiff::testing
