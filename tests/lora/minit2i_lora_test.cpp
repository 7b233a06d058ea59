// LoRA on the MiniT2I tiny fixture, end to end (the minit2i_tiny set of tests/golden, case
// minit2i_euler): the same modules of the double blocks, a text preamble block and the final
// layer as ComfyUI names with the file's "model.net." wrapper
// ("diffusion_model.model.net.double_blocks.0.img_qkv.lora_A.weight"), PEFT names
// ("transformer.double_blocks.0.img_qkv") and kohya names ("lora_unet_double_blocks_0_img_qkv")
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

TEST(LoraMiniT2I, ComfyPeftAndKohyaFormsGiveTheSameImage) {
    const std::vector<std::string> model = {
        "--diffusion-model", built_fixture("minit2i_tiny_dit"),
        "--t5xxl",           built_fixture("flux_tiny_t5"),
        "--t5xxl-tokenizer", shared_dir() + "/data/t5_synthetic"};
    for (size_t i = 1; i < model.size(); i += 2) {
        ASSERT_TRUE(std::filesystem::exists(model[i]))
            << "missing " << model[i] << " (run through ctest)";
    }
    const std::string dir = fresh_dir();
    constexpr int64_t w = 128, t = 128, tm = 344;  // minit2i_tiny_dit's widths
    struct Module {
        const char* path;
        Pair p;
    };
    const std::vector<Module> modules = {
        {"double_blocks.0.img_qkv", pair(w, 3 * w, 31)},
        {"double_blocks.1.txt_mlp.w2", pair(tm, t, 32)},
        {"txt_preamble_blocks.0.attn_proj", pair(w, t, 33)},
        {"final_layer.linear", pair(w, 16 * 16 * 3, 34)},
    };
    std::vector<FakeTensor> comfy, peft_form, kohya_form;
    for (const Module& m : modules) {
        peft(comfy, std::string("diffusion_model.model.net.") + m.path, m.p);
        peft(peft_form, std::string("transformer.") + m.path, m.p);
        std::string k = std::string("lora_unet_") + m.path;
        std::replace(k.begin(), k.end(), '.', '_');
        kohya(kohya_form, k, m.p);
    }
    ggdiff::testing::write_safetensors(dir + "/comfy.safetensors", comfy);
    ggdiff::testing::write_safetensors(dir + "/peft.safetensors", peft_form);
    ggdiff::testing::write_safetensors(dir + "/kohya.safetensors", kohya_form);

    const std::vector<std::string> request =
        suite_case_args(repo_suite_dir("minit2i_tiny"), "minit2i_euler");
    ASSERT_FALSE(request.empty());
    expect_forms_agree(model, request, dir, {"comfy", "peft", "kohya"});
}

}  // namespace
}  // namespace ggdiff::e2e
