#include "io/diffusers_folder.h"

#include <sys/stat.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "core/log.h"
#include "core/read_file.h"
#include "core/safe_text.h"

namespace ggdiff {

namespace {

constexpr const char* kDiffusion = "model.diffusion_model.";
constexpr const char* kVae = "first_stage_model.";
constexpr const char* kLlm = "text_encoders.llm.";
constexpr uint64_t kMaxIndexBytes = 64ull << 20;

std::string join(const std::string& dir, const std::string& name) {
    return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

Result<std::vector<std::string>> shards_from_index(const std::string& dir,
                                                   const std::string& index_path) {
    // Real index files are a few hundred KiB.
    auto text = read_text_file(index_path, kMaxIndexBytes);
    if (!text.ok()) return text.status();
    Status depth = check_json_nesting(*text, 16);
    if (!depth.ok()) return depth.with_context(quote_name(index_path));
    nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") ||
        !j["weight_map"].is_object()) {
        return Status::Error(index_path + ": not a valid safetensors index (no weight_map)");
    }
    std::set<std::string> files;
    for (const auto& [key, value] : j["weight_map"].items()) {
        if (!value.is_string() || value.get<std::string>().find('/') != std::string::npos ||
            value.get<std::string>() == ".." ||
            !check_name(value.get<std::string>(), "file name", 4096).ok()) {
            return Status::Error(escape_text(index_path) + ": bad weight_map entry for " +
                                 quote_name(key));
        }
        files.insert(value.get<std::string>());
    }
    std::vector<std::string> out;
    for (const std::string& f : files) out.push_back(join(dir, f));
    if (out.empty()) return Status::Error(index_path + ": empty weight_map");
    return out;
}

}  // namespace

bool is_directory(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_regular_file(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Result<std::vector<std::string>> component_weight_files(const std::string& dir) {
    // safetensors first; PyTorch .bin weights (read as data, never run) when there are none.
    for (const char* ext : {".safetensors", ".bin"}) {
        for (const char* base : {"diffusion_pytorch_model", "model", "pytorch_model"}) {
            for (const char* variant : {"", ".fp16"}) {
                const std::string stem = join(dir, std::string(base) + variant + ext);
                if (is_regular_file(stem)) return std::vector<std::string>{stem};
                if (is_regular_file(stem + ".index.json")) {
                    return shards_from_index(dir, stem + ".index.json");
                }
            }
        }
    }
    return Status::Error(dir +
                         ": no diffusion_pytorch_model or model weights (.safetensors or "
                         ".bin) in folder");
}

namespace {

// Whether a pipeline's text_encoder/ is a Qwen language model (Z-Image: Qwen3, Qwen Image:
// Qwen2.5-VL), by its config.json's model_type; those go under the LLM prefix.
bool is_language_model_folder(const std::string& dir) {
    const std::string config = join(dir, "config.json");
    if (!is_regular_file(config)) return false;
    auto text = read_text_file(config, kMaxIndexBytes);
    if (!text.ok() || !check_json_nesting(*text, 16).ok()) return false;
    const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    if (!j.is_object() || !j.contains("model_type") || !j["model_type"].is_string()) return false;
    return j["model_type"].get<std::string>().rfind("qwen", 0) == 0;
}

// model_index.json's "_class_name" (the pipeline class), or "" when it has none.
std::string pipeline_class(const std::string& dir) {
    auto text = read_text_file(join(dir, "model_index.json"), kMaxIndexBytes);
    if (!text.ok() || !check_json_nesting(*text, 16).ok()) return "";
    const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    if (!j.is_object() || !j.contains("_class_name") || !j["_class_name"].is_string()) return "";
    return j["_class_name"].get<std::string>();
}

}  // namespace

Result<std::vector<FolderPart>> diffusers_folder_parts(const std::string& dir,
                                                       const std::string& prefix,
                                                       const ModelLayouts& layouts) {
    std::vector<FolderPart> parts;
    if (!is_regular_file(join(dir, "model_index.json"))) {
        // A single component folder, or not a model folder at all.
        auto files = component_weight_files(dir);
        if (!files.ok()) {
            return Status::Error(dir +
                                 ": a directory, but neither a diffusers pipeline (no "
                                 "model_index.json) nor a component folder with weights");
        }
        for (const std::string& f : *files) parts.push_back({f, prefix});
        return parts;
    }

    const bool sdxl = is_directory(join(dir, "text_encoder_2"));
    // Transformer pipelines (FLUX, SD3): text_encoder is CLIP-L; text_encoder_2 is T5-XXL,
    // or CLIP-G when a text_encoder_3 (T5) follows.
    const bool dit = !is_directory(join(dir, "unet")) && is_directory(join(dir, "transformer"));
    const bool three = is_directory(join(dir, "text_encoder_3"));
    const char* denoiser = dit ? "transformer" : "unet";
    std::vector<std::pair<std::string, std::string>> wanted;  // (subfolder, prefix)
    // A pipeline class a family declares takes that family's routes.
    const ModelLayout* family = nullptr;
    if (prefix.empty()) {
        const std::string cls = pipeline_class(dir);
        for (const ModelLayout* l : layouts) {
            const auto& classes = l->diffusers_pipelines;
            if (!cls.empty() && !l->diffusers_parts.empty() &&
                std::find(classes.begin(), classes.end(), cls) != classes.end()) {
                family = l;
                break;
            }
        }
    }
    if (family) {
        wanted = family->diffusers_parts;
    } else if (prefix.empty()) {
        if (!is_directory(join(dir, "unet")) && !dit) {
            return Status::Error(dir +
                                 ": diffusers pipeline without a unet/ or transformer/ folder");
        }
        wanted = {{denoiser, kDiffusion}, {"vae", kVae}};
        if (dit && !sdxl && is_language_model_folder(join(dir, "text_encoder"))) {
            wanted.push_back({"text_encoder", kLlm});
        } else if (dit) {
            wanted.push_back({"text_encoder", "text_encoders.clip_l."});
            wanted.push_back(
                {"text_encoder_2", three ? "text_encoders.clip_g." : "text_encoders.t5xxl."});
            if (three) wanted.push_back({"text_encoder_3", "text_encoders.t5xxl."});
        } else if (sdxl) {
            wanted.push_back({"text_encoder", "conditioner.embedders.0.transformer."});
            wanted.push_back({"text_encoder_2", "conditioner.embedders.1.transformer."});
        } else {
            wanted.push_back({"text_encoder", "cond_stage_model.transformer."});
        }
    } else if (prefix == kDiffusion) {
        wanted = {{denoiser, prefix}};
    } else if (prefix == kVae) {
        wanted = {{"vae", prefix}};
    } else if (prefix == kLlm) {
        wanted = {{"text_encoder", prefix}};
    } else if (prefix == "text_encoders.clip_l.") {
        wanted = {{"text_encoder", prefix}};
    } else if (prefix == "text_encoders.clip_g.") {
        wanted = {{"text_encoder_2", prefix}};
    } else if (prefix == "text_encoders.t5xxl.") {
        wanted = {{is_directory(join(dir, "text_encoder_3")) ? "text_encoder_3" : "text_encoder_2",
                   prefix}};
    } else {
        return Status::Error(dir + ": no component of this diffusers pipeline matches prefix '" +
                             prefix + "'");
    }

    for (const auto& [sub, p] : wanted) {
        const std::string subdir = join(dir, sub);
        if (!is_directory(subdir)) {
            if (prefix.empty() && p != kDiffusion) {
                GGDIFF_LOG_WARN("%s: no %s/ folder, skipping", dir.c_str(), sub.c_str());
                continue;
            }
            return Status::Error(dir + ": diffusers pipeline has no " + sub + "/ folder");
        }
        auto files = component_weight_files(subdir);
        if (!files.ok()) return files.status();
        for (const std::string& f : *files) parts.push_back({f, p});
    }
    return parts;
}

}  // namespace ggdiff
