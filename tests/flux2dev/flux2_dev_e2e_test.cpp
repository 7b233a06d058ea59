// FLUX.2 dev end to end through the CLI, on a tiny stand-in: the flux2_tiny DiT's layout with a
// guidance embedding (guidance_in) and a text input 3 x 64 wide, the tiny random Mistral of
// mistral_text_test.cpp (30 layers, 64 wide, its synthetic tekken.json inside the file, as
// ComfyUI's single-file encoders carry it) and the FLUX.2 VAE fixture. The family is FLUX.2
// dev (-M info, the log), the image depends on the prompt and on --guidance, and a reference
// image moves it. Nothing here is compared with the reference engine: its Mistral tokenizer
// is not in this build, and the weights are random (see docs/flux2.md).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "../golden/flux2_e2e.h"
#include "../io/io_test_util.h"
#include "../support/mistral_synthetic.h"

namespace {

namespace fs = std::filesystem;
namespace e2e = ggdiff::e2e;
namespace flux2 = ggdiff::e2e::flux2;
using ggdiff::testing::FakeTensor;

constexpr int64_t kMistralHidden = 64, kHeads = 2, kKv = 1, kHeadDim = 128, kInter = 96;
constexpr int64_t kVocab = ggdiff::test::kSyntheticSpecials + 256 + 25;

std::vector<float> values(const std::vector<int64_t>& shape, uint32_t seed, bool embed = false) {
    std::vector<float> v = ggdiff::testing::pattern(ggdiff::testing::numel(shape), seed);
    const bool norm = shape.size() == 1;
    const double scale = embed ? 1.0 : 1.0 / std::sqrt(static_cast<double>(shape.back()));
    for (float& x : v) x = norm ? 1.0f + 0.1f * x : static_cast<float>(x * scale);
    return v;
}

// The tiny Mistral under HF names with its tekken.json as "tekken_model".
std::string write_mistral(const std::string& dir) {
    std::vector<FakeTensor> t;
    uint32_t seed = 1;
    auto add = [&](const std::string& name, std::vector<int64_t> shape, bool embed = false) {
        t.push_back({"model." + name, "F32", shape,
                     ggdiff::testing::to_bytes(values(shape, ++seed, embed))});
    };
    add("embed_tokens.weight", {kVocab, kMistralHidden}, true);
    for (int i = 0; i < 30; ++i) {
        const std::string p = "layers." + std::to_string(i) + ".";
        add(p + "input_layernorm.weight", {kMistralHidden});
        add(p + "self_attn.q_proj.weight", {kHeads * kHeadDim, kMistralHidden});
        add(p + "self_attn.k_proj.weight", {kKv * kHeadDim, kMistralHidden});
        add(p + "self_attn.v_proj.weight", {kKv * kHeadDim, kMistralHidden});
        add(p + "self_attn.o_proj.weight", {kMistralHidden, kHeads * kHeadDim});
        add(p + "post_attention_layernorm.weight", {kMistralHidden});
        add(p + "mlp.gate_proj.weight", {kInter, kMistralHidden});
        add(p + "mlp.up_proj.weight", {kInter, kMistralHidden});
        add(p + "mlp.down_proj.weight", {kMistralHidden, kInter});
    }
    add("norm.weight", {kMistralHidden});
    const std::string tekken = ggdiff::test::synthetic_tekken_json();
    t.push_back({"tekken_model", "U8", {static_cast<int64_t>(tekken.size())}, tekken});
    const std::string path = dir + "/mistral_tiny.safetensors";
    ggdiff::testing::write_safetensors(path, t);
    return path;
}

// The flux2_tiny DiT's tensor list with txt_in taking 3 x 64 and a guidance embedding.
std::string write_dev_dit(const std::string& dir) {
    std::ifstream in(std::string(GGDIFF_SHARED_DIR) + "/fixtures/flux2_tiny_dit.tensors");
    std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream ls(line);
        std::string name, dims;
        ls >> name >> dims;
        std::vector<int64_t> shape;
        std::istringstream ds(dims);
        for (std::string d; std::getline(ds, d, ',');) shape.push_back(std::stoll(d));
        if (name == "txt_in.weight") shape[1] = 3 * kMistralHidden;
        shapes.push_back({name, shape});
    }
    const int64_t hidden = 256;
    shapes.push_back({"guidance_in.in_layer.weight", {hidden, 256}});
    shapes.push_back({"guidance_in.out_layer.weight", {hidden, hidden}});
    std::vector<FakeTensor> t;
    uint32_t seed = 100;
    for (const auto& [name, shape] : shapes) {
        t.push_back({name, "F32", shape, ggdiff::testing::to_bytes(values(shape, ++seed))});
    }
    const std::string path = dir + "/flux2_dev_tiny.safetensors";
    ggdiff::testing::write_safetensors(path, t);
    return path;
}

class Flux2DevCli : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(flux2::prerequisites_ok());
        dir_ = e2e::fresh_dir();
        model_ = {"--diffusion-model", write_dev_dit(dir_), "--llm", write_mistral(dir_), "--vae",
                  flux2::vae()};
    }

    e2e::RunResult run(const std::vector<std::string>& extra, const std::string& out) {
        std::vector<std::string> args = model_;
        args.insert(args.end(), {"-W", "64", "-H", "64", "--steps", "2", "--cfg-scale", "1", "-s",
                                 "5", "-o", dir_ + "/" + out});
        args.insert(args.end(), extra.begin(), extra.end());
        return e2e::run_ggdiff(args, dir_, 600);
    }

    double diff(const std::string& a, const std::string& b) {
        const e2e::ImageDiff d = e2e::compare_images(dir_ + "/" + a, dir_ + "/" + b);
        EXPECT_TRUE(d.ok) << d.error;
        return d.mean_abs;
    }

    std::string dir_;
    std::vector<std::string> model_;
};

TEST_F(Flux2DevCli, RunsAsFlux2DevWithItsGuidance) {
    std::vector<std::string> info = {"-M", "info"};
    info.insert(info.end(), model_.begin(), model_.end());
    e2e::RunResult i = e2e::run_ggdiff(info, dir_, 60);
    ASSERT_TRUE(i.succeeded()) << i.describe();
    EXPECT_TRUE(e2e::contains(i.out, "family:      flux2 (FLUX.2)")) << i.describe();

    e2e::RunResult a = run({"-p", "a red apple"}, "a.png");
    ASSERT_TRUE(a.succeeded()) << a.describe();
    EXPECT_TRUE(e2e::contains(a.err, "FLUX.2 dev")) << a.describe();
    EXPECT_TRUE(e2e::contains(a.err, "Mistral 64 wide, 30 layers")) << a.describe();
    e2e::RunResult b = run({"-p", "a blue boat on a lake"}, "b.png");
    ASSERT_TRUE(b.succeeded()) << b.describe();
    e2e::RunResult g = run({"-p", "a red apple", "--guidance", "8"}, "g.png");
    ASSERT_TRUE(g.succeeded()) << g.describe();
    e2e::RunResult r = run({"-p", "a red apple", "-r", flux2::ref_image()}, "r.png");
    ASSERT_TRUE(r.succeeded()) << r.describe();
    // Random weights move little: any change counts (the same request gives 0).
    EXPECT_GT(diff("a.png", "b.png"), 0.02) << "the prompt changed nothing";
    EXPECT_GT(diff("a.png", "g.png"), 0.02) << "--guidance changed nothing";
    EXPECT_GT(diff("a.png", "r.png"), 0.02) << "the reference image changed nothing";
}

}  // namespace
