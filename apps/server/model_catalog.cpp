#include "model_catalog.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ggdiff.h"

namespace ggdiff::server {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxDepth = 8;          // folders below --models-dir that are looked into
constexpr size_t kMaxEntries = 4096;  // files listed at most

bool is_weights_file(const fs::path& p) {
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    // PyTorch checkpoints are read as data (never run), like safetensors.
    return ext == ".safetensors" || ext == ".gguf" || ext == ".ckpt" || ext == ".pt";
}

std::string relative_name(const fs::path& p, const fs::path& root) {
    return p.lexically_relative(root).generic_string();
}

std::string without_extension(const std::string& rel) {
    const size_t slash = rel.rfind('/');
    const size_t dot = rel.rfind('.');
    return dot != std::string::npos && (slash == std::string::npos || dot > slash)
               ? rel.substr(0, dot)
               : rel;
}

int64_t file_bytes(const fs::path& p) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
        int64_t total = 0;
        for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::end(it);
             it.increment(ec)) {
            if (it->is_regular_file(ec) && is_weights_file(it->path()))
                total += static_cast<int64_t>(it->file_size(ec));
        }
        return total;
    }
    const auto n = fs::file_size(p, ec);
    return ec ? 0 : static_cast<int64_t>(n);
}

// Whether `p` is `dir` or inside it (both made absolute and normal).
bool inside(const fs::path& p, const fs::path& dir) {
    if (dir.empty()) return false;
    const std::string a = fs::absolute(p).lexically_normal().generic_string();
    std::string b = fs::absolute(dir).lexically_normal().generic_string();
    while (b.size() > 1 && b.back() == '/') b.pop_back();
    return a == b || a.rfind(b + "/", 0) == 0;
}

const ggdiff_option_desc* option_desc(const std::string& name, ggdiff_option_desc* d) {
    const int i = ggdiff_option_find(name.c_str());
    if (i < 0 || ggdiff_option_info(i, d) != 0) return nullptr;
    return d;
}

// The option values of one models.json object ("files", "options" or "defaults") as
// engine options, checked by the engine; `what` says which they may be.
std::string read_option_object(const nlohmann::json& obj, const std::string& where,
                               const fs::path& root, bool paths, bool generation,
                               std::vector<std::pair<std::string, std::string>>* out,
                               int64_t* bytes) {
    if (!obj.is_object()) return where + ": expected an object";
    ggdiff_options* probe = ggdiff_options_new();
    std::string error;
    for (const auto& [key, value] : obj.items()) {
        std::string name = key;
        std::replace(name.begin(), name.end(), '_', '-');
        if (name == "clip-l" || name == "clip-g" || name == "llm-vision" || name == "clip-vision") {
            std::replace(name.begin(), name.end(), '-', '_');  // the schema spells these with '_'
        }
        ggdiff_option_desc d{};
        const std::string at = where + "." + key;
        if (!option_desc(name, &d)) {
            error = at + ": not an option of the engine (see ggdiff --help)";
            break;
        }
        name = d.name;
        const bool is_path = d.type == GGDIFF_OPTION_PATH;
        if (paths != is_path) {
            error = at + (paths ? ": not a file option (put it in \"options\" or \"defaults\")"
                                : ": a file option (put it in \"files\")");
            break;
        }
        if (generation ? !(d.flags & GGDIFF_OPTION_GENERATE) : !(d.flags & GGDIFF_OPTION_MODEL)) {
            error = at + (generation ? ": not a per-request option (put it in \"options\")"
                                     : ": not a model option (put it in \"defaults\")");
            break;
        }
        std::string text;
        if (value.is_string()) {
            text = value.get<std::string>();
        } else if (value.is_boolean()) {
            text = value.get<bool>() ? "true" : "false";
        } else if (value.is_number()) {
            std::ostringstream s;
            s << value;
            text = s.str();
        } else {
            error = at + ": expected a string, number or boolean";
            break;
        }
        if (is_path) {
            fs::path p(text);
            if (p.is_relative()) p = root / p;
            std::error_code ec;
            if (!fs::exists(p, ec)) {
                error = at + ": " + p.string() + " does not exist";
                break;
            }
            text = p.lexically_normal().string();
            if (bytes) *bytes += file_bytes(p);
        }
        if (ggdiff_options_set(probe, name.c_str(), text.c_str()) != 0) {
            error = at + ": " + ggdiff_last_error();
            break;
        }
        out->emplace_back(name, text);
    }
    ggdiff_options_free(probe);
    return error;
}

// models.json: {"models": [{"name", "description", "files": {option: path}, "options": {...},
// "defaults": {...}}]}. `used` gets every file a bundle names (they are not listed alone).
std::string read_bundles(const fs::path& root, std::vector<CatalogEntry>* out,
                         std::set<std::string>* used) {
    const fs::path file = root / "models.json";
    std::error_code ec;
    if (!fs::exists(file, ec)) return "";
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    if (!in || !(text << in.rdbuf())) return file.string() + ": cannot read the file";
    const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
    if (j.is_discarded()) return file.string() + ": not valid JSON";
    if (!j.is_object() || !j.contains("models") || !j["models"].is_array())
        return file.string() + ": expected {\"models\": [...]}";
    std::set<std::string> names;
    for (size_t i = 0; i < j["models"].size(); ++i) {
        const nlohmann::json& m = j["models"][i];
        const std::string where = file.filename().string() + " models[" + std::to_string(i) + "]";
        if (!m.is_object()) return where + ": expected an object";
        for (const auto& [key, value] : m.items()) {
            (void)value;
            if (key != "name" && key != "description" && key != "files" && key != "options" &&
                key != "defaults") {
                return where + "." + key +
                       ": unknown key (name, description, files, options, defaults)";
            }
        }
        if (!m.contains("name") || !m["name"].is_string() || m["name"].get<std::string>().empty())
            return where + ".name: a non-empty string is needed";
        CatalogEntry e;
        e.name = m["name"].get<std::string>();
        e.title = e.name;
        e.source = "bundle";
        if (!names.insert(e.name).second) return where + ".name: \"" + e.name + "\" twice";
        if (m.contains("description") && m["description"].is_string())
            e.description = m["description"].get<std::string>();
        if (!m.contains("files")) return where + ".files: the model's files are needed";
        std::string err = read_option_object(m["files"], where + ".files", root, true, false,
                                             &e.load_options, &e.bytes);
        if (err.empty() && m.contains("options")) {
            err = read_option_object(m["options"], where + ".options", root, false, false,
                                     &e.load_options, nullptr);
        }
        if (err.empty() && m.contains("defaults")) {
            err = read_option_object(m["defaults"], where + ".defaults", root, false, true,
                                     &e.request_defaults, nullptr);
        }
        if (!err.empty()) return err;
        bool has_main = false;
        for (const auto& [name, value] : e.load_options) {
            if (name == "model" || name == "diffusion-model") {
                has_main = true;
                if (e.path.empty()) e.path = value;
            }
            if (is_model_part_option(name))
                used->insert(fs::path(value).lexically_normal().string());
        }
        if (!has_main) return where + ".files: needs \"model\" or \"diffusion-model\"";
        out->push_back(std::move(e));
    }
    return "";
}

// The model the command line names (or the built-in one), listed by its file name.
CatalogEntry command_line_entry(const std::string& path) {
    CatalogEntry e;
    const fs::path p(path);
    e.name = p.stem().string();
    e.title = p.filename().string();
    e.path = path;
    e.source = "command line";
    return e;
}

}  // namespace

bool is_model_part_option(const std::string& name) {
    static const char* const parts[] = {"model",
                                        "diffusion-model",
                                        "high-noise-diffusion-model",
                                        "uncond-diffusion-model",
                                        "vae",
                                        "clip_l",
                                        "clip_g",
                                        "t5xxl",
                                        "llm",
                                        "llm_vision",
                                        "clip_vision",
                                        "embeddings-connectors",
                                        "audio-vae"};
    for (const char* p : parts)
        if (name == p) return true;
    return false;
}

std::string scan_catalog(const ServerConfig& config, Catalog* out) {
    Catalog c;
    // The command line's model.
    std::string main;
    for (const auto& [name, value] : config.engine_options) {
        if ((name == "model" || name == "diffusion-model") && main.empty()) main = value;
    }
    if (!main.empty()) {
        CatalogEntry e = command_line_entry(main);
        for (const auto& [name, value] : config.engine_options)
            if (is_model_part_option(name)) e.bytes += file_bytes(value);
        c.models.push_back(std::move(e));
    }

    // --vae-dir, else a VAE (or vae) folder in --models-dir, as A1111's models/VAE.
    fs::path vae_dir = config.vae_dir;
    std::string vae_flag = "--vae-dir " + config.vae_dir;
    if (vae_dir.empty() && !config.models_dir.empty()) {
        for (const char* sub : {"VAE", "vae"}) {
            std::error_code ec;
            if (fs::is_directory(fs::path(config.models_dir) / sub, ec)) {
                vae_dir = fs::path(config.models_dir) / sub;
                vae_flag = vae_dir.string();
                break;
            }
        }
    }
    if (!config.models_dir.empty()) {
        const fs::path root = fs::absolute(config.models_dir).lexically_normal();
        std::error_code ec;
        if (!fs::is_directory(root, ec))
            return "--models-dir " + config.models_dir + ": not a folder";
        std::vector<CatalogEntry> bundles;
        std::set<std::string> used;
        std::string err = read_bundles(root, &bundles, &used);
        if (!err.empty()) return err;
        std::vector<CatalogEntry> files;
        auto it = fs::recursive_directory_iterator(
            root, fs::directory_options::skip_permission_denied, ec);
        if (ec) return "--models-dir " + config.models_dir + ": " + ec.message();
        for (; it != fs::end(it); it.increment(ec)) {
            if (ec) {
                c.warnings.push_back(ec.message());
                break;
            }
            const fs::path p = it->path();
            const std::string leaf = p.filename().string();
            std::error_code e2;
            const bool dir = it->is_directory(e2);
            if (!leaf.empty() && leaf[0] == '.') {
                if (dir) it.disable_recursion_pending();
                continue;
            }
            if (dir) {
                // LoRA and VAE folders hold parts, not models; a diffusers folder is one model.
                if (inside(p, config.lora_model_dir) || inside(p, vae_dir) ||
                    it.depth() + 1 >= kMaxDepth) {
                    it.disable_recursion_pending();
                } else if (fs::exists(p / "model_index.json", e2)) {
                    it.disable_recursion_pending();
                    CatalogEntry e;
                    e.name = e.title = relative_name(p, root);
                    e.path = p.string();
                    e.source = "folder";
                    e.load_options = {{"model", p.string()}};
                    e.bytes = file_bytes(p);
                    files.push_back(std::move(e));
                }
                continue;
            }
            if (!it->is_regular_file(e2) || !is_weights_file(p)) continue;
            if (inside(p, config.lora_model_dir) || inside(p, vae_dir)) continue;
            if (used.count(p.lexically_normal().string())) continue;
            if (files.size() >= kMaxEntries) {
                c.warnings.push_back("more than " + std::to_string(kMaxEntries) +
                                     " files: the rest are not listed");
                break;
            }
            CatalogEntry e;
            e.title = relative_name(p, root);
            e.name = without_extension(e.title);
            e.path = p.string();
            e.source = "file";
            e.load_options = {{"model", p.string()}};
            e.bytes = file_bytes(p);
            files.push_back(std::move(e));
        }
        std::sort(files.begin(), files.end(),
                  [](const CatalogEntry& a, const CatalogEntry& b) { return a.title < b.title; });
        std::set<std::string> taken;
        for (const CatalogEntry& e : c.models) taken.insert(e.name);
        for (auto* list : {&bundles, &files}) {
            for (CatalogEntry& e : *list) {
                // The command line's model may also be in the folder: listed once.
                if (!c.models.empty() && c.models[0].source == "command line" &&
                    fs::absolute(c.models[0].path).lexically_normal() ==
                        fs::absolute(e.path).lexically_normal() &&
                    e.source != "bundle") {
                    continue;
                }
                if (!taken.insert(e.name).second) {
                    c.warnings.push_back(e.title + ": skipped, the name \"" + e.name +
                                         "\" is taken");
                    continue;
                }
                c.models.push_back(std::move(e));
            }
        }
    }
    if (c.models.empty()) {
        // Neither -m nor a model in the folder: the built-in model.
        std::string builtin = config.builtin_model;
        if (builtin.empty()) {
            const char* found = ggdiff_default_model();
            if (!found) {
                return "--models-dir " + config.models_dir + " has no model (.safetensors, " +
                       ".gguf, diffusers folder, models.json), and " + ggdiff_last_error();
            }
            builtin = found;
        }
        CatalogEntry e = command_line_entry(builtin);
        e.bytes = file_bytes(builtin);
        c.models.push_back(std::move(e));
    }

    if (!vae_dir.empty()) {
        std::error_code ec;
        if (!fs::is_directory(vae_dir, ec)) return vae_flag + ": not a folder";
        for (auto it = fs::recursive_directory_iterator(vae_dir, ec); !ec && it != fs::end(it);
             it.increment(ec)) {
            std::error_code e2;
            if (it->is_regular_file(e2) && is_weights_file(it->path()) &&
                c.vaes.size() < kMaxEntries) {
                c.vaes.push_back({relative_name(it->path(), vae_dir), it->path().string()});
            }
        }
        std::sort(c.vaes.begin(), c.vaes.end(),
                  [](const VaeEntry& a, const VaeEntry& b) { return a.name < b.name; });
    }
    *out = std::move(c);
    return "";
}

}  // namespace ggdiff::server
