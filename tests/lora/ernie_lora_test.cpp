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
#include "lora_forms.h"

namespace ggdiff::e2e {
namespace {

using namespace lora_forms;

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

    expect_forms_agree(model, request, dir, {"kohya", "comfy", "diffusers"});
}

}  // namespace
}  // namespace ggdiff::e2e
