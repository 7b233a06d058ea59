// LoRA on the Boogu Image tiny fixture, end to end (the boogu_tiny set of tests/golden, case
// boogu_default): modules of the double-stream layer's joint attention (image and instruct
// projections), its image self-attention, a single-stream feed-forward and the final linear,
// as ComfyUI names them ("diffusion_model.double_stream_layers.0.img_self_attn.to_q.lora_A.
// weight"), PEFT ("transformer.double_stream_layers.0...") and kohya
// ("lora_unet_double_stream_layers_0_img_self_attn_to_q"), give the same image, which differs
// from the image without a LoRA, and no module goes unmatched.
#include <gtest/gtest.h>

#include <algorithm>

#include "../golden/e2e_support.h"
#include "../io/io_test_util.h"
#include "lora_forms.h"

namespace ggdiff::e2e {
namespace {

using namespace lora_forms;

TEST(LoraBoogu, ComfyPeftAndKohyaFormsGiveTheSameImage) {
    const std::vector<std::string> model = {"--diffusion-model",
                                            built_fixture("boogu_tiny_dit"),
                                            "--llm",
                                            built_fixture("zimage_tiny_llm"),
                                            "--vae",
                                            built_fixture("flux_ae"),
                                            "--llm-tokenizer",
                                            shared_dir() + "/data/qwen2_synthetic"};
    for (size_t i = 1; i < model.size(); i += 2) {
        ASSERT_TRUE(std::filesystem::exists(model[i]))
            << "missing " << model[i] << " (run through ctest)";
    }
    const std::string dir = fresh_dir();
    constexpr int64_t w = 96, kv = 48, ffn = 512, patch = 64;  // boogu_tiny_dit's widths
    struct Module {
        const char* path;
        Pair p;
    };
    const std::vector<Module> modules = {
        {"double_stream_layers.0.img_instruct_attn.processor.img_to_q", pair(w, w, 41)},
        {"double_stream_layers.0.img_instruct_attn.processor.instruct_to_k", pair(w, kv, 42)},
        {"double_stream_layers.0.img_self_attn.to_q", pair(w, w, 43)},
        {"single_stream_layers.1.feed_forward.linear_2", pair(ffn, w, 44)},
        {"norm_out.linear_2", pair(w, patch, 45)},
    };
    std::vector<FakeTensor> comfy, peft_form, kohya_form;
    for (const Module& m : modules) {
        peft(comfy, std::string("diffusion_model.") + m.path, m.p);
        peft(peft_form, std::string("transformer.") + m.path, m.p);
        std::string k = std::string("lora_unet_") + m.path;
        std::replace(k.begin(), k.end(), '.', '_');
        kohya(kohya_form, k, m.p);
    }
    ggdiff::testing::write_safetensors(dir + "/comfy.safetensors", comfy);
    ggdiff::testing::write_safetensors(dir + "/peft.safetensors", peft_form);
    ggdiff::testing::write_safetensors(dir + "/kohya.safetensors", kohya_form);

    const std::vector<std::string> request =
        suite_case_args(repo_suite_dir("boogu_tiny"), "boogu_default");
    ASSERT_FALSE(request.empty());
    expect_forms_agree(model, request, dir, {"comfy", "peft", "kohya"});
}

}  // namespace
}  // namespace ggdiff::e2e
