// LoRA on the Ideogram 4 fixture, end to end (the ideogram4_tiny set of tests/golden, case
// ideogram4_wide_json): the same modules of a layer's attention and MLP, the patch embedder and
// the final linear as ComfyUI names ("diffusion_model.layers.0.attention.qkv.lora_A.weight"), PEFT
// names ("transformer.layers.0.attention.qkv": Ideogram's diffusers files keep the original names)
// and kohya names ("lora_unet_layers_0_attention_qkv") give the same image, which differs from
// the image without a LoRA, and no module goes unmatched.
#include <gtest/gtest.h>

#include <algorithm>

#include "../golden/e2e_support.h"
#include "../io/io_test_util.h"
#include "lora_forms.h"

namespace ggdiff::e2e {
namespace {

using namespace lora_forms;

std::string gguf(const std::string& stem) {
    return std::string(GGDIFF_BINARY_DIR) + "/fixtures/" + stem + ".gguf";
}

TEST(LoraIdeogram4, ComfyPeftAndKohyaFormsGiveTheSameImage) {
    const std::vector<std::string> model = {"--diffusion-model",
                                            gguf("ideogram4_tiny_dit"),
                                            "--llm",
                                            gguf("ideogram4_tiny_llm"),
                                            "--vae",
                                            built_fixture("flux2_vae"),
                                            "--llm-tokenizer",
                                            shared_dir() + "/data/qwen2_synthetic"};
    for (size_t i = 1; i < model.size(); i += 2) {
        ASSERT_TRUE(std::filesystem::exists(model[i]))
            << "missing " << model[i] << " (run through ctest)";
    }
    const std::string dir = fresh_dir();
    constexpr int64_t w = 4608, mlp = 12288;  // the real widths
    struct Module {
        const char* name;
        Pair p;
    };
    const std::vector<Module> modules = {
        {"layers.0.attention.qkv", pair(w, 3 * w, 41)},
        {"layers.0.feed_forward.w2", pair(mlp, w, 42)},
        {"input_proj", pair(128, w, 44)},
        {"final_layer.linear", pair(w, 128, 45)},
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

    const std::vector<std::string> request =
        suite_case_args(repo_suite_dir("ideogram4_tiny"), "ideogram4_wide_json");
    ASSERT_FALSE(request.empty());
    expect_forms_agree(model, request, dir, {"comfy", "peft", "kohya"});
}

}  // namespace
}  // namespace ggdiff::e2e
