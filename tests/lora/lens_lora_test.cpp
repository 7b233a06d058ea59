// LoRA on the Lens tiny fixture, end to end (the lens_tiny set of tests/golden, case
// lens_cfg1_tall): the same modules of a block's fused image QKV, its text MLP and text output,
// the text and patch embedders as ComfyUI names ("diffusion_model.transformer_blocks.0.attn.
// img_qkv.lora_A.weight"), PEFT names ("transformer.transformer_blocks.0.attn.img_qkv") and
// kohya names ("lora_unet_transformer_blocks_0_attn_img_qkv") give the same image, which
// differs from the image without a LoRA, and no module goes unmatched. (Lens's own names are
// already diffusers', so the ComfyUI and PEFT forms differ only by their prefix.)
#include <gtest/gtest.h>

#include <algorithm>

#include "../golden/e2e_support.h"
#include "../io/io_test_util.h"
#include "lora_forms.h"

namespace ggdiff::e2e {
namespace {

using namespace lora_forms;

TEST(LoraLens, ComfyPeftAndKohyaFormsGiveTheSameImage) {
    const std::vector<std::string> model = {
        "--diffusion-model",
        built_fixture("lens_tiny_dit"),
        "--llm",
        std::string(GGDIFF_BINARY_DIR) + "/fixtures/lens_tiny_llm.gguf",
        "--vae",
        built_fixture("flux2_vae")};
    for (size_t i = 1; i < model.size(); i += 2) {
        ASSERT_TRUE(std::filesystem::exists(model[i]))
            << "missing " << model[i] << " (run through ctest)";
    }
    const std::string dir = fresh_dir();
    constexpr int64_t w = 128, mlp = 336, txt = 11520;  // lens_tiny_dit's widths
    struct Module {
        const char* name;
        Pair p;
    };
    const std::vector<Module> modules = {
        {"transformer_blocks.0.attn.img_qkv", pair(w, 3 * w, 41)},
        {"transformer_blocks.1.txt_mlp.w2", pair(mlp, w, 42)},
        {"transformer_blocks.0.attn.to_add_out", pair(w, w, 43)},
        {"txt_in", pair(txt, w, 44)},
        {"img_in", pair(w, w, 45)},
    };
    std::vector<FakeTensor> comfy, peft_form, kohya_form;
    for (const Module& m : modules) {
        peft(comfy, std::string("diffusion_model.") + m.name, m.p);
        peft(peft_form, std::string("transformer.") + m.name, m.p);
        std::string k = std::string("lora_unet_") + m.name;
        std::replace(k.begin(), k.end(), '.', '_');
        kohya(kohya_form, k, m.p);
    }
    ggdiff::testing::write_safetensors(dir + "/comfy.safetensors", comfy);
    ggdiff::testing::write_safetensors(dir + "/peft.safetensors", peft_form);
    ggdiff::testing::write_safetensors(dir + "/kohya.safetensors", kohya_form);

    // The case's arguments pass the synthetic GPT-OSS tokenizer (--llm-tokenizer).
    const std::vector<std::string> request =
        suite_case_args(repo_suite_dir("lens_tiny"), "lens_cfg1_tall");
    ASSERT_FALSE(request.empty());
    expect_forms_agree(model, request, dir, {"comfy", "peft", "kohya"});
}

}  // namespace
}  // namespace ggdiff::e2e
