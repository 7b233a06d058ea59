// LoRA on ERNIE-Image, end to end on the ernie_tiny set's first case: the same modules (a
// layer's attention and MLP linears, the shared modulation, text_proj, final_linear) as kohya
// names them ("lora_unet_layers_0_self_attention_to_q"), as ComfyUI's PEFT names
// ("diffusion_model.layers.0...") and as diffusers / PEFT names ("transformer.layers.0...":
// the DiT's names are diffusers' own) give the same image, which differs from the image
// without a LoRA, and no module goes unmatched.
#include <gtest/gtest.h>

#include <algorithm>

#include "../golden/e2e_support.h"
#include "../io/io_test_util.h"

namespace ggdiff::e2e {
namespace {

using ggdiff::testing::FakeTensor;
using ggdiff::testing::to_bytes;

constexpr int64_t kRank = 4;

// One module's pair (down [kRank, in], up [out, kRank]), small so the model stays in range.
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

void peft(std::vector<FakeTensor>& t, const std::string& module, const Pair& p) {
    t.push_back({module + ".lora_A.weight", "F32", {kRank, p.in}, to_bytes(p.down)});
    t.push_back({module + ".lora_B.weight", "F32", {p.out, kRank}, to_bytes(p.up)});
}

void kohya(std::vector<FakeTensor>& t, const std::string& module, const Pair& p) {
    t.push_back({module + ".lora_down.weight", "F32", {kRank, p.in}, to_bytes(p.down)});
    t.push_back({module + ".lora_up.weight", "F32", {p.out, kRank}, to_bytes(p.up)});
    t.push_back({module + ".alpha", "F32", {}, to_bytes(std::vector<float>{float(kRank)})});
}

TEST(LoraErnie, KohyaComfyAndDiffusersFormsGiveTheSameImage) {
    const std::string suite = repo_suite_dir("ernie_tiny");
    const std::vector<std::string> model = {"--diffusion-model",
                                            built_fixture("ernie_tiny_dit"),
                                            "--llm",
                                            built_fixture("ernie_tiny_llm"),
                                            "--vae",
                                            built_fixture("flux2_vae")};
    for (size_t i = 1; i < model.size(); i += 2) {
        ASSERT_TRUE(fs::exists(model[i])) << "missing " << model[i] << " (run through ctest)";
    }
    const std::vector<std::string> request = suite_case_args(suite, "ernie_euler");
    ASSERT_FALSE(request.empty());
    const std::string dir = fresh_dir();
    constexpr int64_t h = 256, ffn = 512, text = 64, out = 128;  // ernie_tiny_dit
    const std::vector<std::pair<std::string, Pair>> modules = {
        {"layers.0.self_attention.to_q", pair(h, h, 31)},
        {"layers.1.self_attention.to_out.0", pair(h, h, 32)},
        {"layers.0.mlp.gate_proj", pair(h, ffn, 33)},
        {"layers.1.mlp.linear_fc2", pair(ffn, h, 34)},
        {"adaLN_modulation.1", pair(h, 6 * h, 35)},
        {"text_proj", pair(text, h, 36)},
        {"final_linear", pair(h, out, 37)}};
    std::vector<FakeTensor> comfy, diffusers, kohya_form;
    for (const auto& [name, p] : modules) {
        peft(comfy, "diffusion_model." + name, p);
        peft(diffusers, "transformer." + name, p);
        std::string k = "lora_unet_" + name;
        std::replace(k.begin(), k.end(), '.', '_');
        kohya(kohya_form, k, p);
    }
    ggdiff::testing::write_safetensors(dir + "/comfy.safetensors", comfy);
    ggdiff::testing::write_safetensors(dir + "/diffusers.safetensors", diffusers);
    ggdiff::testing::write_safetensors(dir + "/kohya.safetensors", kohya_form);

    for (const std::string name : {"", "comfy", "diffusers", "kohya"}) {
        std::vector<std::string> args = model;
        args.insert(args.end(), {"--lora-model-dir", dir, "-v", "-o",
                                 dir + "/" + (name.empty() ? "plain" : name) + ".png"});
        std::vector<std::string> req = request;
        for (size_t j = 0; j + 1 < req.size(); ++j) {
            if (req[j] == "-p" && !name.empty()) req[j + 1] += "<lora:" + name + ":1>";
        }
        args.insert(args.end(), req.begin(), req.end());
        const RunResult r = run_ggdiff(args, dir, 600);
        ASSERT_TRUE(r.succeeded()) << r.describe();
        if (name.empty()) continue;
        EXPECT_FALSE(contains(r.err, "match no weight")) << name << ": " << r.err;
        EXPECT_TRUE(contains(r.err, "LoRA: 1 file(s)")) << name << ": " << r.err;
    }
    for (const char* form : {"comfy", "diffusers"}) {
        const ImageDiff same = compare_images(dir + "/" + form + ".png", dir + "/kohya.png");
        ASSERT_TRUE(same.ok) << same.error;
        EXPECT_LE(same.mean_abs, 0.5) << form << " vs kohya, max " << same.max_abs;
    }
    const ImageDiff moved = compare_images(dir + "/kohya.png", dir + "/plain.png");
    ASSERT_TRUE(moved.ok) << moved.error;
    EXPECT_GT(moved.mean_abs, 2.0) << "the LoRA changed nothing";
    std::printf("kohya vs no LoRA %.3f\n", moved.mean_abs);
}

}  // namespace
}  // namespace ggdiff::e2e
