#include "lora_dir.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace ggdiff::server {

namespace fs = std::filesystem;

namespace {

bool is_lora_file(const fs::path& p) {
    std::string ext = p.extension().string();
    for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return ext == ".safetensors" || ext == ".gguf" || ext == ".ckpt" || ext == ".pt" ||
           ext == ".bin";
}

}  // namespace

std::vector<LoraEntry> LoraDir::list() const {
    std::vector<LoraEntry> out;
    if (dir_.empty()) return out;
    std::lock_guard<std::mutex> lock(mutex_);
    std::error_code ec;
    const fs::path root(dir_);
    // Symbolic links are not followed out of the folder: only what is in it is offered.
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it.depth() > 8) {
            it.disable_recursion_pending();
            continue;
        }
        std::error_code e2;
        if (!it->is_regular_file(e2) || it->is_symlink(e2) || !is_lora_file(it->path())) continue;
        const fs::path rel = it->path().lexically_relative(root);
        LoraEntry entry;
        entry.path = rel.generic_string();
        entry.name = (rel.parent_path() / rel.stem()).generic_string();
        out.push_back(entry);
        if (out.size() >= 10000) break;
    }
    std::sort(out.begin(), out.end(),
              [](const LoraEntry& a, const LoraEntry& b) { return a.name < b.name; });
    return out;
}

bool LoraDir::find(const std::string& name, LoraEntry* out) const {
    for (const LoraEntry& e : list()) {
        if (e.name == name || e.path == name) {
            if (out) *out = e;
            return true;
        }
    }
    return false;
}

}  // namespace ggdiff::server
