// LoRA on the Krea2 tiny fixture, end to end (the krea2_tiny set of tests/golden, case
// krea2_wide_cfg1): the same modules of a single-stream block's attention and MLP, a text fusion
// refiner block, the patch embedder and the final linear as ComfyUI names
// ("diffusion_model.blocks.0.attn.wq.lora_A.weight"), PEFT names in the diffusers form
// ("transformer.transformer_blocks.0.attn.to_q") and kohya names ("lora_unet_blocks_0_attn_wq")
// give the same image, which differs from the image without a LoRA, and no module goes
// unmatched.
#include <gtest/gtest.h>

#include <algorithm>

#include "../golden/e2e_support.h"
#include "../io/io_test_util.h"
#include "lora_forms.h"

namespace ggdiff::e2e {
namespace {

using namespace lora_forms;

TEST(LoraKrea2, ComfyPeftAndKohyaFormsGiveTheSameImage) {
    const std::vector<std::string> model = {"--diffusion-model",
                                            built_fixture("krea2_tiny_dit"),
                                            "--llm",
                                            built_fixture("krea2_tiny_llm"),
                                            "--vae",
                                            built_fixture("qwen_vae"),
                                            "--llm-tokenizer",
                                            shared_dir() + "/data/qwen2_synthetic"};
    for (size_t i = 1; i < model.size(); i += 2) {
        ASSERT_TRUE(std::filesystem::exists(model[i]))
            << "missing " << model[i] << " (run through ctest)";
    }
    const std::string dir = fresh_dir();
    constexpr int64_t w = 256, t = 320, mlp = 768;  // krea2_tiny_dit's widths
    struct Module {
        const char* original;
        const char* diffusers;
        Pair p;
    };
    const std::vector<Module> modules = {
        {"blocks.0.attn.wq", "transformer_blocks.0.attn.to_q", pair(w, w, 41)},
        {"blocks.1.mlp.down", "transformer_blocks.1.ff.down", pair(mlp, w, 42)},
        {"txtfusion.refiner_blocks.0.attn.wo", "text_fusion.refiner_blocks.0.attn.to_out.0",
         pair(t, t, 43)},
        {"first", "img_in", pair(64, w, 44)},
        {"last.linear", "final_layer.linear", pair(w, 64, 45)},
    };
    std::vector<FakeTensor> comfy, peft_form, kohya_form;
    for (const Module& m : modules) {
        peft(comfy, std::string("diffusion_model.") + m.original, m.p);
        peft(peft_form, std::string("transformer.") + m.diffusers, m.p);
        std::string k = std::string("lora_unet_") + m.original;
        std::replace(k.begin(), k.end(), '.', '_');
        kohya(kohya_form, k, m.p);
    }
    ggdiff::testing::write_safetensors(dir + "/comfy.safetensors", comfy);
    ggdiff::testing::write_safetensors(dir + "/peft.safetensors", peft_form);
    ggdiff::testing::write_safetensors(dir + "/kohya.safetensors", kohya_form);

    const std::vector<std::string> request =
        suite_case_args(repo_suite_dir("krea2_tiny"), "krea2_wide_cfg1");
    ASSERT_FALSE(request.empty());
    expect_forms_agree(model, request, dir, {"comfy", "peft", "kohya"});
}

}  // namespace
}  // namespace ggdiff::e2e
