#include "upscalers.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace ggdiff::server {

namespace fs = std::filesystem;

namespace {

bool is_model_file(const fs::path& p) {
    std::string ext = p.extension().string();
    for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return ext == ".safetensors" || ext == ".gguf" || ext == ".pth" || ext == ".pt";
}

}  // namespace

Upscalers::~Upscalers() {
    for (auto& [path, u] : loaded_) ggdiff_upscaler_free(u);
}

std::vector<UpscalerEntry> Upscalers::list() const {
    std::vector<UpscalerEntry> out;
    auto add = [&](const fs::path& p) {
        UpscalerEntry e;
        e.path = p.string();
        e.name = p.stem().string();
        if (ggdiff_upscaler_file_scale(e.path.c_str(), &e.scale) != 0) return;
        for (const UpscalerEntry& o : out) {
            if (o.name == e.name) return;
        }
        out.push_back(e);
    };
    const std::string model = host_.default_value("upscale-model");
    if (!model.empty()) add(model);
    const std::string dir = host_.default_value("hires-upscalers-dir");
    if (!dir.empty()) {
        std::vector<fs::path> files;
        std::error_code ec;
        for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator();
             it.increment(ec)) {
            std::error_code e2;
            if (it->is_regular_file(e2) && !it->is_symlink(e2) && is_model_file(it->path()))
                files.push_back(it->path());
            if (files.size() >= 1000) break;
        }
        std::sort(files.begin(), files.end());
        for (const fs::path& p : files) add(p);
    }
    return out;
}

bool Upscalers::find(const std::string& name, UpscalerEntry* out) const {
    for (const UpscalerEntry& e : list()) {
        if (e.name == name) {
            if (out) *out = e;
            return true;
        }
    }
    return false;
}

ggdiff_upscaler* Upscalers::get(const UpscalerEntry& entry, std::string* error) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = loaded_.find(entry.path);
    if (it != loaded_.end()) return it->second;
    // The placement, threads and RPC options of the command line, with this file.
    ggdiff_options* o = ggdiff_options_clone(host_.defaults());
    ggdiff_upscaler* u = nullptr;
    if (!o || ggdiff_options_set(o, "upscale-model", entry.path.c_str()) != 0 ||
        ggdiff_upscaler_load(o, &u) != 0) {
        if (error) *error = ggdiff_last_error();
        ggdiff_options_free(o);
        return nullptr;
    }
    ggdiff_options_free(o);
    loaded_[entry.path] = u;
    return u;
}

}  // namespace ggdiff::server
