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
#include "lora_forms.h"

namespace ggdiff::e2e {
namespace {

using namespace lora_forms;

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
    std::vector<FakeTensor> comfy, kohya_form;
    for (const Module& m : modules) {
        peft(comfy, std::string("diffusion_model.") + (m.net ? "net." : "") + m.path, m.p);
        std::string k = std::string("lora_unet_") + m.path;
        std::replace(k.begin(), k.end(), '.', '_');
        kohya(kohya_form, k, m.p);
    }
    ggdiff::testing::write_safetensors(dir + "/comfy.safetensors", comfy);
    // The adapter's module alone (it runs with the text encoder, before sampling).
    std::vector<FakeTensor> adapter(comfy.end() - 2, comfy.end());
    ggdiff::testing::write_safetensors(dir + "/adapter.safetensors", adapter);
    ggdiff::testing::write_safetensors(dir + "/kohya.safetensors", kohya_form);

    const std::vector<std::string> request =
        suite_case_args(repo_suite_dir("anima_tiny"), "anima_euler");
    ASSERT_FALSE(request.empty());
    expect_forms_agree(model, request, dir, {"comfy", "kohya"});
    const RunResult r = generate(model, request, dir, "adapter");
    ASSERT_TRUE(r.succeeded()) << r.describe();
    EXPECT_FALSE(contains(r.err, "match no weight")) << r.err;
    const ImageDiff text = compare_images(dir + "/adapter.png", dir + "/plain.png");
    ASSERT_TRUE(text.ok) << text.error;
    EXPECT_GT(text.mean_abs, 1.0) << "the LLM adapter's LoRA changed nothing";
    std::printf("adapter alone vs no LoRA %.3f\n", text.mean_abs);
}

}  // namespace
}  // namespace ggdiff::e2e
