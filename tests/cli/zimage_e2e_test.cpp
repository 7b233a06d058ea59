// Z-Image through the CLI beyond the golden cases: the family defaults (euler, cfg 1 with no
// unconditional pass) reproduce the euler reference; non-square sizes that are not
// multiples of the patch; img2img; real CFG with a negative prompt when --cfg-scale > 1;
// quantized weights (--type, and GGUF parts made by -M convert); and wrong or missing parts
// failing with a clear error before any weight is read.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "../golden/zimage_e2e.h"
#include "../io/io_test_util.h"
#include "io/tensor_index.h"

namespace ggdiff::e2e {
namespace {

namespace fs = std::filesystem;

// With -v every module logs "<label>: N weights, X MiB, on ..." when it is declared; no
// such line means no weight was read.
bool read_weights(const RunResult& r) {
    return contains(r.err + r.out, " weights, ");
}

size_t count(const std::string& haystack, const std::string& needle) {
    size_t n = 0;
    for (size_t at = haystack.find(needle); at != std::string::npos;
         at = haystack.find(needle, at + needle.size())) {
        ++n;
    }
    return n;
}

double pixel_stddev(const Image& img) {
    double sum = 0.0, sq = 0.0;
    for (uint8_t v : img.pixels) {
        sum += v;
        sq += static_cast<double>(v) * v;
    }
    const double n = static_cast<double>(img.pixels.size());
    return std::sqrt(std::max(0.0, sq / n - (sum / n) * (sum / n)));
}

class ZImageCli : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(fs::is_regular_file(binary_path()));
        ASSERT_TRUE(fs::is_regular_file(zimage_fixture("zimage_tiny_dit")))
            << "run through ctest: the fixture tests make the Z-Image fixtures";
        dir_ = fresh_dir();
    }

    // Runs a Z-Image request (model arguments first) writing `out` in the test's folder.
    RunResult run(const std::vector<std::string>& request, const std::string& out = "out.png",
                  std::vector<std::string> model = zimage_model_args(), int timeout = 300) {
        std::vector<std::string> args = std::move(model);
        args.insert(args.end(), request.begin(), request.end());
        args.insert(args.end(), {"-v", "-o", dir_ + "/" + out});
        return run_ggdiff(args, dir_, timeout);
    }

    GenerationInfo info_of(const std::string& out) {
        auto text = read_image_parameters(dir_ + "/" + out);
        EXPECT_TRUE(text.ok()) << text.status().message();
        if (!text.ok()) return {};
        auto info = parse_infotext(*text);
        EXPECT_TRUE(info.ok()) << *text;
        return info.ok() ? *info : GenerationInfo{};
    }

    ImageDiff diff(const std::string& a, const std::string& b) {
        return compare_images(fs::path(a).is_absolute() ? a : dir_ + "/" + a,
                              fs::path(b).is_absolute() ? b : dir_ + "/" + b);
    }

    std::string dir_;
};

// No --sampling-method and no --cfg-scale: euler and cfg 1, which is the zimage_euler golden
// case; the text model runs once (no negative prompt is encoded) and the DiT once per step.
TEST_F(ZImageCli, DefaultsAreEulerWithoutUnconditionalPass) {
    ScopedEnv profile("GGDIFF_PROFILE", "1");
    RunResult r = run(zimage_euler_args());
    ASSERT_TRUE(r.succeeded()) << r.describe();
    const ImageDiff d = diff("out.png", zimage_golden_dir() + "/zimage_euler.png");
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_LE(d.mean_abs, 1.5);
    const GenerationInfo info = info_of("out.png");
    EXPECT_EQ(info.sampler, "Euler");
    EXPECT_FLOAT_EQ(info.cfg_scale, 1.0f);
    EXPECT_EQ(info.width, 64);
    EXPECT_EQ(info.steps, 4);
    const std::string log = r.err + r.out;
    EXPECT_EQ(count(log, "profile LLM:"), 1u) << log;
    EXPECT_EQ(count(log, "profile DiT:"), 4u) << log;
}

// At cfg 1 the negative prompt is never encoded: two different ones give the same pixels.
// Above 1 it is (a second text pass, twice the DiT work), it changes the image, and the
// metadata carries it.
TEST_F(ZImageCli, CfgWithNegativePrompt) {
    std::vector<std::string> base = zimage_euler_args();
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> a = base;
        a.insert(a.end(), extra.begin(), extra.end());
        return a;
    };
    ASSERT_TRUE(run(with({"--cfg-scale", "1", "-n", "blurry"}), "cfg1_a.png").succeeded());
    ASSERT_TRUE(run(with({"--cfg-scale", "1", "-n", "a red square"}), "cfg1_b.png").succeeded());
    const ImageDiff same = diff("cfg1_a.png", "cfg1_b.png");
    ASSERT_TRUE(same.ok) << same.error;
    EXPECT_EQ(same.max_abs, 0);

    RunResult a;
    {
        ScopedEnv profile("GGDIFF_PROFILE", "1");
        a = run(with({"--cfg-scale", "3", "-n", "blurry, low quality"}), "cfg3_a.png");
    }
    ASSERT_TRUE(a.succeeded()) << a.describe();
    const std::string log = a.err + a.out;
    EXPECT_EQ(count(log, "profile LLM:"), 2u) << log;
    RunResult b = run(with({"--cfg-scale", "3", "-n", "a red square"}), "cfg3_b.png");
    ASSERT_TRUE(b.succeeded()) << b.describe();

    const ImageDiff negatives = diff("cfg3_a.png", "cfg3_b.png");
    ASSERT_TRUE(negatives.ok) << negatives.error;
    EXPECT_GT(negatives.mean_abs, 1.0) << "the negative prompt must reach the image";
    const ImageDiff vs_cfg1 = diff("cfg3_a.png", "cfg1_a.png");
    ASSERT_TRUE(vs_cfg1.ok) << vs_cfg1.error;
    EXPECT_GT(vs_cfg1.mean_abs, 1.0);

    const GenerationInfo info = info_of("cfg3_a.png");
    EXPECT_FLOAT_EQ(info.cfg_scale, 3.0f);
    EXPECT_EQ(info.negative_prompt, "blurry, low quality");
    EXPECT_EQ(info.prompt, "a photograph of an astronaut riding a horse");
}

// Sizes whose latent is not a multiple of the 2x2 patch (72x104 -> 9x13) or not square: the
// image has exactly the requested size, is not flat, and its metadata says so.
TEST_F(ZImageCli, NonSquareSizes) {
    const std::pair<int, int> sizes[] = {{96, 64}, {72, 104}};
    for (const auto& [w, h] : sizes) {
        SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h));
        const std::string out = "size_" + std::to_string(w) + "x" + std::to_string(h) + ".png";
        RunResult r = run({"-p", "a castle on a hill at sunset", "-W", std::to_string(w), "-H",
                           std::to_string(h), "--steps", "3", "-s", "3"},
                          out);
        ASSERT_TRUE(r.succeeded()) << r.describe();
        auto img = read_image(dir_ + "/" + out);
        ASSERT_TRUE(img.ok()) << img.status().message();
        EXPECT_EQ(img->width, w);
        EXPECT_EQ(img->height, h);
        EXPECT_GT(pixel_stddev(*img), 10.0);
        const GenerationInfo info = info_of(out);
        EXPECT_EQ(info.width, w);
        EXPECT_EQ(info.height, h);
    }
}

// img2img from the euler reference. With the random-weight fixtures the VAE does not give the
// init image back, so the checks are relative: the init's latent shapes the result (two
// strengths that keep it agree far better with each other than with txt2img), strength 1
// starts from pure noise (exactly the txt2img image), and the metadata carries the strength.
TEST_F(ZImageCli, Img2Img) {
    const std::string init = zimage_golden_dir() + "/zimage_euler.png";
    const std::vector<std::string> request = {"-p", "two cats sleeping", "-W", "64", "-H",
                                              "64", "--steps",           "4",  "-s", "42"};
    ASSERT_TRUE(run(request, "txt2img.png").succeeded());
    for (const char* strength : {"0.3", "0.6", "1.0"}) {
        std::vector<std::string> i2i = request;
        i2i.insert(i2i.end(), {"-i", init, "--strength", strength});
        RunResult r = run(i2i, std::string("img2img_") + strength + ".png");
        ASSERT_TRUE(r.succeeded()) << r.describe();
    }
    const ImageDiff kept = diff("img2img_0.3.png", "img2img_0.6.png");
    const ImageDiff vs_txt = diff("img2img_0.3.png", "txt2img.png");
    const ImageDiff full = diff("img2img_1.0.png", "txt2img.png");
    ASSERT_TRUE(kept.ok && vs_txt.ok && full.ok) << kept.error << vs_txt.error << full.error;
    EXPECT_LT(kept.mean_abs, vs_txt.mean_abs * 0.5)
        << "0.3 vs 0.6: " << kept.mean_abs << ", 0.3 vs txt2img: " << vs_txt.mean_abs;
    EXPECT_EQ(full.max_abs, 0) << "strength 1 must start from pure noise";
    const GenerationInfo info = info_of("img2img_0.6.png");
    ASSERT_TRUE(info.denoising_strength.has_value());
    EXPECT_FLOAT_EQ(*info.denoising_strength, 0.6f);
    EXPECT_FALSE(info_of("txt2img.png").denoising_strength.has_value());
}

// A diffusers ZImagePipeline folder as -m: transformer/, text_encoder/ (a Qwen3 language
// model, told apart from FLUX's CLIP by its config.json), vae/ and tokenizer/ beside them.
TEST_F(ZImageCli, DiffusersFolderAsTheModel) {
    const fs::path pipe = fs::path(dir_) / "Z-Image-Turbo";
    for (const char* sub : {"transformer", "text_encoder", "vae", "tokenizer"})
        fs::create_directories(pipe / sub);
    std::ofstream(pipe / "model_index.json") << R"({"_class_name": "ZImagePipeline"})";
    std::ofstream(pipe / "text_encoder" / "config.json") << R"({"model_type": "qwen3"})";
    fs::create_symlink(zimage_fixture("zimage_tiny_dit"),
                       pipe / "transformer" / "diffusion_pytorch_model.safetensors");
    fs::create_symlink(zimage_fixture("zimage_tiny_llm"),
                       pipe / "text_encoder" / "model.safetensors");
    fs::create_symlink(zimage_fixture("flux_ae"),
                       pipe / "vae" / "diffusion_pytorch_model.safetensors");
    for (const auto& f : fs::directory_iterator(shared_dir() + "/data/qwen2_synthetic"))
        fs::copy_file(f.path(), pipe / "tokenizer" / f.path().filename());

    RunResult r = run(zimage_euler_args(), "folder.png", {"-m", pipe.string()});
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_TRUE(contains(r.err + r.out, "Z-Image")) << r.describe();
    const ImageDiff d = diff("folder.png", zimage_golden_dir() + "/zimage_euler.png");
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_LE(d.mean_abs, 1.5);
}

// Quantized weights: --type q8_0 converts at load; -M convert writes GGUF parts (q8_0 DiT,
// q8_0 text model) that load like the originals. Both stay near the f16 reference.
TEST_F(ZImageCli, QuantizedAndGgufParts) {
    std::vector<std::string> request = zimage_euler_args();
    request.insert(request.end(), {"--type", "q8_0"});
    RunResult q = run(request, "q8.png");
    ASSERT_TRUE(q.succeeded()) << q.describe();
    const std::string ref = zimage_golden_dir() + "/zimage_euler.png";
    const ImageDiff dq = diff("q8.png", ref);
    ASSERT_TRUE(dq.ok) << dq.error;
    EXPECT_LE(dq.mean_abs, 4.0);

    const std::string dit = dir_ + "/dit_q8.gguf", llm = dir_ + "/llm_q8.gguf";
    RunResult c1 = run_ggdiff({"-M", "convert", "--diffusion-model",
                               zimage_fixture("zimage_tiny_dit"), "--type", "q8_0", "-o", dit},
                              dir_, 300);
    ASSERT_TRUE(c1.succeeded()) << c1.describe();
    RunResult c2 = run_ggdiff(
        {"-M", "convert", "--llm", zimage_fixture("zimage_tiny_llm"), "--type", "q8_0", "-o", llm},
        dir_, 300);
    ASSERT_TRUE(c2.succeeded()) << c2.describe();
    RunResult g = run(zimage_euler_args(), "gguf.png",
                      {"--diffusion-model", dit, "--llm", llm, "--vae", zimage_fixture("flux_ae"),
                       "--llm-tokenizer", shared_dir() + "/data/qwen2_synthetic"});
    ASSERT_TRUE(g.succeeded()) << g.describe();
    EXPECT_TRUE(contains(g.err + g.out, "Z-Image")) << g.describe();
    const ImageDiff dg = diff("gguf.png", ref);
    ASSERT_TRUE(dg.ok) << dg.error;
    EXPECT_LE(dg.mean_abs, 4.0);
}

// The Qwen3 text model as users download it for llama.cpp: GGUF with llama.cpp's tensor
// names (token_embd, blk.N.attn_q, ...), here the fixture renamed and converted to q8_0.
TEST_F(ZImageCli, LlamaCppGgufTextModel) {
    TensorIndex hf;
    ASSERT_TRUE(hf.add(zimage_fixture("zimage_tiny_llm")).ok());
    auto llama_name = [](const std::string& n) -> std::string {
        const std::pair<const char*, const char*> layer[] = {
            {"input_layernorm.", "attn_norm."},    {"self_attn.q_norm.", "attn_q_norm."},
            {"self_attn.k_norm.", "attn_k_norm."}, {"self_attn.q_proj.", "attn_q."},
            {"self_attn.k_proj.", "attn_k."},      {"self_attn.v_proj.", "attn_v."},
            {"self_attn.o_proj.", "attn_output."}, {"post_attention_layernorm.", "ffn_norm."},
            {"mlp.gate_proj.", "ffn_gate."},       {"mlp.up_proj.", "ffn_up."},
            {"mlp.down_proj.", "ffn_down."}};
        if (n == "model.embed_tokens.weight") return "token_embd.weight";
        if (n == "model.norm.weight") return "output_norm.weight";
        const std::string p = "model.layers.";
        if (n.compare(0, p.size(), p) != 0) return n;
        const size_t dot = n.find('.', p.size());
        const std::string rest = n.substr(dot + 1);
        for (const auto& [from, to] : layer) {
            if (rest.compare(0, std::string(from).size(), from) == 0) {
                return "blk." + n.substr(p.size(), dot - p.size()) + "." + to +
                       rest.substr(std::string(from).size());
            }
        }
        return n;
    };
    std::vector<testing::FakeTensor> renamed;
    for (const TensorInfo& t : hf.tensors()) {
        ASSERT_EQ(t.dtype, DType::F16) << t.name;
        renamed.push_back({llama_name(t.name), "F16", t.shape,
                           std::string(reinterpret_cast<const char*>(hf.raw(t)), t.nbytes)});
        ASSERT_NE(renamed.back().name, t.name) << "no llama.cpp name for " << t.name;
    }
    const std::string st = dir_ + "/qwen3_llama_names.safetensors";
    testing::write_safetensors(st, renamed);
    renamed.clear();
    const std::string gguf = dir_ + "/qwen3_llama_names_q8.gguf";
    RunResult c = run_ggdiff({"-M", "convert", "-m", st, "--type", "q8_0", "-o", gguf}, dir_, 300);
    ASSERT_TRUE(c.succeeded()) << c.describe();

    RunResult g =
        run(zimage_euler_args(), "llama.png",
            {"--diffusion-model", zimage_fixture("zimage_tiny_dit"), "--llm", gguf, "--vae",
             zimage_fixture("flux_ae"), "--llm-tokenizer", shared_dir() + "/data/qwen2_synthetic"});
    ASSERT_TRUE(g.succeeded()) << g.describe();
    const ImageDiff d = diff("llama.png", zimage_golden_dir() + "/zimage_euler.png");
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_LE(d.mean_abs, 4.0);
}

TEST_F(ZImageCli, MissingTextEncoderIsAnError) {
    RunResult r = run({"-p", "x"}, "out.png",
                      {"--diffusion-model", zimage_fixture("zimage_tiny_dit"), "--vae",
                       zimage_fixture("flux_ae")});
    EXPECT_TRUE(r.failed_cleanly()) << r.describe();
    EXPECT_TRUE(contains(r.err, "--llm")) << r.describe();
    EXPECT_FALSE(read_weights(r)) << r.describe();
    EXPECT_FALSE(fs::exists(dir_ + "/out.png"));
}

TEST_F(ZImageCli, WrongPartsAreErrors) {
    // SD1's 4-channel VAE.
    RunResult vae = run({"-p", "x"}, "out.png",
                        {"--diffusion-model", zimage_fixture("zimage_tiny_dit"), "--llm",
                         zimage_fixture("zimage_tiny_llm"), "--vae", fixture_path(),
                         "--llm-tokenizer", shared_dir() + "/data/qwen2_synthetic"});
    EXPECT_TRUE(vae.failed_cleanly()) << vae.describe();
    EXPECT_TRUE(contains(vae.err, "16-channel")) << vae.describe();
    EXPECT_FALSE(read_weights(vae)) << vae.describe();

    // Qwen Image's text model (3584 wide) instead of Qwen3.
    RunResult llm = run({"-p", "x"}, "out.png",
                        {"--diffusion-model", zimage_fixture("zimage_tiny_dit"), "--llm",
                         zimage_fixture("qwen_tiny_llm"), "--vae", zimage_fixture("flux_ae"),
                         "--llm-tokenizer", shared_dir() + "/data/qwen2_synthetic"});
    EXPECT_TRUE(llm.failed_cleanly()) << llm.describe();
    EXPECT_TRUE(contains(llm.err, "cap_embedder")) << llm.describe();
    EXPECT_FALSE(read_weights(llm)) << llm.describe();
}

}  // namespace
}  // namespace ggdiff::e2e
