#include "tokenizers/gemma_tokenizer.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <initializer_list>

#include <nlohmann/json.hpp>

#include "tokenizers/byte_level_bpe.h"
#include "tokenizers/prompt_attention.h"
#include "tokenizers/qwen2_tokenizer.h"
#include "tokenizers/tokenizer_files.h"
#include "tokenizers/unicode.h"

namespace ggdiff {

namespace fs = std::filesystem;

namespace {

constexpr const char* kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

void push_tags(std::vector<std::string>& s, std::initializer_list<const char*> tags) {
    for (const char* tag : tags) s.push_back(std::string("<") + tag + ">");
    for (const char* tag : tags) s.push_back(std::string("</") + tag + ">");
}

// stable-diffusion.cpp's Gemma2Tokenizer (kGemma2) and GemmaTokenizer (kGemma3) lists: the
// "before merge" specials, then the "after merge" ones.
std::vector<std::string> reference_specials(GemmaVersion version) {
    const bool g3 = version == GemmaVersion::kGemma3;
    std::vector<std::string> s = {"<pad>", "<eos>", "<bos>", "<unk>", "<mask>"};
    if (g3) {
        s.push_back("[multimodal]");
    } else {
        s.push_back("<2mass>");
        s.push_back("[@BOS@]");
    }
    for (int i = 0; i <= 98; ++i) s.push_back("<unused" + std::to_string(i) + ">");
    s.push_back("<start_of_turn>");
    s.push_back("<end_of_turn>");
    for (int i = 1; i <= 31; ++i) s.push_back(std::string(static_cast<size_t>(i), '\n'));
    for (int i = 2; i <= 31; ++i) {
        std::string w;
        for (int j = 0; j < i; ++j) w += kSpace;
        s.push_back(w);
    }
    push_tags(s, {"table", "caption", "thead", "tbody", "tfoot", "tr", "th", "td"});
    push_tags(s, {"h1", "h2", "h3", "h4", "h5", "h6", "blockquote"});
    push_tags(s, {"strong", "em", "b", "i", "u", "s", "sub", "sup", "code"});
    if (g3) {
        push_tags(
            s, {"a", "html", "body", "img", "span", "bbox", "ul", "li", "div", "iframe", "footer"});
    }
    for (int i = 0; i <= 0xFF; ++i) {
        char buf[16];
        std::snprintf(buf, sizeof(buf), "<0x%02X>", i);
        s.push_back(buf);
    }
    for (int i = 1; i <= 31; ++i) s.push_back(std::string(static_cast<size_t>(i), '\t'));
    if (g3) {
        s.push_back("<start_of_image>");
        s.push_back("<end_of_image>");
        for (int i = 99; i <= 6241; ++i) s.push_back("<unused" + std::to_string(i) + ">");
        s.push_back("<image_soft_token>");
    } else {
        s.push_back("[toxicity=0]");
        s.push_back("<unused99>");
    }
    return s;
}

}  // namespace

Result<std::string> find_gemma_tokenizer(const std::vector<std::string>& model_paths,
                                         const std::string& flag, GemmaVersion version) {
    std::error_code ec;
    auto holds = [&](const fs::path& dir) {
        return fs::is_directory(dir, ec) && fs::is_regular_file(dir / "tokenizer.json", ec);
    };
    if (!flag.empty()) {
        const fs::path p(flag);
        if (!fs::exists(p, ec)) {
            return Status::Error("--llm-tokenizer " + flag + ": no such file or folder");
        }
        if (!fs::is_directory(p, ec)) return flag;
        if (holds(p)) return flag;
        if (holds(p / "tokenizer")) return (p / "tokenizer").string();
        return Status::Error("--llm-tokenizer " + flag +
                             ": the folder holds no tokenizer.json or tokenizer/ folder");
    }
    std::vector<fs::path> looked;
    auto add = [&](const fs::path& p) {
        for (const fs::path& q : looked) {
            if (q == p) return;
        }
        looked.push_back(p);
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
    std::string places;
    for (const fs::path& dir : looked) {
        if (holds(dir)) return dir.string();
        places += (places.empty() ? "" : ", ") + dir.string();
    }
    const bool g3 = version == GemmaVersion::kGemma3;
    return Status::Error(
        std::string("no tokenizer found for the Gemma text encoder (its 256k vocabulary is not "
                    "built in): pass --llm-tokenizer with ") +
        (g3 ? "Gemma 3's tokenizer.json (google/gemma-3-12b-it's)"
            : "Gemma 2's tokenizer.json (google/gemma-2-2b-it's)") +
        ", or put it "
        "beside the --llm file or in a tokenizer/ folder next to it, or use a Gemma GGUF that "
        "holds its vocabulary (tokenizer.ggml.*)" +
        (places.empty() ? std::string() : "; looked in " + places));
}

const std::vector<std::string>& GemmaTokenizer::special_tokens(GemmaVersion version) {
    static const std::vector<std::string> gemma2 = reference_specials(GemmaVersion::kGemma2);
    static const std::vector<std::string> gemma3 = reference_specials(GemmaVersion::kGemma3);
    return version == GemmaVersion::kGemma3 ? gemma3 : gemma2;
}

Result<GemmaTokenizer> GemmaTokenizer::from_path(const std::string& path, GemmaVersion version) {
    std::error_code ec;
    std::string file = path;
    if (fs::is_directory(path, ec)) {
        file = (fs::path(path) / "tokenizer.json").string();
        if (!fs::is_regular_file(file, ec)) {
            return Status::Error(path + ": no tokenizer.json in the folder");
        }
    }
    auto j = read_tokenizer_json(file);
    if (!j.ok()) return j.status();
    if (!j->is_object() || !j->contains("model") || !(*j)["model"].is_object() ||
        !(*j)["model"].contains("vocab") || !(*j)["model"]["vocab"].is_object() ||
        !(*j)["model"].contains("merges") || !(*j)["model"]["merges"].is_array()) {
        return Status::Error(file +
                             ": no model.vocab / model.merges (not Gemma's BPE tokenizer.json)");
    }
    GemmaTokenizer tok;
    tok.version_ = version;
    const auto& model = (*j)["model"];
    for (auto it = model["vocab"].begin(); it != model["vocab"].end(); ++it) {
        if (!it.value().is_number_integer()) continue;
        const long long id = it.value().get<long long>();
        if (id < 0 || id > INT_MAX) continue;
        tok.vocab_[it.key()] = static_cast<int>(id);
        tok.id_to_token_[static_cast<int>(id)] = it.key();
    }
    if (j->contains("added_tokens") && (*j)["added_tokens"].is_array()) {
        for (const auto& t : (*j)["added_tokens"]) {
            if (!t.is_object() || !t.contains("content") || !t["content"].is_string() ||
                !t.contains("id") || !t["id"].is_number_integer()) {
                return Status::Error(file +
                                     ": an added token is not {\"content\": text, \"id\": n}");
            }
            const long long id = t["id"].get<long long>();
            if (id < 0 || id > INT_MAX) continue;
            tok.vocab_.emplace(t["content"].get<std::string>(), static_cast<int>(id));
            tok.id_to_token_.emplace(static_cast<int>(id), t["content"].get<std::string>());
        }
    }
    int rank = 0;
    for (const auto& m : model["merges"]) {
        std::string merge;
        if (m.is_string()) {
            merge = m.get<std::string>();
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
            merge = m[0].get<std::string>() + " " + m[1].get<std::string>();
        } else {
            return Status::Error(file + ": merge " + std::to_string(rank + 1) + " is malformed");
        }
        tok.merges_.emplace(merge, rank++);
    }
    GGDIFF_TRY(tok.finish(file));
    return tok;
}

Status GemmaTokenizer::finish(const std::string& what) {
    if (vocab_.empty()) return Status::Error(what + ": empty vocabulary");
    if (!vocab_.count("<bos>") || !vocab_.count("<pad>")) {
        return Status::Error(what + ": no <bos> / <pad> token (not a Gemma tokenizer)");
    }
    bos_ = vocab_["<bos>"];
    pad_ = vocab_["<pad>"];
    unk_ = vocab_.count("<unk>") ? vocab_["<unk>"] : 3;
    specials_.clear();
    special_start_.fill(false);
    for (const std::string& s : special_tokens(version_)) {
        // The reference looks a special up as a vocabulary entry; a missing one reads as id 0.
        auto it = vocab_.find(s);
        specials_.emplace_back(s, it == vocab_.end() ? 0 : it->second);
        if (!s.empty()) special_start_[static_cast<unsigned char>(s[0])] = true;
    }
    return Status::Ok();
}

Result<GemmaTokenizer> GemmaTokenizer::from_sentencepiece(const std::vector<std::string>& tokens,
                                                          const std::vector<float>& scores,
                                                          const std::vector<int64_t>& types,
                                                          const std::string& what,
                                                          GemmaVersion version) {
    if (scores.size() != tokens.size()) {
        return Status::Error(what + ": " + std::to_string(scores.size()) + " scores for " +
                             std::to_string(tokens.size()) +
                             " tokens (the scores rank the merges)");
    }
    if (!types.empty() && types.size() != tokens.size()) {
        return Status::Error(what + ": " + std::to_string(types.size()) + " token types for " +
                             std::to_string(tokens.size()) + " tokens");
    }
    if (tokens.size() > static_cast<size_t>(INT_MAX)) {
        return Status::Error(what + ": too many tokens");
    }
    constexpr int64_t kUnused = 5;  // llama.cpp's LLAMA_TOKEN_TYPE_UNUSED
    GemmaTokenizer tok;
    tok.version_ = version;
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (!types.empty() && types[i] == kUnused) continue;
        tok.vocab_.emplace(tokens[i], static_cast<int>(i));
        tok.id_to_token_.emplace(static_cast<int>(i), tokens[i]);
    }
    // Hugging Face's SentencePiece converter: each token's two-token splits (ordered by the
    // halves' ids), all ranked by the token's score, highest first, stably.
    struct Merge {
        float score;
        std::string pair;
    };
    std::vector<Merge> merges;
    std::vector<std::pair<std::pair<int, int>, std::string>> local;
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (!types.empty() && types[i] == kUnused) continue;
        const std::string& t = tokens[i];
        local.clear();
        for (size_t k = 1; k < t.size(); ++k) {
            if ((static_cast<unsigned char>(t[k]) & 0xC0) == 0x80) continue;  // inside a char
            auto l = tok.vocab_.find(t.substr(0, k));
            if (l == tok.vocab_.end()) continue;
            auto r = tok.vocab_.find(t.substr(k));
            if (r == tok.vocab_.end()) continue;
            local.push_back({{l->second, r->second}, l->first + " " + r->first});
        }
        std::sort(local.begin(), local.end());
        for (auto& m : local) merges.push_back({scores[i], std::move(m.second)});
    }
    std::stable_sort(merges.begin(), merges.end(),
                     [](const Merge& a, const Merge& b) { return a.score > b.score; });
    int rank = 0;
    for (Merge& m : merges) tok.merges_.emplace(std::move(m.pair), rank++);
    GGDIFF_TRY(tok.finish(what));
    return tok;
}

int GemmaTokenizer::token_to_id(const std::string& token) const {
    auto it = vocab_.find(token);
    return it == vocab_.end() ? -1 : it->second;
}

std::vector<int> GemmaTokenizer::encode_piece(const std::string& piece) const {
    // Spaces become U+2581, then the characters merge by rank.
    std::string text;
    for (char c : piece) {
        if (c == ' ') {
            text += kSpace;
        } else {
            text += c;
        }
    }
    std::vector<std::string> symbols;
    const std::u32string cps = unicode::decode_utf8(text);
    for (char32_t cp : cps) symbols.push_back(unicode::encode_utf8(std::u32string(1, cp)));
    symbols =
        byte_level::merge(std::move(symbols), [this](const std::string& a, const std::string& b) {
            auto it = merges_.find(a + " " + b);
            return it == merges_.end() ? -1 : it->second;
        });
    std::vector<int> ids;
    for (const std::string& s : symbols) {
        auto it = vocab_.find(s);
        if (it != vocab_.end()) {
            ids.push_back(it->second);
            continue;
        }
        for (unsigned char b : s) {
            char buf[16];
            std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
            auto bt = vocab_.find(buf);
            ids.push_back(bt == vocab_.end() ? unk_ : bt->second);
        }
    }
    return ids;
}

std::vector<int> GemmaTokenizer::encode(const std::string& text) const {
    return byte_level::encode_with_specials(
        text, specials_, [this](unsigned char c) { return special_start_[c]; },
        [this](const std::string& run) {
            std::vector<int> ids;
            for (const std::string& piece : Qwen2Tokenizer::pre_tokenize(run)) {
                const std::vector<int> part = encode_piece(piece);
                ids.insert(ids.end(), part.begin(), part.end());
            }
            return ids;
        });
}

GemmaPromptTokens gemma3_prompt_tokens(const GemmaTokenizer& tok, const std::string& prompt) {
    GemmaPromptTokens out;
    out.ids.push_back(tok.bos_id());
    out.weights.push_back(1.0f);
    for (const auto& [text, weight] : parse_prompt_attention(prompt)) {
        const std::vector<int> part = tok.encode(text);
        out.ids.insert(out.ids.end(), part.begin(), part.end());
        out.weights.insert(out.weights.end(), part.size(), weight);
    }
    return out;
}

}  // namespace ggdiff
