#include "tokenizers/find_tokenizer.h"

#include <filesystem>
#include <vector>

namespace ggdiff {

namespace fs = std::filesystem;

namespace {

// A folder from_path() can load: merges.txt (optionally with vocab.json) or tokenizer.json.
bool is_tokenizer_folder(const fs::path& dir) {
    std::error_code ec;
    return fs::is_directory(dir, ec) && (fs::is_regular_file(dir / "merges.txt", ec) ||
                                         fs::is_regular_file(dir / "tokenizer.json", ec));
}

}  // namespace

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
    std::string places;
    for (const fs::path& dir : looked) {
        if (is_tokenizer_folder(dir)) return dir.string();
        places += (places.empty() ? "" : ", ") + dir.string();
    }
    return Status::Error(
        "no CLIP merge list found: pass --tokenizer /path/to/merges.txt (the CLIP BPE merges, e.g. "
        "from a diffusers model's tokenizer/ folder; a folder with vocab.json and merges.txt, or a "
        "tokenizer.json, works too)" +
        (places.empty() ? std::string() : "; looked in " + places));
}

}  // namespace ggdiff
