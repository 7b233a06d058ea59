#include "lora_dir.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

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
    // Symbolic links to files and folders are followed (shared model stores are often linked
    // in); a folder reached again through a link is not read twice, and links to nothing are
    // left out.
    std::set<fs::path> seen = {fs::weakly_canonical(root, ec)};
    fs::recursive_directory_iterator it(root,
                                        fs::directory_options::skip_permission_denied |
                                            fs::directory_options::follow_directory_symlink,
                                        ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it.depth() > 8) {
            it.disable_recursion_pending();
            continue;
        }
        std::error_code e2;
        if (it->is_directory(e2)) {
            if (!seen.insert(fs::canonical(it->path(), e2)).second || e2) {
                it.disable_recursion_pending();
            }
            continue;
        }
        if (!it->is_regular_file(e2) || !is_lora_file(it->path())) continue;
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
