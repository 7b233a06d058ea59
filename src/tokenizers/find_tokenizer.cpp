#include "tokenizers/find_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/read_file.h"
#include "tokenizers/clip_builtin.h"

namespace ggdiff {

namespace fs = std::filesystem;

namespace {

// A folder from_path() can load: merges.txt (optionally with vocab.json) or tokenizer.json.
bool is_tokenizer_folder(const fs::path& dir) {
    std::error_code ec;
    return fs::is_directory(dir, ec) && (fs::is_regular_file(dir / "merges.txt", ec) ||
                                         fs::is_regular_file(dir / "tokenizer.json", ec));
}

// A folder Qwen2Tokenizer::from_path() can load.
bool is_bpe_vocab_folder(const fs::path& dir) {
    std::error_code ec;
    return fs::is_directory(dir, ec) && ((fs::is_regular_file(dir / "vocab.json", ec) &&
                                          fs::is_regular_file(dir / "merges.txt", ec)) ||
                                         fs::is_regular_file(dir / "tokenizer.json", ec));
}

// The folders a text encoder's tokenizer may sit in: each model file's folder (or the folder
// itself), its tokenizer/ subfolder, and the tokenizer/ folder beside it (diffusers layout);
// each once, in that order.
std::vector<fs::path> folders_near(const std::vector<std::string>& model_paths) {
    std::error_code ec;
    std::vector<fs::path> out;
    auto add = [&](const fs::path& p) {
        if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    };
    for (const std::string& model : model_paths) {
        if (model.empty()) continue;
        fs::path dir =
            fs::is_directory(model, ec) ? fs::path(model) : fs::path(model).parent_path();
        if (dir.empty()) dir = ".";
        add(dir);
        add(dir / "tokenizer");
        const fs::path parent = fs::absolute(dir, ec).parent_path();
        if (!parent.empty() && parent != fs::absolute(dir, ec)) add(parent / "tokenizer");
    }
    return out;
}

std::string join_paths(const std::vector<fs::path>& paths) {
    std::string out;
    for (const fs::path& p : paths) out += (out.empty() ? "" : ", ") + p.string();
    return out;
}

// A folder MistralTokenizer::from_path() can load.
bool is_mistral_folder(const fs::path& dir) {
    std::error_code ec;
    return fs::is_directory(dir, ec) && (fs::is_regular_file(dir / "tekken.json", ec) ||
                                         fs::is_regular_file(dir / "tokenizer.json", ec));
}

}  // namespace

namespace {

// The --llm-tokenizer flag or the first folder near the models that `usable` accepts (a folder
// itself or its tokenizer/ subfolder for the flag); `holds` says what the flag's folder lacked,
// `missing` is the error without the places looked in.
Result<std::string> find_language_model_tokenizer(const std::vector<std::string>& model_paths,
                                                  const std::string& tokenizer_flag,
                                                  bool (*usable)(const fs::path&),
                                                  const char* holds, const std::string& missing) {
    std::error_code ec;
    if (!tokenizer_flag.empty()) {
        const fs::path p(tokenizer_flag);
        if (!fs::exists(p, ec)) {
            return Status::Error("--llm-tokenizer " + tokenizer_flag + ": no such file or folder");
        }
        if (!fs::is_directory(p, ec)) return tokenizer_flag;
        if (usable(p)) return tokenizer_flag;
        if (usable(p / "tokenizer")) return (p / "tokenizer").string();
        return Status::Error("--llm-tokenizer " + tokenizer_flag + ": the folder holds no " +
                             holds + " or tokenizer/ folder");
    }
    const std::vector<fs::path> looked = folders_near(model_paths);
    for (const fs::path& dir : looked) {
        if (usable(dir)) return dir.string();
    }
    const std::string places = join_paths(looked);
    return Status::Error(missing + (places.empty() ? std::string() : "; looked in " + places));
}

}  // namespace

Result<std::string> find_llm_tokenizer(const std::vector<std::string>& model_paths,
                                       const std::string& tokenizer_flag) {
    return find_language_model_tokenizer(
        model_paths, tokenizer_flag, is_bpe_vocab_folder, "vocab.json + merges.txt, tokenizer.json",
        "no tokenizer found for the LLM text encoder: pass --llm-tokenizer with the folder "
        "holding its vocab.json and merges.txt (and added_tokens.json), or its tokenizer.json "
        "(e.g. a diffusers model's tokenizer/ folder)");
}

Result<std::string> find_mistral_tokenizer(const std::vector<std::string>& model_paths,
                                           const std::string& tokenizer_flag) {
    return find_language_model_tokenizer(
        model_paths, tokenizer_flag, is_mistral_folder, "tekken.json, tokenizer.json",
        "no tokenizer found for the Mistral text encoder: pass --llm-tokenizer with its "
        "tekken.json or tokenizer.json (Mistral-Small-3.1/3.2-24B-Instruct's, or a FLUX.2-dev "
        "diffusers folder's tokenizer/)");
}

Result<std::string> find_clip_merges(const std::string& model_path,
                                     const std::string& tokenizer_flag) {
    std::error_code ec;
    if (!tokenizer_flag.empty()) {
        const fs::path p(tokenizer_flag);
        if (!fs::exists(p, ec)) {
            return Status::Error("--tokenizer " + tokenizer_flag + ": no such file or folder");
        }
        if (!fs::is_directory(p, ec)) return tokenizer_flag;
        if (is_tokenizer_folder(p)) return tokenizer_flag;
        if (is_tokenizer_folder(p / "tokenizer")) return (p / "tokenizer").string();
        return Status::Error("--tokenizer " + tokenizer_flag +
                             ": the folder holds no merges.txt, tokenizer.json or tokenizer/ "
                             "folder; pass the CLIP merges.txt file itself");
    }

    std::vector<fs::path> looked;
    if (!model_path.empty()) {
        fs::path model_dir = fs::is_directory(model_path, ec) ? fs::path(model_path)
                                                              : fs::path(model_path).parent_path();
        if (model_dir.empty()) model_dir = ".";
        looked.push_back(model_dir / "tokenizer");
        const fs::path parent = fs::absolute(model_dir, ec).parent_path();
        if (!parent.empty() && parent != fs::absolute(model_dir, ec)) {
            looked.push_back(parent / "tokenizer");
        }
    }
    for (const fs::path& dir : looked) {
        if (is_tokenizer_folder(dir)) return dir.string();
    }
    return std::string();
}

Result<ClipTokenizer> open_clip_tokenizer(const std::string& model_path,
                                          const std::string& tokenizer_flag,
                                          const std::string* embedded_merges, std::string* source) {
    auto say = [&](const std::string& s) {
        if (source) *source = s;
    };
    if (tokenizer_flag.empty() && embedded_merges) {
        auto t = ClipTokenizer::from_merges_text(*embedded_merges);
        if (!t.ok()) return t.status().with_context("tokenizer in the checkpoint");
        say("the checkpoint");
        return t;
    }
    auto path = find_clip_merges(model_path, tokenizer_flag);
    if (!path.ok()) return path.status();
    if (path->empty()) {
        say("built in");
        return builtin_clip_tokenizer();
    }
    auto t = ClipTokenizer::from_path(*path);
    if (!t.ok()) {
        return t.status().with_context(tokenizer_flag.empty() ? "CLIP tokenizer " + *path
                                                              : "--tokenizer " + tokenizer_flag);
    }
    say(*path);
    return t;
}

namespace {

// Whether diffusers pipeline folder `dir`'s text_encoder/ is T5 (its config.json's model_type:
// Chroma's only text encoder), so that tokenizer/ beside it is T5's too.
bool t5_text_encoder(const fs::path& dir) {
    std::error_code ec;
    const fs::path config = dir / "text_encoder" / "config.json";
    if (!fs::is_regular_file(config, ec)) return false;
    auto text = read_text_file(config.string(), 1u << 20);
    if (!text.ok() || !check_json_nesting(*text, 16).ok()) return false;
    const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    return j.is_object() && j.contains("model_type") && j["model_type"].is_string() &&
           j["model_type"].get<std::string>().rfind("t5", 0) == 0;
}

}  // namespace

Result<std::string> find_t5_tokenizer(const std::vector<std::string>& near,
                                      const std::string& flag) {
    std::error_code ec;
    const char* kSub[] = {"tokenizer_2", "tokenizer_3"};
    if (!flag.empty()) {
        const fs::path p(flag);
        if (!fs::exists(p, ec)) {
            return Status::Error("--t5xxl-tokenizer " + flag + ": no such file or folder");
        }
        if (!fs::is_directory(p, ec)) return flag;
        if (fs::is_regular_file(p / "tokenizer.json", ec)) return (p / "tokenizer.json").string();
        for (const char* sub : kSub) {
            if (fs::is_regular_file(p / sub / "tokenizer.json", ec))
                return (p / sub / "tokenizer.json").string();
        }
        if (t5_text_encoder(p) && fs::is_regular_file(p / "tokenizer" / "tokenizer.json", ec))
            return (p / "tokenizer" / "tokenizer.json").string();
        return Status::Error("--t5xxl-tokenizer " + flag +
                             ": the folder holds no tokenizer.json (nor tokenizer_2/ or "
                             "tokenizer_3/ with one); pass the T5 tokenizer.json itself");
    }
    std::vector<fs::path> looked;
    for (const std::string& path : near) {
        if (path.empty()) continue;
        fs::path dir = fs::is_directory(path, ec) ? fs::path(path) : fs::path(path).parent_path();
        if (dir.empty()) dir = ".";
        const fs::path parent = fs::absolute(dir, ec).parent_path();
        std::vector<fs::path> candidates = {dir / "tokenizer.json"};
        for (const char* sub : kSub) candidates.push_back(dir / sub / "tokenizer.json");
        for (const char* sub : kSub) candidates.push_back(parent / sub / "tokenizer.json");
        // A pipeline whose text_encoder/ is T5 (Chroma): its tokenizer/.
        for (const fs::path& pipe : {dir, parent}) {
            if (t5_text_encoder(pipe)) candidates.push_back(pipe / "tokenizer" / "tokenizer.json");
        }
        for (const fs::path& c : candidates) {
            if (std::find(looked.begin(), looked.end(), c) != looked.end()) continue;
            if (fs::is_regular_file(c, ec)) return c.string();
            looked.push_back(c);
        }
    }
    std::string places;
    for (const fs::path& c : looked) places += (places.empty() ? "" : ", ") + c.string();
    return Status::Error(
        "no T5 tokenizer found: pass --t5xxl-tokenizer /path/to/tokenizer.json (the Hugging Face "
        "tokenizer.json of T5 v1.1, e.g. from a FLUX diffusers folder's tokenizer_2/)" +
        (places.empty() ? std::string() : "; looked for " + places));
}

}  // namespace ggdiff
