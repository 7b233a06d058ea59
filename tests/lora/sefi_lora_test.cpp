// LoRA on the SeFi-Image tiny fixture, end to end (the sefi_tiny set of tests/golden, case
// sefi_euler): the same modules of a double block's MLP, a single block's fused linear1, the
// final layer and the texture timestep embedder as ComfyUI names
// ("diffusion_model.single_blocks.1.linear1.lora_A.weight"), PEFT names in the diffusers form
// ("transformer.single_transformer_blocks.1.attn.to_qkv_mlp_proj") and kohya names
// ("lora_unet_single_blocks_1_linear1") give the same image, which differs from the image
// without a LoRA, and no module goes unmatched.
#include <gtest/gtest.h>

#include <algorithm>

#include "../golden/e2e_support.h"
#include "../io/io_test_util.h"
#include "lora_forms.h"

namespace ggdiff::e2e {
namespace {

using namespace lora_forms;

TEST(LoraSefi, ComfyPeftAndKohyaFormsGiveTheSameImage) {
    const std::vector<std::string> model = {"--diffusion-model",
                                            built_fixture("sefi_tiny_dit"),
                                            "--llm",
                                            built_fixture("flux2_tiny_llm"),
                                            "--vae",
                                            built_fixture("flux2_vae"),
                                            "--llm-tokenizer",
                                            shared_dir() + "/data/qwen2_synthetic"};
    for (size_t i = 1; i < model.size(); i += 2) {
        ASSERT_TRUE(std::filesystem::exists(model[i]))
            << "missing " << model[i] << " (run through ctest)";
    }
    const std::string dir = fresh_dir();
    constexpr int64_t h = 256, m = 768;  // sefi_tiny_dit's widths
    struct Module {
        const char* path;  // original (BFL) name
        const char* peft;  // diffusers module path
        Pair p;
    };
    const std::vector<Module> modules = {
        {"double_blocks.0.img_mlp.0", "transformer_blocks.0.ff.linear_in", pair(h, 2 * m, 41)},
        {"single_blocks.1.linear1", "single_transformer_blocks.1.attn.to_qkv_mlp_proj",
         pair(h, 3 * h + 2 * m, 42)},
        {"final_layer.linear", "proj_out", pair(h, 144, 43)},
        {"dual_time_embed.texture_embedder.linear_1", "dual_time_embed.texture_embedder.linear_1",
         pair(256, h / 2, 44)},
    };
    std::vector<FakeTensor> comfy, peft_form, kohya_form;
    for (const Module& x : modules) {
        peft(comfy, std::string("diffusion_model.") + x.path, x.p);
        peft(peft_form, std::string("transformer.") + x.peft, x.p);
        std::string k = std::string("lora_unet_") + x.path;
        std::replace(k.begin(), k.end(), '.', '_');
        kohya(kohya_form, k, x.p);
    }
    ggdiff::testing::write_safetensors(dir + "/comfy.safetensors", comfy);
    ggdiff::testing::write_safetensors(dir + "/peft.safetensors", peft_form);
    ggdiff::testing::write_safetensors(dir + "/kohya.safetensors", kohya_form);

    const std::vector<std::string> request =
        suite_case_args(repo_suite_dir("sefi_tiny"), "sefi_euler");
    ASSERT_FALSE(request.empty());
    expect_forms_agree(model, request, dir, {"comfy", "peft", "kohya"});
}

}  // namespace
}  // namespace ggdiff::e2e
