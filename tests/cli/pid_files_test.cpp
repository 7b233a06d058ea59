// PiD's files as users have them (the pid_tiny golden set of tests/golden): the three split
// parts (--diffusion-model or -m for the DiT, --llm, --vae) give the golden image; the DiT and
// the Gemma LLM converted to q8_0 GGUFs by -M convert are still PiD for -M info, stay near the
// golden image and the A1111 parameters name the DiT; --type q8_0 on load stays near it too; a
// missing, unreadable or wrong part is refused before any compute, saying what to pass. Gemma's
// tokenizer read from a GGUF's own SentencePiece vocabulary (tokenizer.ggml.tokens / scores /
// token_type, as llama.cpp's Gemma GGUFs hold it) gives the image of the tokenizer.json route.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "../golden/e2e_support.h"
#include "gguf_kvs.h"
#include "models/te/gemma_vocab.h"
#include "part_files.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
using e2e::contains;
using e2e::RunResult;

constexpr const char* kCase = "pid_euler";  // cfg 1: one pass per step

std::string suite_dir() {
    return e2e::repo_suite_dir("pid_tiny");
}
std::string golden() {
    return suite_dir() + "/" + kCase + ".png";
}
std::string dit_file() {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/pid_tiny_dit.gguf";
}

std::vector<std::string> split_args(const std::string& dit = "", const std::string& llm = "") {
    return {"--diffusion-model",
            dit.empty() ? dit_file() : dit,
            "--llm",
            llm.empty() ? e2e::built_fixture("pid_tiny_llm") : llm,
            "--vae",
            e2e::built_fixture("flux_ae")};
}

std::string tokenizer_json() {
    return suite_dir() + "/gemma2_tokenizer.json";
}

// The synthetic Gemma tokenizer.json as llama.cpp's convert writes a SentencePiece vocabulary
// into a GGUF: every id's token (the added ones type 3, control; <0xNN> type 6, byte; the rest
// type 1) with a score that ranks the merges as the json does (the token a merge makes scores
// minus its rank; others lower still), then `unused` "[PADn]" rows of type 5 (llama.cpp pads
// to the embedding rows), and `model` as tokenizer.ggml.model.
ggdiff::e2e::GgufKvs sentencepiece_kvs(const std::string& model, size_t unused) {
    std::ifstream in(tokenizer_json());
    const nlohmann::json j = nlohmann::json::parse(in);
    std::map<int, std::string> by_id;
    for (auto it = j["model"]["vocab"].begin(); it != j["model"]["vocab"].end(); ++it) {
        by_id[it.value().get<int>()] = it.key();
    }
    std::set<int> added;
    for (const auto& a : j["added_tokens"]) added.insert(a["id"].get<int>());
    std::map<std::string, float> merged;
    float rank = 0.0f;
    for (const auto& m : j["model"]["merges"]) {
        std::string pair = m.is_string() ? m.get<std::string>()
                                         : m[0].get<std::string>() + " " + m[1].get<std::string>();
        pair.erase(pair.find(' '), 1);
        merged.emplace(pair, -rank);
        rank += 1.0f;
    }
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
    for (const auto& [id, t] : by_id) {
        EXPECT_EQ(static_cast<size_t>(id), tokens.size()) << "the ids have a gap";
        tokens.push_back(t);
        auto m = merged.find(t);
        scores.push_back(m != merged.end() ? m->second : -1000.0f - static_cast<float>(id));
        const bool byte = t.size() == 6 && t.rfind("<0x", 0) == 0 && t.back() == '>';
        types.push_back(added.count(id) ? 3 : byte ? 6 : 1);
    }
    for (size_t i = 0; i < unused; ++i) {
        tokens.push_back("[PAD" + std::to_string(tokens.size()) + "]");
        scores.push_back(0.0f);
        types.push_back(5);
    }
    ggdiff::e2e::GgufKvs kvs;
    kvs.str("tokenizer.ggml.model", model);
    kvs.strings("tokenizer.ggml.tokens", tokens);
    kvs.f32s("tokenizer.ggml.scores", scores);
    kvs.i32s("tokenizer.ggml.token_type", types);
    kvs.pad_to_32();
    return kvs;
}

class PidPartFiles : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const std::string& f :
             {e2e::binary_path(), dit_file(), e2e::built_fixture("pid_tiny_llm"),
              e2e::built_fixture("flux_ae"), golden()}) {
            ASSERT_TRUE(fs::is_regular_file(f))
                << "missing " << f << " (run through ctest: its fixture tests make the files)";
        }
        dir_ = e2e::fresh_dir();
    }

    // The golden case's arguments (with `extra`, whose flags replace the case's) on `model`.
    RunResult generate(const std::vector<std::string>& model, const std::string& out,
                       const std::vector<std::string>& extra = {}) const {
        std::vector<std::string> args = e2e::suite_case_args(suite_dir(), kCase);
        for (size_t i = 0; i + 1 < extra.size(); i += 2) {
            args = e2e::with_flag_value(args, extra[i], extra[i + 1]);
            if (!extra[i + 1].empty() &&
                std::find(args.begin(), args.end(), extra[i]) == args.end()) {
                args.insert(args.end(), {extra[i], extra[i + 1]});
            }
        }
        args.insert(args.begin(), model.begin(), model.end());
        args.insert(args.end(), {"-o", out});
        return e2e::run_ggdiff(args, dir_, 600);
    }

    // A request that must fail before any compute, with `message` in its error.
    void expect_refused(std::vector<std::string> model, const std::string& message) const {
        model.insert(model.end(), {"-r", suite_dir() + "/ref_stripes.png", "--llm-tokenizer",
                                   suite_dir() + "/gemma2_tokenizer.json"});
        const std::string out = dir_ + "/refused.png";
        RunResult r = e2e::run_refused(model, out, dir_);
        EXPECT_TRUE(r.failed_cleanly()) << r.describe();
        EXPECT_TRUE(contains(r.err, message)) << message << "\n" << r.describe();
        EXPECT_FALSE(fs::exists(out));
    }

    std::string dir_;
};

// The DiT given bare with -m next to --llm and --vae is the same model as --diffusion-model.
TEST_F(PidPartFiles, DitAsMainModelGivesTheGolden) {
    std::vector<std::string> model = split_args();
    model[0] = "-m";
    const std::string out = dir_ + "/m.png";
    RunResult r = generate(model, out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    e2e::expect_images_near(out, golden(), e2e::suite_tolerance(suite_dir()), "-m DiT");
}

// The DiT and the LLM converted to q8_0 GGUFs: -M info still says PiD (and q8_0), the sparse
// DiT's zero blocks stay holes on disk, the image stays near the golden (the goldens run
// --type f32) and its parameters name the DiT; every part converted on load with --type q8_0
// stays near it as well.
TEST_F(PidPartFiles, GgufPartsAndTypeQ8) {
    const std::string dit = dir_ + "/pid_tiny_dit_q8_0.gguf";
    RunResult c = e2e::convert_part("--diffusion-model", dit_file(), "q8_0", dit, dir_);
    ASSERT_TRUE(c.succeeded()) << c.describe();
    const std::string llm = dir_ + "/gemma_q8_0.gguf";
    RunResult c2 =
        e2e::convert_part("--llm", e2e::built_fixture("pid_tiny_llm"), "q8_0", llm, dir_);
    ASSERT_TRUE(c2.succeeded()) << c2.describe();
    struct stat st;
    ASSERT_EQ(::stat(dit.c_str(), &st), 0);
    EXPECT_LT(static_cast<double>(st.st_blocks) * 512, 0.5 * static_cast<double>(st.st_size))
        << "the converted DiT's zero blocks should be holes";

    RunResult info = e2e::run_ggdiff({"-M", "info", "--diffusion-model", dit}, dir_, 60);
    ASSERT_TRUE(info.succeeded()) << info.describe();
    EXPECT_TRUE(contains(info.out, "family:      pid (PiD)")) << info.describe();
    EXPECT_TRUE(contains(info.out, "q8_0=")) << info.describe();

    const std::string out = dir_ + "/gguf.png";
    RunResult r = generate(split_args(dit, llm), out);
    ASSERT_TRUE(r.succeeded()) << r.describe();
    e2e::expect_images_near(out, golden(), 3.0, "q8_0 GGUF DiT and LLM against the golden");
    auto params = ggdiff::read_image_parameters(out);
    ASSERT_TRUE(params.ok());
    EXPECT_TRUE(contains(*params, "Model: pid_tiny_dit_q8_0")) << *params;

    const std::string out2 = dir_ + "/type.png";
    RunResult t = generate(split_args(), out2, {"--type", "q8_0"});
    ASSERT_TRUE(t.succeeded()) << t.describe();
    e2e::expect_images_near(out2, golden(), 3.0, "--type q8_0 against the golden");
}

// What a newcomer gets wrong, each refused before any compute saying what to pass: no --llm, a
// --llm that is not there, a Qwen3 as --llm, Wan's VAE as --vae, a DiT file that is not there,
// a --prediction.
TEST_F(PidPartFiles, ClearErrorsForMissingOrWrongParts) {
    expect_refused(e2e::with_flag_value(split_args(), "--llm", ""),
                   "PiD needs its Gemma 2 2B text encoder: pass --llm");
    expect_refused(e2e::with_flag_value(split_args(), "--llm", dir_ + "/nope.safetensors"),
                   "--llm: " + dir_ + "/nope.safetensors: cannot open");
    ASSERT_TRUE(fs::is_regular_file(e2e::built_fixture("krea2_tiny_llm")));
    expect_refused(
        e2e::with_flag_value(split_args(), "--llm", e2e::built_fixture("krea2_tiny_llm")),
        "this is not a Gemma 2 model");
    ASSERT_TRUE(fs::is_regular_file(e2e::built_fixture("qwen_vae")));
    expect_refused(e2e::with_flag_value(split_args(), "--vae", e2e::built_fixture("qwen_vae")),
                   "--vae: PiD takes the VAE its checkpoint was trained on (FLUX.1's "
                   "ae.safetensors, the SD3 VAE or flux2-vae.safetensors)");
    expect_refused(e2e::with_flag_value(split_args(), "--diffusion-model", dir_ + "/nope.gguf"),
                   dir_ + "/nope.gguf");
    std::vector<std::string> pred = split_args();
    pred.insert(pred.end(), {"--prediction", "eps"});
    expect_refused(pred, "--prediction eps does not apply to PiD models (they predict sd3_flow)");
}

// The vocabulary read from tokenizer.ggml.* tokenizes as the tokenizer.json it was written from
// (the specials and the <0xNN> byte fallback included, the unused [PAD] rows left out); a
// byte-level BPE ("gpt2") GGUF vocabulary, one without scores and a GGUF without any are
// refused saying so.
TEST_F(PidPartFiles, GgufVocabularyTokenizesAsTheTokenizerJson) {
    const std::string gguf = dir_ + "/vocab.gguf";
    ggdiff::e2e::write_header_only_gguf(gguf, sentencepiece_kvs("llama", 3));
    auto from_gguf = ggdiff::models::read_gemma_gguf_vocab(gguf);
    ASSERT_TRUE(from_gguf.ok()) << from_gguf.status().message();
    auto from_json = ggdiff::GemmaTokenizer::from_path(tokenizer_json());
    ASSERT_TRUE(from_json.ok()) << from_json.status().message();
    EXPECT_EQ(from_gguf->vocab_size(), from_json->vocab_size());
    EXPECT_EQ(from_gguf->bos_id(), from_json->bos_id());
    EXPECT_EQ(from_gguf->pad_id(), from_json->pad_id());
    for (const char* text :
         {"<bos> a lovely cat", " a castle on a hill at sunset", "blurry, dark <start_of_turn>",
          " a green tree in a field\n\nof the prompt image", "zebra 42 \xC3\xA9t\xC3\xA9!"}) {
        EXPECT_EQ(from_gguf->encode(text), from_json->encode(text)) << text;
    }
    EXPECT_EQ(from_gguf->token_to_id("[PAD367]"), -1);

    const std::string gpt2 = dir_ + "/gpt2.gguf";
    ggdiff::e2e::write_header_only_gguf(gpt2, sentencepiece_kvs("gpt2", 0));
    auto refused = ggdiff::models::read_gemma_gguf_vocab(gpt2);
    ASSERT_FALSE(refused.ok());
    EXPECT_TRUE(contains(refused.status().message(), "tokenizer.ggml.model is 'gpt2', not 'llama'"))
        << refused.status().message();
    ggdiff::e2e::GgufKvs no_scores;
    no_scores.str("tokenizer.ggml.model", "llama");
    no_scores.strings("tokenizer.ggml.tokens", {"<pad>", "<eos>", "<bos>"});
    const std::string unscored = dir_ + "/unscored.gguf";
    ggdiff::e2e::write_header_only_gguf(unscored, no_scores);
    auto u = ggdiff::models::read_gemma_gguf_vocab(unscored);
    ASSERT_FALSE(u.ok());
    EXPECT_TRUE(contains(u.status().message(), "has no tokenizer.ggml.scores"))
        << u.status().message();
    auto none = ggdiff::models::read_gemma_gguf_vocab(dit_file());
    ASSERT_FALSE(none.ok());
    EXPECT_TRUE(contains(none.status().message(), "holds no tokenizer.ggml.tokens"))
        << none.status().message();
}

// A Gemma GGUF that carries its vocabulary needs no --llm-tokenizer: the image is the one the
// tokenizer.json gives. Without a tokenizer.json or a vocabulary in the GGUF, the error names
// the folders it looked in and the GGUF.
TEST_F(PidPartFiles, TokenizerFromTheGgufGivesTheSameImage) {
    const std::string plain = dir_ + "/gemma.gguf";
    RunResult c =
        e2e::convert_part("--llm", e2e::built_fixture("pid_tiny_llm"), "f32", plain, dir_);
    ASSERT_TRUE(c.succeeded()) << c.describe();
    fs::create_directories(dir_ + "/solo");
    const std::string gguf = dir_ + "/solo/gemma_with_vocab.gguf";
    ggdiff::e2e::add_gguf_kvs(plain, sentencepiece_kvs("llama", 3), gguf);

    const std::string own = dir_ + "/own.png";
    RunResult r = generate(split_args("", gguf), own, {"--llm-tokenizer", ""});
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.out + r.err, "Gemma tokenizer: the vocabulary in " + gguf))
        << r.describe();
    const std::string by_json = dir_ + "/json.png";
    RunResult j = generate(split_args("", gguf), by_json);
    ASSERT_TRUE(j.succeeded()) << j.describe();
    const e2e::ImageDiff d = e2e::compare_images(own, by_json);
    ASSERT_TRUE(d.ok) << d.error;
    std::printf("GGUF vocabulary against tokenizer.json: mean_abs_diff %.3f max %d\n", d.mean_abs,
                d.max_abs);
    EXPECT_EQ(d.max_abs, 0);
    e2e::expect_images_near(own, golden(), e2e::suite_tolerance(suite_dir()),
                            "the GGUF's own vocabulary against the golden");

    // A GGUF --llm-tokenizer is read the same way.
    const std::string flag = dir_ + "/flag.png";
    RunResult f = generate(split_args(), flag, {"--llm-tokenizer", gguf});
    ASSERT_TRUE(f.succeeded()) << f.describe();
    EXPECT_EQ(e2e::compare_images(flag, by_json).max_abs, 0);

    // The plain GGUF alone in a folder: nothing to read.
    fs::create_directories(dir_ + "/bare");
    const std::string bare = dir_ + "/bare/gemma.gguf";
    fs::rename(plain, bare);
    std::vector<std::string> model = split_args("", bare);
    model.insert(model.end(), {"-r", suite_dir() + "/ref_stripes.png"});
    RunResult none = e2e::run_refused(model, dir_ + "/none.png", dir_);
    EXPECT_TRUE(none.failed_cleanly()) << none.describe();
    for (const std::string& part :
         {std::string("no tokenizer found for the Gemma text encoder"),
          "looked in " + dir_ + "/bare, " + dir_ + "/bare/tokenizer",
          "nor in the --llm file: " + bare + ": the GGUF holds no tokenizer.ggml.tokens"}) {
        EXPECT_TRUE(contains(none.err, part)) << part << "\n" << none.describe();
    }
}

}  // namespace
