// Lens through the CLI, files as users have them (the lens_tiny golden set of tests/golden: the
// DiT as safetensors, GPT-OSS as a llama.cpp GGUF, FLUX.2's VAE): -M info names the family for
// the DiT alone (with and without its model.diffusion_model. prefix) and for its parts; the
// DiT as a q8_0 GGUF (and --type q8_0 on load) stays near the golden image and the A1111
// parameters name it; a missing or wrong text encoder, tokenizer or VAE gets an error that
// says what to pass. GPT-OSS's tokenizer read from the GGUF's own tokenizer.ggml.* arrays (as
// unsloth/gpt-oss-20b-GGUF holds it) gives the image of the tokenizer.json route.
#include <gtest/gtest.h>

#include "../golden/e2e_support.h"
#include "files_support.h"
#include "gguf_kvs.h"
#include "image/image_metadata.h"
#include "models/te/gpt_oss_tokenizer.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;

// A GGUF vocabulary as llama.cpp's convert writes it from a tokenizer.json: token i at index i
// (type 1), the added tokens at their ids (type 3, control), "[PADn]" rows (type 5, unused)
// up to `rows`.
struct Vocab {
    std::vector<std::string> tokens, merges;
    std::vector<int32_t> types;
};

Vocab vocab_of(const std::string& tokenizer_json, size_t rows) {
    std::ifstream in(tokenizer_json);
    const nlohmann::json j = nlohmann::json::parse(in);
    Vocab v;
    auto put = [&](size_t id, const std::string& t, int32_t type) {
        if (v.tokens.size() <= id) {
            for (size_t i = v.tokens.size(); i <= id; ++i) {
                v.tokens.push_back("[PAD" + std::to_string(i) + "]");
                v.types.push_back(5);
            }
        }
        v.tokens[id] = t;
        v.types[id] = type;
    };
    for (auto it = j["model"]["vocab"].begin(); it != j["model"]["vocab"].end(); ++it)
        put(it.value().get<size_t>(), it.key(), 1);
    for (const auto& a : j["added_tokens"]) put(a["id"].get<size_t>(), a["content"], 3);
    if (rows > v.tokens.size()) put(rows - 1, "[PAD" + std::to_string(rows - 1) + "]", 5);
    for (const auto& m : j["model"]["merges"]) {
        v.merges.push_back(m.is_string() ? m.get<std::string>()
                                         : m[0].get<std::string>() + " " + m[1].get<std::string>());
    }
    return v;
}

// The tokenizer.ggml.* keys of `v` with tokenizer.ggml.model `model`, padded to 32 bytes.
e2e::GgufKvs vocab_kvs(const Vocab& v, const std::string& model) {
    e2e::GgufKvs kvs;
    kvs.str("tokenizer.ggml.model", model);
    kvs.str("tokenizer.ggml.pre", "gpt-4o");
    kvs.strings("tokenizer.ggml.tokens", v.tokens);
    kvs.strings("tokenizer.ggml.merges", v.merges);
    kvs.i32s("tokenizer.ggml.token_type", v.types);
    kvs.pad_to_32();
    return kvs;
}

class LensFiles : public e2e::CaseFiles {
  protected:
    std::string suite() const override { return "lens_tiny"; }
    std::string case_id() const override { return "lens_cfg1_tall"; }
    std::vector<std::string> files() const override { return {dit(), llm(), vae()}; }

    static std::string dit() { return e2e::built_fixture("lens_tiny_dit"); }
    static std::string llm() {
        return std::string(GGDIFF_BINARY_DIR) + "/fixtures/lens_tiny_llm.gguf";
    }
    static std::string vae() { return e2e::built_fixture("flux2_vae"); }
    static std::vector<std::string> split_args() {
        return {"--diffusion-model", dit(), "--llm", llm(), "--vae", vae()};
    }

    // The golden case (whose arguments pass --llm-tokenizer) with `model` into `out`; with
    // `own_tokenizer` the case's --llm-tokenizer is left out.
    RunResult generate(const std::vector<std::string>& model, const std::string& out,
                       const std::vector<std::string>& extra = {},
                       bool own_tokenizer = false) const {
        if (!own_tokenizer) return CaseFiles::generate(model, out, extra);
        std::vector<std::string> args = model;
        const std::vector<std::string> c = e2e::suite_case_args(suite_dir(), case_id());
        for (size_t i = 0; i < c.size(); ++i) {
            if (c[i] == "--llm-tokenizer") {
                ++i;
                continue;
            }
            args.push_back(c[i]);
        }
        args.insert(args.end(), extra.begin(), extra.end());
        args.insert(args.end(), {"-o", out});
        return e2e::run_ggdiff(args, dir_, 600);
    }
};

constexpr const char* kFamily = "family:      lens (Lens)";

TEST_F(LensFiles, InfoNamesLens) {
    expect_info_names({"--diffusion-model", dit()}, kFamily);
    // The bare DiT given as the model (-m) is filed under model.diffusion_model.
    expect_info_names({"-m", dit()}, kFamily);
    RunResult parts = info(split_args());
    ASSERT_TRUE(parts.succeeded()) << parts.describe();
    EXPECT_TRUE(contains(parts.out, kFamily)) << parts.describe();
    EXPECT_TRUE(contains(parts.out + parts.err, "llama.cpp language model names renamed"))
        << parts.describe();
}

// The DiT converted to a q8_0 GGUF, and every part converted on load with --type q8_0, stay
// near the golden image; the A1111 parameters of the PNG name the DiT file as the model.
TEST_F(LensFiles, GgufDitTypeAndMetadata) {
    check_q8_0_gguf_and_type(kFamily, "lens_tiny_dit", dit(), "", "",
                             [](const std::string& gguf, const std::string&) {
                                 const std::string d = gguf.empty() ? dit() : gguf;
                                 return e2e::with_flag_value(split_args(), "--diffusion-model", d);
                             });
}

// The vocabulary read from tokenizer.ggml.* gives the tokens of the tokenizer.json it was
// written from (the specials included, the unused [PAD] rows left out); a SentencePiece GGUF
// vocabulary and a GGUF without one are refused saying so.
TEST_F(LensFiles, GgufVocabularyTokenizesAsTheTokenizerJson) {
    const std::string json = suite_dir() + "/gpt_oss_tokenizer.json";
    const Vocab v = vocab_of(json, 640);
    ASSERT_EQ(v.tokens.size(), 640u);
    const std::string gguf = dir_ + "/vocab.gguf";
    e2e::write_header_only_gguf(gguf, vocab_kvs(v, "gpt2"));
    auto from_gguf = ggdiff::models::read_gguf_vocab(gguf);
    ASSERT_TRUE(from_gguf.ok()) << from_gguf.status().message();
    EXPECT_EQ(from_gguf->pre, "gpt-4o");
    auto from_json = ggdiff::Qwen2Tokenizer::from_tokenizer_json(json);
    ASSERT_TRUE(from_json.ok()) << from_json.status().message();
    EXPECT_EQ(from_gguf->tokenizer.vocab_size(), from_json->vocab_size());
    EXPECT_EQ(from_gguf->tokenizer.added_count(), from_json->added_count());
    for (const char* text :
         {"<|start|>user<|message|>a red fox in the snow, (detailed:1.2)<|end|>",
          "<|start|>assistant<|channel|>final<|message|>", "Need to generate one image 42 !?"}) {
        EXPECT_EQ(from_gguf->tokenizer.encode(text), from_json->encode(text)) << text;
    }
    EXPECT_EQ(from_gguf->tokenizer.token_to_id("[PAD630]"), -1);

    const std::string spm = dir_ + "/spm.gguf";
    e2e::write_header_only_gguf(spm, vocab_kvs(v, "llama"));
    auto refused = ggdiff::models::read_gguf_vocab(spm);
    ASSERT_FALSE(refused.ok());
    EXPECT_TRUE(contains(refused.status().message(), "tokenizer.ggml.model is 'llama'"))
        << refused.status().message();
    auto none = ggdiff::models::read_gguf_vocab(llm());
    ASSERT_FALSE(none.ok());
    EXPECT_TRUE(contains(none.status().message(), "holds no tokenizer.ggml.tokens"))
        << none.status().message();
}

// A GPT-OSS GGUF that carries its vocabulary (as unsloth/gpt-oss-20b-GGUF does) needs no
// --llm-tokenizer: the image is the one the tokenizer.json gives.
TEST_F(LensFiles, TokenizerFromTheGgufGivesTheSameImage) {
    const std::string json = suite_dir() + "/gpt_oss_tokenizer.json";
    const std::string gguf = dir_ + "/gpt_oss_with_vocab.gguf";
    e2e::add_gguf_kvs(llm(), vocab_kvs(vocab_of(json, 640), "gpt2"), gguf);
    struct stat st {};
    ASSERT_EQ(::stat(gguf.c_str(), &st), 0);
    EXPECT_LT(static_cast<uint64_t>(st.st_blocks) * 512, 100ull << 20) << "holes kept";

    const std::string own = dir_ + "/own.png";
    RunResult r = generate(e2e::with_flag_value(split_args(), "--llm", gguf), own, {"-v"},
                           /*own_tokenizer=*/true);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.out + r.err, "GPT-OSS tokenizer: the vocabulary in " + gguf))
        << r.describe();
    const std::string by_json = dir_ + "/json.png";
    RunResult j = generate(e2e::with_flag_value(split_args(), "--llm", gguf), by_json);
    ASSERT_TRUE(j.succeeded()) << j.describe();
    const e2e::ImageDiff d = e2e::compare_images(own, by_json);
    ASSERT_TRUE(d.ok) << d.error;
    std::printf("GGUF vocabulary against tokenizer.json: mean_abs_diff %.3f max %d\n", d.mean_abs,
                d.max_abs);
    EXPECT_EQ(d.max_abs, 0);
    e2e::expect_images_near(own, golden(), 1.5, "the GGUF's own vocabulary against the golden");
}

// What a newcomer gets wrong: no --llm, a Qwen LLM as --llm, no tokenizer, no or the wrong VAE.
TEST_F(LensFiles, ClearErrorsForMissingOrWrongParts) {
    auto fails = [&](std::vector<std::string> model, const char* name,
                     const std::vector<std::string>& needles, bool own_tokenizer = false) {
        const std::string out = dir_ + "/" + name + ".png";
        RunResult r = generate(model, out, {}, own_tokenizer);
        EXPECT_FALSE(r.succeeded()) << name;
        for (const std::string& n : needles) {
            EXPECT_TRUE(contains(r.err, n)) << name << ": " << r.describe();
        }
        EXPECT_FALSE(fs::exists(out)) << name;
    };
    fails(e2e::with_flag_value(split_args(), "--llm", ""), "no_llm",
          {"Lens needs its text encoder", "--llm"});
    ASSERT_TRUE(fs::is_regular_file(e2e::built_fixture("flux2_tiny_llm")));
    fails(e2e::with_flag_value(split_args(), "--llm", e2e::built_fixture("flux2_tiny_llm")),
          "qwen_llm", {"--llm: not GPT-OSS"});
    // Every place looked: beside the --llm file, and the GGUF's own vocabulary.
    fails(split_args(), "no_tokenizer",
          {"Lens needs GPT-OSS's tokenizer", "--llm-tokenizer", "looked in",
           "looked in " + fs::path(llm()).parent_path().string(),
           llm() + ": the GGUF holds no tokenizer.ggml.tokens vocabulary"},
          /*own_tokenizer=*/true);
    fails(e2e::with_flag_value(split_args(), "--vae", ""), "no_vae",
          {"Lens needs the FLUX.2 VAE", "--vae"});
    ASSERT_TRUE(fs::is_regular_file(e2e::built_fixture("flux_ae")));
    fails(e2e::with_flag_value(split_args(), "--vae", e2e::built_fixture("flux_ae")), "flux1_vae",
          {"the VAE has 16 latent channels but the Lens DiT takes 128"});
}

}  // namespace
