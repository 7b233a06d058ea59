// LoRA on the PiD tiny fixture, end to end (the pid_tiny set of tests/golden, case pid_euler):
// the same modules of two patch blocks (a joint attention output, a text MLP) and a pixel block
// (its attention output and the compression to attention) as ComfyUI names with and without
// the checkpoint's "net." wrapper ("diffusion_model.net.patch_blocks.0.attn.proj_x"), PEFT
// names ("transformer.patch_blocks.0.attn.proj_x") and kohya names
// ("lora_unet_patch_blocks_0_attn_proj_x") give the same image, which differs from the image
// without a LoRA, and no module goes unmatched.
#include <gtest/gtest.h>

#include <algorithm>

#include "../golden/e2e_support.h"
#include "../io/io_test_util.h"
#include "lora_forms.h"

namespace ggdiff::e2e {
namespace {

using namespace lora_forms;

TEST(LoraPid, ComfyPeftAndKohyaFormsGiveTheSameImage) {
    const std::string suite = repo_suite_dir("pid_tiny");
    const std::vector<std::string> model = {
        "--diffusion-model",
        std::string(GGDIFF_BINARY_DIR) + "/fixtures/pid_tiny_dit.gguf",
        "--llm",
        built_fixture("pid_tiny_llm"),
        "--vae",
        built_fixture("flux_ae")};
    for (size_t i = 1; i < model.size(); i += 2) {
        ASSERT_TRUE(std::filesystem::exists(model[i]))
            << "missing " << model[i] << " (run through ctest)";
    }
    const std::string dir = fresh_dir();
    constexpr int64_t w = 1536, mlp = 256, px = 1152, patch = 4096;  // pid_tiny_dit's widths
    struct Module {
        const char* name;
        Pair p;
    };
    const std::vector<Module> modules = {
        {"patch_blocks.0.attn.proj_x", pair(w, w, 41)},
        {"patch_blocks.1.mlp_y.w2", pair(mlp, w, 42)},
        {"pixel_blocks.0.attn.proj", pair(px, px, 43)},
        {"pixel_blocks.1.compress_to_attn", pair(patch, px, 44)},
    };
    std::vector<FakeTensor> comfy, comfy_net, peft_form, kohya_form;
    for (const Module& m : modules) {
        peft(comfy, std::string("diffusion_model.") + m.name, m.p);
        peft(comfy_net, std::string("diffusion_model.net.") + m.name, m.p);
        peft(peft_form, std::string("transformer.") + m.name, m.p);
        std::string k = std::string("lora_unet_") + m.name;
        std::replace(k.begin(), k.end(), '.', '_');
        kohya(kohya_form, k, m.p);
    }
    ggdiff::testing::write_safetensors(dir + "/comfy.safetensors", comfy);
    ggdiff::testing::write_safetensors(dir + "/comfy_net.safetensors", comfy_net);
    ggdiff::testing::write_safetensors(dir + "/peft.safetensors", peft_form);
    ggdiff::testing::write_safetensors(dir + "/kohya.safetensors", kohya_form);

    // The case's arguments resolved (its -r image and tokenizer are files of the suite).
    const std::vector<std::string> request = suite_case_args(suite, "pid_euler");
    ASSERT_FALSE(request.empty());
    expect_forms_agree(model, request, dir, {"comfy", "comfy_net", "peft", "kohya"});
}

}  // namespace
}  // namespace ggdiff::e2e
