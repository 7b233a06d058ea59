// Fuzz target: prompt parsing (seeds in corpus/prompt): A1111 emphasis, escapes, BREAK and
// <lora:NAME:W> tags as plain text, the CLIP tokenizer and the prompt limits. The heap BPE
// must agree with CLIP's reference merge loop on short inputs. Mistral's Tekken tokenizer (on
// the synthetic vocabulary) gives ids inside its vocabulary that decode back to valid UTF-8
// text.
#include <memory>

#include "../support/mistral_synthetic.h"
#include "../tokenizers/reference_bpe.h"
#include "fuzz_util.h"
#include "tokenizers/clip_tokenizer.h"
#include "tokenizers/mistral_tokenizer.h"
#include "tokenizers/prompt_attention.h"
#include "tokenizers/prompt_limits.h"
#include "tokenizers/token_windows.h"
#include "tokenizers/unicode.h"

namespace {

struct Clip {
    std::unique_ptr<ggdiff::ClipTokenizer> tokenizer;
    std::unique_ptr<ggdiff::test::ReferenceBpe> reference;
};

// The real CLIP merges from ../shared (absent: the tokenizer parts are skipped).
const Clip& clip() {
    static const Clip c = [] {
        Clip out;
        const std::string merges = std::string(GGDIFF_SHARED_DIR) + "/data/clip/merges.txt";
        auto t = ggdiff::ClipTokenizer::from_merges_file(merges);
        if (t.ok()) {
            out.tokenizer = std::make_unique<ggdiff::ClipTokenizer>(std::move(*t));
            out.reference = std::make_unique<ggdiff::test::ReferenceBpe>(merges);
        }
        return out;
    }();
    return c;
}

const ggdiff::MistralTokenizer& mistral() {
    static const ggdiff::MistralTokenizer* t = [] {
        auto r = ggdiff::MistralTokenizer::from_tekken_text(ggdiff::test::synthetic_tekken_json(),
                                                            "synthetic tekken.json");
        GGDIFF_FUZZ_CHECK(r.ok());
        return new ggdiff::MistralTokenizer(std::move(*r));
    }();
    return *t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace ggdiff;
    const std::string text(reinterpret_cast<const char*>(data), size);
    const auto runs = parse_prompt_attention(text);
    GGDIFF_FUZZ_CHECK(!runs.empty());
    if (size <= 4096) {
        const std::vector<int> ids = mistral().encode(text);
        for (int id : ids) {
            GGDIFF_FUZZ_CHECK(id >= 0 && static_cast<size_t>(id) < mistral().vocab_size());
        }
        if (unicode::encode_utf8(unicode::decode_utf8(text)) == text) {
            GGDIFF_FUZZ_CHECK(mistral().decode(ids) == text);
        }
    }
    const Clip& c = clip();
    if (!c.tokenizer) return 0;
    if (check_prompt_bytes(text.size(), "the prompt").ok()) {
        (void)check_clip_prompt(*c.tokenizer, text, "the prompt");
        const TokenWindows tw = tokenize_weighted(*c.tokenizer, text, c.tokenizer->eos());
        GGDIFF_FUZZ_CHECK(tw.tokens.size() ==
                          static_cast<size_t>(tw.n_windows) * kClipWindowLength);
        GGDIFF_FUZZ_CHECK(tw.weights.size() == tw.tokens.size());
    }
    if (size <= 128) {
        GGDIFF_FUZZ_CHECK(c.tokenizer->encode(text) == c.reference->encode(*c.tokenizer, text));
    }
    return 0;
}
