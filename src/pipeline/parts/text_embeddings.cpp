#include "pipeline/parts/text_embeddings.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/log.h"
#include "core/sha256.h"
#include "io/tensor_index.h"
#include "tokenizers/prompt_attention.h"

namespace ggdiff {
namespace fs = std::filesystem;

namespace {

// Added under a prefix no layout rewrites, so tensors keep their stored names.
constexpr const char* kPrefix = "embedding_file.";

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

// PyTorch files (A1111's .pt, diffusers' learned_embeds.bin), read as data.
bool is_pickle(const std::string& ext) {
    return ext == ".pt" || ext == ".bin";
}

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

Result<std::string> file_short_hash(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::Error("cannot read " + path);
    Sha256 h;
    std::vector<char> buf(1 << 16);
    while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        h.update(buf.data(), static_cast<size_t>(in.gcount()));
    }
    return h.hex_digest().substr(0, 12);
}

// The rows of a tensor for a token width: [n, width] -> n, [width] -> 1, else 0.
int64_t rows_for(const TensorInfo& t, int64_t width) {
    if (t.shape.size() == 1 && t.shape[0] == width) return 1;
    if (t.shape.size() == 2 && t.shape[1] == width && t.shape[0] > 0) return t.shape[0];
    return 0;
}

}  // namespace

PromptEmbeddings::Override PromptEmbeddings::override_for(size_t e, int64_t width,
                                                          std::vector<int32_t>& ids) const {
    Override o;
    if (empty() || e >= tables.size()) return o;
    const std::vector<float>& table = tables[e];
    const int64_t rows = static_cast<int64_t>(table.size()) / width;
    o.vectors.assign(ids.size() * static_cast<size_t>(width), 0.0f);
    o.keep.assign(ids.size(), 1.0f);
    for (size_t i = 0; i < ids.size(); ++i) {
        const int64_t k = static_cast<int64_t>(ids[i]) - first_id;
        if (k < 0 || k >= rows) continue;
        std::copy_n(table.begin() + k * width, width, o.vectors.begin() + i * width);
        o.keep[i] = 0.0f;
        ids[i] = 0;
        o.any = true;
    }
    return o;
}

Result<std::shared_ptr<TextEmbeddings>> TextEmbeddings::open(const std::string& dir,
                                                             std::vector<int64_t> widths,
                                                             std::vector<std::string> encoders,
                                                             int first_id) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        return Status::Error("--embd-dir " + dir + ": no such folder");
    }
    auto lib = std::shared_ptr<TextEmbeddings>(new TextEmbeddings());
    lib->dir_ = dir;
    lib->widths_ = std::move(widths);
    lib->encoders_ = std::move(encoders);
    lib->first_id_ = first_id;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (!entry.is_regular_file(ec)) continue;
        const std::string ext = lower(entry.path().extension().string());
        if (ext == ".safetensors" || ext == ".gguf" || is_pickle(ext)) {
            files.push_back(entry.path());
        }
    }
    if (ec) return Status::Error("--embd-dir " + dir + ": " + ec.message());
    std::sort(files.begin(), files.end());
    for (const fs::path& p : files) {
        const std::string name = lower(p.stem().string());
        if (name.empty()) continue;
        auto it = lib->entries_.find(name);
        if (it != lib->entries_.end()) {
            // Two files of one name: a safetensors / GGUF file wins over a pickle.
            const bool old_pickle = is_pickle(lower(fs::path(it->second.path).extension()));
            const bool new_pickle = is_pickle(lower(p.extension().string()));
            GGDIFF_LOG_WARN(
                "--embd-dir: %s and %s are both embedding '%s'; using %s", it->second.path.c_str(),
                p.string().c_str(), name.c_str(),
                old_pickle && !new_pickle ? p.string().c_str() : it->second.path.c_str());
            if (!(old_pickle && !new_pickle)) continue;
        }
        lib->entries_[name].path = p.string();
    }
    GGDIFF_LOG_INFO("--embd-dir %s: %zu embedding(s)", dir.c_str(), lib->entries_.size());
    return lib;
}

std::vector<std::string> TextEmbeddings::names() const {
    std::vector<std::string> out;
    for (const auto& [name, e] : entries_) out.push_back(name);
    return out;
}

Status TextEmbeddings::load(const std::string& name, Entry& e) const {
    TensorIndex index;
    Status added = index.add(e.path, kPrefix);
    if (!added.ok()) return added.with_context("embedding '" + name + "'");

    std::string widths_text, held;
    for (size_t i = 0; i < widths_.size(); ++i) {
        widths_text += (i ? " and " : "") + std::to_string(widths_[i]) + " (" + encoders_[i] + ")";
    }
    for (const TensorInfo& t : index.tensors()) {
        held += (held.empty() ? "" : ", ") + t.source_name + " " + shape_text(t.shape);
    }
    const std::string what = "embedding '" + name + "' (" + e.path + ")";

    e.rows = 0;
    e.vectors.assign(widths_.size(), {});
    for (size_t i = 0; i < widths_.size(); ++i) {
        const int64_t width = widths_[i];
        std::vector<const TensorInfo*> fits;
        const TensorInfo* named = nullptr;
        for (const TensorInfo& t : index.tensors()) {
            if (rows_for(t, width) == 0) continue;
            fits.push_back(&t);
            // A1111's names: SDXL's per-encoder tensors, SD1/SD2's "emb_params" and the
            // "string_to_param.*" of its older files.
            const std::string& s = t.source_name;
            if ((widths_.size() > 1 && s == encoders_[i]) || s == "emb_params" ||
                s.rfind("string_to_param.", 0) == 0) {
                named = &t;
            }
        }
        if (fits.empty()) {
            return Status::Error(what + ": no tensor of token width " + std::to_string(width) +
                                 " (" + encoders_[i] + "); this model takes width " + widths_text +
                                 "; the file holds " + (held.empty() ? "no tensor" : held));
        }
        if (!named && fits.size() > 1) {
            return Status::Error(what + ": several tensors of width " + std::to_string(width) +
                                 " and none named as A1111 names them: " + held);
        }
        const TensorInfo& t = named ? *named : *fits.front();
        const int64_t rows = rows_for(t, width);
        if (i > 0 && rows != e.rows) {
            return Status::Error(what + ": " + std::to_string(e.rows) + " vectors for " +
                                 encoders_[0] + " but " + std::to_string(rows) + " for " +
                                 encoders_[i]);
        }
        e.rows = rows;
        GGDIFF_TRY(index.read_f32(t, e.vectors[i]));
    }
    auto hash = file_short_hash(e.path);
    if (!hash.ok()) return hash.status();
    e.hash = *hash;
    e.loaded = true;
    GGDIFF_LOG_INFO("embedding '%s': %lld token(s) from %s", name.c_str(),
                    static_cast<long long>(e.rows), e.path.c_str());
    return Status::Ok();
}

Result<PromptEmbeddings> TextEmbeddings::for_prompt(const std::string& prompt) {
    PromptEmbeddings out;
    out.first_id = first_id_;
    out.tables.assign(widths_.size(), {});
    if (entries_.empty()) return out;
    const std::vector<std::string> all = names();
    // The names in the prompt, kept in the library's (sorted) order so that the tokenizer
    // breaks ties between them as it would with every name.
    std::vector<int> used;
    for (const auto& item : parse_prompt_attention(prompt)) {
        if (is_break_marker(item)) continue;
        for (const auto& piece :
             ClipTokenizer::split_special(ClipTokenizer::normalize(item.first), all)) {
            if (piece.word >= 0 && std::find(used.begin(), used.end(), piece.word) == used.end()) {
                used.push_back(piece.word);
            }
        }
    }
    std::sort(used.begin(), used.end());
    int next_id = first_id_;
    for (int w : used) {
        const std::string& name = all[static_cast<size_t>(w)];
        Entry& e = entries_[name];
        if (!e.loaded) GGDIFF_TRY(load(name, e));
        std::vector<int> ids;
        for (int64_t r = 0; r < e.rows; ++r) ids.push_back(next_id++);
        out.words.words.push_back(name);
        out.words.ids.push_back(std::move(ids));
        for (size_t i = 0; i < widths_.size(); ++i) {
            out.tables[i].insert(out.tables[i].end(), e.vectors[i].begin(), e.vectors[i].end());
        }
        if (std::find(used_.begin(), used_.end(), name) == used_.end()) used_.push_back(name);
    }
    return out;
}

std::string TextEmbeddings::take_hashes() {
    std::string s;
    for (const std::string& name : used_) {
        const Entry& e = entries_[name];
        s += (s.empty() ? "" : ", ") + name + ": " + e.hash;
    }
    used_.clear();
    return s;
}

}  // namespace ggdiff
