// Test files made from fixture checkpoints: the tensors of several safetensors files written
// as one, each name passed through a renaming (a reference engine's single file from split
// parts, a DiT under another naming).
#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ggdiff::e2e {

struct Safetensors {
    nlohmann::json header;
    std::string data;
};

inline bool read_safetensors(const std::string& path, Safetensors* out) {
    std::ifstream f(path, std::ios::binary);
    uint64_t n = 0;
    if (!f.read(reinterpret_cast<char*>(&n), 8)) return false;
    std::string header(n, '\0');
    if (!f.read(header.data(), static_cast<std::streamsize>(n))) return false;
    out->header = nlohmann::json::parse(header, nullptr, false);
    out->data.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    return !out->header.is_discarded();
}

// The tensors of `parts` (file, renaming) in one safetensors file `out`.
inline bool merge_safetensors(
    const std::vector<std::pair<std::string, std::function<std::string(const std::string&)>>>&
        parts,
    const std::string& out) {
    nlohmann::json header = nlohmann::json::object();
    std::string data;
    for (const auto& [file, rename] : parts) {
        Safetensors s;
        if (!read_safetensors(file, &s)) return false;
        const uint64_t base = data.size();
        for (const auto& [name, value] : s.header.items()) {
            if (name == "__metadata__") continue;
            nlohmann::json v = value;
            v["data_offsets"][0] = v["data_offsets"][0].get<uint64_t>() + base;
            v["data_offsets"][1] = v["data_offsets"][1].get<uint64_t>() + base;
            header[rename(name)] = v;
        }
        data += s.data;
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    std::ofstream o(out, std::ios::binary);
    const uint64_t m = text.size();
    o.write(reinterpret_cast<const char*>(&m), 8);
    o.write(text.data(), static_cast<std::streamsize>(text.size()));
    o.write(data.data(), static_cast<std::streamsize>(data.size()));
    return static_cast<bool>(o);
}

}  // namespace ggdiff::e2e
