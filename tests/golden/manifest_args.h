// The command-line arguments that load a golden manifest's model, as the golden tests run it:
// the fixture files (ctest's fixture tests make them under the build tree) with their flags, the
// LoRA folder and the tokenizer entries. Shared by the golden tests and the suites that send a
// golden case through another front end (the server).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace ggdiff::e2e {

// fixtures/<tensor list stem>.safetensors (.gguf for "format": "gguf"), as
// golden_fixtures.cmake names them.
inline std::string manifest_fixture(const nlohmann::json& entry) {
    const std::string tensors = entry.value("tensors", "");
    const std::string ext = entry.value("format", "") == "gguf" ? ".gguf" : ".safetensors";
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/" +
           std::filesystem::path(tensors).stem().string() + ext;
}

// The arguments that load the manifest's model (for case model key `key`).
inline std::vector<std::string> manifest_model_args(const std::string& suite,
                                                    const nlohmann::json& m,
                                                    const std::string& key) {
    std::vector<std::string> args;
    const nlohmann::json& fx = m["fixture"];
    if (fx.contains("tensors")) args = {"-m", manifest_fixture(fx)};
    auto add_files = [&](const nlohmann::json& files) {
        for (const auto& f : files) {
            args.push_back(f.value("flag", "-m"));
            args.push_back(manifest_fixture(f));
        }
    };
    if (fx.contains("files")) add_files(fx["files"]);
    if (fx.contains("models") && fx["models"].contains(key)) add_files(fx["models"][key]);
    if (fx.contains("loras")) {
        args.push_back(fx["loras"].value("flag", "--lora-model-dir"));
        args.push_back(std::string(GGDIFF_BINARY_DIR) + "/fixtures/" + suite + "_loras");
    }
    // Tokenizers: "shared/data/..." paths (the first word of the entry).
    auto data_path = [](const std::string& entry) {
        const std::string first = entry.substr(0, entry.find(' '));
        return shared_dir() + "/" + first.substr(first.find('/') + 1);
    };
    for (const char* key : {"t5_tokenizer", "umt5_tokenizer"}) {
        if (!fx.contains(key)) continue;
        args.push_back("--t5xxl-tokenizer");
        args.push_back(data_path(fx[key]));
    }
    if (fx.contains("qwen2_tokenizer")) {
        args.push_back("--llm-tokenizer");
        args.push_back(data_path(fx["qwen2_tokenizer"]));
    }
    // Without a manifest entry the built-in CLIP vocabulary is used: the fixtures are single
    // files with no tokenizer files beside them, as users' checkpoints are.
    if (fx.contains("clip_merges")) {
        args.push_back("--tokenizer");
        args.push_back(data_path(fx["clip_merges"]));
    }
    return args;
}

}  // namespace ggdiff::e2e
