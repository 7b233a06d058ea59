#include "io/lora_file.h"

#include <filesystem>
#include <fstream>

#include "core/sha256.h"
#include "io/name_util.h"

namespace ggdiff {
namespace fs = std::filesystem;

namespace {

// Added under a prefix no LoRA file uses, so that no name is rewritten.
constexpr const char* kPrefix = "lora_file.";

Result<std::string> sha256_of_file(const std::string& path, bool skip_safetensors_header) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::Error("cannot read " + path);
    if (skip_safetensors_header) {
        uint8_t len[8];
        if (!in.read(reinterpret_cast<char*>(len), 8)) return Status::Error("truncated " + path);
        uint64_t n = 0;
        for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
        in.seekg(static_cast<std::streamoff>(8 + n));
        if (!in) return Status::Error("truncated " + path);
    }
    Sha256 h;
    std::vector<char> buf(1 << 20);
    while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        h.update(buf.data(), static_cast<size_t>(in.gcount()));
    }
    return h.hex_digest();
}

}  // namespace

Result<std::unique_ptr<LoraFile>> LoraFile::open(const std::string& path) {
    auto f = std::unique_ptr<LoraFile>(new LoraFile());
    f->path_ = path;
    GGDIFF_TRY(f->index_.add(path, kPrefix));
    for (const TensorInfo& t : f->index_.tensors()) {
        auto parsed = parse_lora_tensor_name(t.source_name);
        if (!parsed) {
            f->unrecognized_.push_back(t.source_name);
            continue;
        }
        f->modules_[parsed->module].parts[parsed->part] = &t;
    }
    if (f->modules_.empty()) {
        return Status::Error(path + ": no LoRA tensors (lora_down/lora_up, lora_A/lora_B, " +
                             "hada_*, lokr_* ...) in this file");
    }
    return f;
}

Result<std::string> LoraFile::short_hash() const {
    if (!hash_.empty()) return hash_;
    auto meta = index_.metadata().find("sshs_model_hash");
    std::string full;
    if (meta != index_.metadata().end() && meta->second.size() >= 12) {
        full = meta->second;
    } else {
        auto h = sha256_of_file(path_, ends_with(path_, ".safetensors"));
        if (!h.ok()) return h.status();
        full = *h;
    }
    hash_ = full.substr(0, 12);
    return hash_;
}

Result<std::string> find_lora_file(const std::string& dir, const std::string& name) {
    if (dir.empty()) {
        return Status::Error("<lora:" + name + ":...> in the prompt needs --lora-model-dir");
    }
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        return Status::Error("--lora-model-dir " + dir + " is not a folder");
    if (name.empty() || name.find("..") != std::string::npos) {
        return Status::Error("<lora:" + name + ":...>: not a LoRA name");
    }
    // safetensors and GGUF first; PyTorch files (read as data, never run) after them.
    static const char* kExts[] = {".safetensors", ".gguf", ".ckpt", ".pt", ".bin"};
    for (const char* ext : kExts) {
        const fs::path p = fs::path(dir) / (name + ext);
        if (fs::is_regular_file(p, ec)) return p.string();
    }
    for (auto it = fs::recursive_directory_iterator(
             dir, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        const fs::path& p = it->path();
        if (p.stem().string() != fs::path(name).filename().string()) continue;
        const std::string ext = p.extension().string();
        for (const char* known : kExts) {
            if (ext == known) return p.string();
        }
    }
    return Status::Error("LoRA \"" + name + "\" not found in " + dir + " (looked for " + name +
                         ".safetensors, .gguf, .ckpt, .pt and .bin)");
}

}  // namespace ggdiff
