// LoRA on the Anima tiny fixture, end to end (the anima_tiny set of tests/golden, case
// anima_euler): the same modules of the DiT blocks, the final layer and the LLM adapter as
// ComfyUI / PEFT names ("diffusion_model.blocks.0.self_attn.q_proj.lora_A.weight", with and
// without the checkpoint's "net." wrapper) and as kohya names ("lora_unet_blocks_0_self_attn_
// q_proj") give the same image, which differs from the image without a LoRA, and no module
// goes unmatched.
#include <gtest/gtest.h>

#include <algorithm>

#include "../golden/e2e_support.h"
#include "../io/io_test_util.h"

namespace ggdiff::e2e {
namespace {

using ggdiff::testing::FakeTensor;
using ggdiff::testing::to_bytes;

constexpr int64_t kRank = 4;

struct Pair {
    std::vector<float> down, up;
    int64_t in = 0, out = 0;
};
Pair pair(int64_t in, int64_t out, uint32_t seed) {
    Pair p{ggdiff::testing::pattern(kRank * in, seed),
           ggdiff::testing::pattern(out * kRank, seed + 7), in, out};
    for (float& v : p.down) v *= 0.25f;
    for (float& v : p.up) v *= 0.25f;
    return p;
}

std::vector<std::string> model_args() {
    return {"--diffusion-model",
            built_fixture("anima_tiny_dit"),
            "--llm",
            built_fixture("anima_tiny_llm"),
            "--vae",
            built_fixture("qwen_vae"),
            "--llm-tokenizer",
            shared_dir() + "/data/qwen2_synthetic",
            "--t5xxl-tokenizer",
            shared_dir() + "/data/t5_synthetic"};
}

RunResult generate(const std::string& dir, const std::string& name) {
    std::vector<std::string> args = model_args();
    args.insert(args.end(), {"--lora-model-dir", dir, "-v", "-o",
                             dir + "/" + (name.empty() ? "plain" : name) + ".png"});
    std::vector<std::string> req = suite_case_args(repo_suite_dir("anima_tiny"), "anima_euler");
    for (size_t j = 0; j + 1 < req.size(); ++j) {
        if (req[j] == "-p" && !name.empty()) req[j + 1] += "<lora:" + name + ":1>";
    }
    args.insert(args.end(), req.begin(), req.end());
    return run_ggdiff(args, dir, 900);
}

TEST(LoraAnima, KohyaAndComfyFormsGiveTheSameImage) {
    const std::vector<std::string> model = model_args();
    for (size_t i = 1; i < model.size(); i += 2) {
        ASSERT_TRUE(std::filesystem::exists(model[i]))
            << "missing " << model[i] << " (run through ctest)";
    }
    const std::string dir = fresh_dir();
    constexpr int64_t w = 2048, mlp = 8192, a = 1024;  // anima_tiny_dit's widths
    // Module paths relative to the checkpoint's "net.", and whether the ComfyUI form keeps it.
    struct Module {
        const char* path;
        Pair p;
        bool net;
    };
    const std::vector<Module> modules = {
        {"blocks.0.self_attn.q_proj", pair(w, w, 21), false},
        {"blocks.0.cross_attn.k_proj", pair(a, w, 22), true},
        {"blocks.0.mlp.layer2", pair(mlp, w, 23), false},
        {"blocks.0.adaln_modulation_cross_attn.2", pair(256, 3 * w, 24), false},
        {"final_layer.linear", pair(w, 64, 25), true},
        {"llm_adapter.blocks.0.cross_attn.v_proj", pair(a, a, 26), false},
    };
    std::vector<FakeTensor> comfy, kohya;
    for (const Module& m : modules) {
        const std::string c = std::string("diffusion_model.") + (m.net ? "net." : "") + m.path;
        comfy.push_back({c + ".lora_A.weight", "F32", {kRank, m.p.in}, to_bytes(m.p.down)});
        comfy.push_back({c + ".lora_B.weight", "F32", {m.p.out, kRank}, to_bytes(m.p.up)});
        std::string k = std::string("lora_unet_") + m.path;
        std::replace(k.begin(), k.end(), '.', '_');
        kohya.push_back({k + ".lora_down.weight", "F32", {kRank, m.p.in}, to_bytes(m.p.down)});
        kohya.push_back({k + ".lora_up.weight", "F32", {m.p.out, kRank}, to_bytes(m.p.up)});
        kohya.push_back({k + ".alpha", "F32", {}, to_bytes(std::vector<float>{float(kRank)})});
    }
    ggdiff::testing::write_safetensors(dir + "/comfy.safetensors", comfy);
    // The adapter's module alone (it runs with the text encoder, before sampling).
    std::vector<FakeTensor> adapter(comfy.end() - 2, comfy.end());
    ggdiff::testing::write_safetensors(dir + "/adapter.safetensors", adapter);
    ggdiff::testing::write_safetensors(dir + "/kohya.safetensors", kohya);

    for (const std::string name : {"", "comfy", "kohya", "adapter"}) {
        const RunResult r = generate(dir, name);
        ASSERT_TRUE(r.succeeded()) << r.describe();
        if (name.empty()) continue;
        EXPECT_FALSE(contains(r.err, "match no weight")) << r.err;
        EXPECT_TRUE(contains(r.err, "LoRA: 1 file(s)")) << r.err;
    }
    const ImageDiff same = compare_images(dir + "/kohya.png", dir + "/comfy.png");
    ASSERT_TRUE(same.ok) << same.error;
    EXPECT_LE(same.mean_abs, 0.5) << "max " << same.max_abs;
    const ImageDiff moved = compare_images(dir + "/comfy.png", dir + "/plain.png");
    ASSERT_TRUE(moved.ok) << moved.error;
    EXPECT_GT(moved.mean_abs, 2.0) << "the LoRA changed nothing";
    const ImageDiff text = compare_images(dir + "/adapter.png", dir + "/plain.png");
    ASSERT_TRUE(text.ok) << text.error;
    EXPECT_GT(text.mean_abs, 1.0) << "the LLM adapter's LoRA changed nothing";
    std::printf("kohya vs comfy %.3f, comfy vs no LoRA %.3f, adapter alone vs no LoRA %.3f\n",
                same.mean_abs, moved.mean_abs, text.mean_abs);
}

}  // namespace
}  // namespace ggdiff::e2e
