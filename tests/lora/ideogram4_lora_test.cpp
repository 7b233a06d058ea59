// LoRA on the Ideogram 4 fixture, end to end (the ideogram4_tiny set of tests/golden, case
// ideogram4_wide_json): the same modules of a layer's attention and MLP, the patch embedder and
// the final linear as ComfyUI names ("diffusion_model.layers.0.attention.qkv.lora_A.weight"), PEFT
// names ("transformer.layers.0.attention.qkv": Ideogram's diffusers files keep the original names)
// and kohya names ("lora_unet_layers_0_attention_qkv") give the same image, which differs from
// the image without a LoRA, and no module goes unmatched. With the unconditional DiT
// (--uncond-diffusion-model, case ideogram4_uncond) keys that name it ("diffusion_model.uncond.",
// "transformer.uncond.", "lora_unet_uncond_") patch it in every form, and a LoRA of the DiT's own
// modules patches the DiT only, as in stable-diffusion.cpp (whose LoRA keys are the model's
// tensor names, model.diffusion_model.uncond.* for the unconditional DiT).
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "../golden/e2e_support.h"
#include "../io/io_test_util.h"
#include "lora_forms.h"

namespace ggdiff::e2e {
namespace {

using namespace lora_forms;

std::string gguf(const std::string& stem) {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/" + stem + ".gguf";
}

// The fixture's files (with the unconditional DiT when `uncond`); empty when one is missing.
std::vector<std::string> model_args(bool uncond) {
    std::vector<std::string> model = {"--diffusion-model",
                                      gguf("ideogram4_tiny_dit"),
                                      "--llm",
                                      gguf("ideogram4_tiny_llm"),
                                      "--vae",
                                      built_fixture("flux2_vae"),
                                      "--llm-tokenizer",
                                      shared_dir() + "/data/qwen2_synthetic"};
    if (uncond)
        model.insert(model.end(), {"--uncond-diffusion-model", gguf("ideogram4_tiny_uncond")});
    for (size_t i = 1; i < model.size(); i += 2) {
        if (!std::filesystem::exists(model[i])) {
            ADD_FAILURE() << "missing " << model[i] << " (run through ctest)";
            return {};
        }
    }
    return model;
}

// The same modules of a layer's attention and MLP, the patch embedder and the final linear,
// their names after `scope` ("" for the DiT, "uncond." for the unconditional DiT), in ComfyUI,
// PEFT and kohya form: dir/comfy, dir/peft, dir/kohya.safetensors.
void write_forms(const std::string& dir, const std::string& scope, uint32_t seed) {
    constexpr int64_t w = 4608, mlp = 12288;  // the real widths
    struct Module {
        std::string name;
        Pair p;
    };
    const std::vector<Module> modules = {
        {scope + "layers.0.attention.qkv", pair(w, 3 * w, seed)},
        {scope + "layers.0.feed_forward.w2", pair(mlp, w, seed + 1)},
        {scope + "input_proj", pair(128, w, seed + 3)},
        {scope + "final_layer.linear", pair(w, 128, seed + 4)},
    };
    std::vector<FakeTensor> comfy, peft_form, kohya_form;
    for (const Module& m : modules) {
        peft(comfy, "diffusion_model." + m.name, m.p);
        peft(peft_form, "transformer." + m.name, m.p);
        std::string k = "lora_unet_" + m.name;
        std::replace(k.begin(), k.end(), '.', '_');
        kohya(kohya_form, k, m.p);
    }
    ggdiff::testing::write_safetensors(dir + "/comfy.safetensors", comfy);
    ggdiff::testing::write_safetensors(dir + "/peft.safetensors", peft_form);
    ggdiff::testing::write_safetensors(dir + "/kohya.safetensors", kohya_form);
}

TEST(LoraIdeogram4, ComfyPeftAndKohyaFormsGiveTheSameImage) {
    const std::vector<std::string> model = model_args(false);
    ASSERT_FALSE(model.empty());
    const std::string dir = fresh_dir();
    write_forms(dir, "", 41);
    const std::vector<std::string> request =
        suite_case_args(repo_suite_dir("ideogram4_tiny"), "ideogram4_wide_json");
    ASSERT_FALSE(request.empty());
    expect_forms_agree(model, request, dir, {"comfy", "peft", "kohya"});
}

TEST(LoraIdeogram4, TheUncondDitTakesTheKeysThatNameIt) {
    const std::vector<std::string> model = model_args(true);
    ASSERT_FALSE(model.empty());
    const std::vector<std::string> request =
        suite_case_args(repo_suite_dir("ideogram4_tiny"), "ideogram4_uncond");
    ASSERT_FALSE(request.empty());
    const std::string dir = fresh_dir();
    write_forms(dir, "uncond.", 51);
    expect_forms_agree(model, request, dir, {"comfy", "peft", "kohya"});

    // A LoRA of the DiT's modules patches the DiT's four weights, not the unconditional DiT's.
    const std::string own = fresh_dir("own");
    write_forms(own, "", 41);
    const RunResult r = generate(model, request, own, "comfy");
    ASSERT_TRUE(r.succeeded()) << r.describe();
    // "LoRA: 1 file(s), M updates merged, R applied at run time": M + R modules patched.
    std::smatch m;
    ASSERT_TRUE(std::regex_search(
        r.err, m, std::regex(R"(LoRA: 1 file\(s\), (\d+) updates merged, (\d+) applied)")))
        << r.err;
    EXPECT_EQ(std::stoi(m[1]) + std::stoi(m[2]), 4) << m[0];
    EXPECT_FALSE(contains(r.err, "match no weight")) << r.err;
}

}  // namespace
}  // namespace ggdiff::e2e
