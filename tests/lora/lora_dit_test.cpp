// LoRA on the FLUX.1 and Qwen Image tiny fixtures, end to end: a diffusers / PEFT LoRA and
// the equivalent kohya LoRA (FLUX.1: to_k / add_v_proj on their thirds of the fused qkv, a
// single block's to_q and proj_mlp on their rows of linear1, norm_out's (scale, shift) halves
// swapped, a CLIP-L module as "lora_te1_"; Qwen Image: the same modules under "lora_unet_"
// and "transformer.") give the same image, which differs from the image without a LoRA, and
// no module goes unmatched. FLUX.1 Kontext (with a reference image) takes the FLUX.1 pair.
#include <gtest/gtest.h>

#include <algorithm>

#include "../golden/flux_e2e.h"
#include "../golden/kontext_e2e.h"
#include "../golden/qwen_e2e.h"
#include "../golden/wan_e2e.h"
#include "../io/io_test_util.h"
#include "lora_forms.h"

namespace ggdiff::e2e {
namespace {

using namespace lora_forms;

// The three images: no LoRA, diffusers, kohya.
void expect_same_change(const std::vector<std::string>& model,
                        const std::vector<std::string>& request, const std::string& dir) {
    expect_forms_agree(model, request, dir, {"diffusers", "kohya"});
}

// The FLUX.1 pair of LoRA files in `dir` (with a CLIP-L module in both unless `clip` is false).
void write_flux_loras(const std::string& dir, bool clip = true) {
    constexpr int64_t h = 256, mlp = 1024;  // flux_tiny_dit: hidden 256, MLP 1024
    const Pair k = pair(h, h, 1), v = pair(h, h, 2), sq = pair(h, h, 3), smlp = pair(h, mlp, 4);
    const Pair fin = pair(h, 2 * h, 5), m0 = pair(h, mlp, 6);
    std::vector<FakeTensor> d;
    peft(d, "transformer.transformer_blocks.0.attn.to_k", k);
    peft(d, "transformer.transformer_blocks.0.attn.add_v_proj", v);
    peft(d, "transformer.single_transformer_blocks.0.attn.to_q", sq);
    peft(d, "transformer.single_transformer_blocks.0.proj_mlp", smlp);
    peft(d, "transformer.norm_out.linear", fin);
    peft(d, "transformer.transformer_blocks.0.ff.net.0.proj", m0);
    // A CLIP-L module as sd-scripts names it, in both files.
    const Pair te = pair(768, 768, 9);
    if (clip) kohya(d, "lora_te1_text_model_encoder_layers_0_self_attn_q_proj", te);
    ggdiff::testing::write_safetensors(dir + "/diffusers.safetensors", d);

    Pair swapped = fin;  // (scale, shift) -> (shift, scale)
    std::copy(fin.up.begin() + h * kRank, fin.up.end(), swapped.up.begin());
    std::copy(fin.up.begin(), fin.up.begin() + h * kRank, swapped.up.begin() + h * kRank);
    std::vector<FakeTensor> o;
    kohya(o, "lora_unet_double_blocks_0_img_attn_qkv", on_rows({{h, k}}, 3 * h));
    kohya(o, "lora_unet_double_blocks_0_txt_attn_qkv", on_rows({{2 * h, v}}, 3 * h));
    kohya(o, "lora_unet_single_blocks_0_linear1", on_rows({{0, sq}, {3 * h, smlp}}, 3 * h + mlp));
    kohya(o, "lora_unet_final_layer_adaLN_modulation_1", swapped);
    kohya(o, "lora_unet_double_blocks_0_img_mlp_0", m0);
    if (clip) kohya(o, "lora_te1_text_model_encoder_layers_0_self_attn_q_proj", te);
    ggdiff::testing::write_safetensors(dir + "/kohya.safetensors", o);
}

TEST(LoraDit, FluxKohyaAndDiffusersFormsGiveTheSameImage) {
    if (!flux::prerequisites_ok()) return;
    const std::string dir = fresh_dir();
    write_flux_loras(dir);
    expect_same_change(flux::model_args(), flux::case_args("flux_euler"), dir);
}

// Kontext is a FLUX.1 model: the same LoRAs, with a reference image.
TEST(LoraDit, KontextTakesFluxLoras) {
    if (!kontext::prerequisites_ok()) return;
    const std::string dir = fresh_dir();
    write_flux_loras(dir);
    expect_same_change(kontext::model_args(), kontext::case_args("kontext_ref1"), dir);
}

// Ovis-Image: FLUX.1's names plus the SwiGLU MLP's gate_proj / up_proj / down_proj. The same
// modules as kohya names and as ComfyUI's diffusion_model.* PEFT names (named "diffusers" for
// expect_same_change), on the ovis_tiny set's first case.
TEST(LoraDit, OvisKohyaAndComfyFormsGiveTheSameImage) {
    const std::string suite = repo_suite_dir("ovis_tiny");
    const std::vector<std::string> model = llm_flux_args("ovis_tiny_dit", "zimage_tiny_llm");
    for (size_t i = 1; i < model.size(); i += 2) {
        ASSERT_TRUE(fs::exists(model[i])) << "missing " << model[i] << " (run through ctest)";
    }
    const std::string dir = fresh_dir();
    constexpr int64_t h = 256, mlp = 1024;  // ovis_tiny_dit: hidden 256, MLP 1024
    const Pair gate = pair(h, mlp, 11), up = pair(h, mlp, 12), down = pair(mlp, h, 13);
    const Pair qkv = pair(h, 3 * h, 14), l1 = pair(h, 3 * h + 2 * mlp, 15);
    std::vector<FakeTensor> comfy, kohya_form;
    const std::vector<std::pair<std::string, Pair>> modules = {
        {"double_blocks.0.img_mlp.gate_proj", gate},
        {"double_blocks.1.txt_mlp.up_proj", up},
        {"double_blocks.0.txt_mlp.down_proj", down},
        {"double_blocks.1.img_attn.qkv", qkv},
        {"single_blocks.0.linear1", l1}};
    for (const auto& [name, p] : modules) {
        peft(comfy, "diffusion_model." + name, p);
        std::string k = "lora_unet_" + name;
        std::replace(k.begin(), k.end(), '.', '_');
        kohya(kohya_form, k, p);
    }
    ggdiff::testing::write_safetensors(dir + "/diffusers.safetensors", comfy);
    ggdiff::testing::write_safetensors(dir + "/kohya.safetensors", kohya_form);
    expect_same_change(model, suite_case_args(suite, "ovis_euler"), dir);
}

// HiDream-O1-Image's language model is its DiT: LoRAs on its attention and MLP linears as
// kohya names them (lora_unet_language_model_layers_...) and as ComfyUI's PEFT names
// (diffusion_model.language_model...), on the tiny fixture.
TEST(LoraDit, HiDreamO1KohyaAndComfyFormsGiveTheSameImage) {
    const std::vector<std::string> model = {"-m", built_fixture("hidream_o1_tiny"),
                                            "--llm-tokenizer",
                                            shared_dir() + "/data/qwen2_synthetic"};
    ASSERT_TRUE(fs::exists(model[1])) << "missing " << model[1] << " (run through ctest)";
    const std::string dir = fresh_dir();
    constexpr int64_t h = 256, kv = 128, mlp = 512;  // hidream_o1_tiny
    const std::vector<std::pair<std::string, Pair>> modules = {
        {"language_model.layers.0.self_attn.q_proj", pair(h, h, 21)},
        {"language_model.layers.1.self_attn.v_proj", pair(h, kv, 22)},
        {"language_model.layers.0.mlp.down_proj", pair(mlp, h, 23)},
        {"language_model.layers.1.mlp.gate_proj", pair(h, mlp, 24)}};
    std::vector<FakeTensor> comfy, kohya_form;
    for (const auto& [name, p] : modules) {
        peft(comfy, "diffusion_model." + name, p);
        std::string k = "lora_unet_" + name;
        std::replace(k.begin(), k.end(), '.', '_');
        kohya(kohya_form, k, p);
    }
    ggdiff::testing::write_safetensors(dir + "/diffusers.safetensors", comfy);
    ggdiff::testing::write_safetensors(dir + "/kohya.safetensors", kohya_form);
    expect_same_change(
        model, {"-p", "a lovely cat", "-W", "64", "-H", "64", "--steps", "3", "-s", "1"}, dir);
}

// LongCat-Image is FLUX.1's DiT without CLIP: the same DiT LoRAs (diffusers names as LongCat
// trainers write them, kohya / ComfyUI names), on the longcat_tiny set's first case.
TEST(LoraDit, LongCatTakesFluxDitLoras) {
    const std::string suite = repo_suite_dir("longcat_tiny");
    const std::vector<std::string> model = llm_flux_args("longcat_tiny_dit", "qwen_tiny_llm");
    for (size_t i = 1; i < model.size(); i += 2) {
        ASSERT_TRUE(fs::exists(model[i])) << "missing " << model[i] << " (run through ctest)";
    }
    const std::string dir = fresh_dir();
    write_flux_loras(dir, /*clip=*/false);
    expect_same_change(model, suite_case_args(suite, "longcat_euler"), dir);
}

TEST(LoraDit, QwenImageKohyaAndDiffusersFormsGiveTheSameImage) {
    const std::string dir = fresh_dir();
    for (const std::string& f :
         {qwen_fixture("qwen_tiny_dit"), qwen_fixture("qwen_tiny_llm"), qwen_fixture("qwen_vae")})
        ASSERT_TRUE(fs::is_regular_file(f)) << f << " (run through ctest: it makes the fixtures)";
    constexpr int64_t w = 3072;  // qwen_tiny_dit's width
    const std::pair<const char*, Pair> modules[] = {
        {"transformer_blocks.0.attn.to_q", pair(w, w, 1)},
        {"transformer_blocks.0.attn.add_k_proj", pair(w, w, 2)},
        {"transformer_blocks.0.img_mlp.net.0.proj", pair(w, 4 * w, 3)},
        {"transformer_blocks.0.txt_mod.1", pair(w, 6 * w, 4)},
    };
    std::vector<FakeTensor> d, o;
    for (const auto& [path, p] : modules) {
        peft(d, std::string("transformer.") + path, p);
        std::string u = path;
        std::replace(u.begin(), u.end(), '.', '_');
        kohya(o, "lora_unet_" + u, p);
    }
    ggdiff::testing::write_safetensors(dir + "/diffusers.safetensors", d);
    ggdiff::testing::write_safetensors(dir + "/kohya.safetensors", o);
    expect_same_change(qwen_model_args(), qwen_euler_args(), dir);
}

// Wan: musubi-tuner / kohya "lora_unet_blocks_0_self_attn_q" and ComfyUI-style names against
// diffusers / PEFT "transformer.blocks.0.attn1.to_q" (attn2 = cross_attn, ffn.net.0.proj =
// ffn.0), on one frame of the 1.3B fixture.
TEST(LoraDit, WanKohyaAndDiffusersFormsGiveTheSameImage) {
    if (!wan::prerequisites_ok()) return;
    const std::string dir = fresh_dir();
    constexpr int64_t w = 1536, ffn = 8960;  // the Wan 2.1 1.3B DiT
    struct Module {
        const char* original;
        const char* diffusers;
        Pair p;
    };
    const Module modules[] = {
        {"blocks.0.self_attn.q", "blocks.0.attn1.to_q", pair(w, w, 1)},
        {"blocks.1.cross_attn.v", "blocks.1.attn2.to_v", pair(w, w, 2)},
        {"blocks.2.ffn.0", "blocks.2.ffn.net.0.proj", pair(w, ffn, 3)},
        {"blocks.3.self_attn.o", "blocks.3.attn1.to_out.0", pair(w, w, 4)},
    };
    std::vector<FakeTensor> d, o;
    for (const Module& m : modules) {
        peft(d, std::string("transformer.") + m.diffusers, m.p);
        std::string u = m.original;
        std::replace(u.begin(), u.end(), '.', '_');
        kohya(o, "lora_unet_" + u, m.p);
    }
    ggdiff::testing::write_safetensors(dir + "/diffusers.safetensors", d);
    ggdiff::testing::write_safetensors(dir + "/kohya.safetensors", o);
    expect_same_change(wan::model_args(),
                       {"-p", "a red apple on a wooden table", "-W", "64", "-H", "64",
                        "--video-frames", "1", "--steps", "2", "--cfg-scale", "1", "-s", "100"},
                       dir);
}

// Wan 2.2 A14B: <lora:|high_noise|NAME:W> (sd-cli's syntax) patches only the high-noise
// expert, a plain tag only the model; both change the frames, differently. Without an expert
// the high-noise tag is an error.
TEST(LoraDit, WanHighNoiseTagPatchesTheExpert) {
    if (!wan::prerequisites_ok()) return;
    const std::string expert = wan::gguf_fixture("wan_1_3b_high_noise_dit");
    ASSERT_TRUE(fs::is_regular_file(expert)) << "run through ctest (fixture tests)";
    const std::string dir = fresh_dir();
    std::vector<FakeTensor> o;
    kohya(o, "lora_unet_blocks_0_self_attn_q", pair(1536, 1536, 11));
    kohya(o, "lora_unet_blocks_1_cross_attn_v", pair(1536, 1536, 12));
    ggdiff::testing::write_safetensors(dir + "/k.safetensors", o);
    std::vector<std::string> model = wan::model_args();
    model.insert(model.end(), {"--high-noise-diffusion-model", expert, "--lora-model-dir", dir});
    auto run = [&](const std::string& name, const std::string& tag) {
        std::vector<std::string> args = model;
        args.insert(args.end(), {"-p",
                                 "a lighthouse at dusk" + tag,
                                 "-W",
                                 "64",
                                 "-H",
                                 "64",
                                 "--video-frames",
                                 "1",
                                 "--steps",
                                 "2",
                                 "--high-noise-steps",
                                 "1",
                                 "--cfg-scale",
                                 "1",
                                 "--high-noise-cfg-scale",
                                 "1",
                                 "-s",
                                 "9",
                                 "-o",
                                 dir + "/" + name + ".png"});
        return run_ggdiff(args, dir, 900);
    };
    const RunResult plain = run("plain", "");
    ASSERT_TRUE(plain.succeeded()) << plain.describe();
    const RunResult high = run("high", "<lora:|high_noise|k:1>");
    ASSERT_TRUE(high.succeeded()) << high.describe();
    EXPECT_FALSE(contains(high.err, "match no weight")) << high.err;
    const RunResult low = run("low", "<lora:k:1>");
    ASSERT_TRUE(low.succeeded()) << low.describe();
    const double d_high = compare_images(dir + "/high.png", dir + "/plain.png").mean_abs;
    const double d_low = compare_images(dir + "/low.png", dir + "/plain.png").mean_abs;
    const double d_both = compare_images(dir + "/high.png", dir + "/low.png").mean_abs;
    // The expert samples only the first (noisiest) step of three, so its LoRA moves the
    // final frame less (0.24 when written) than the model's (0.70).
    EXPECT_GT(d_high, 0.1) << "the high-noise LoRA changed nothing";
    EXPECT_GT(d_low, 0.5) << "the LoRA changed nothing";
    EXPECT_GT(d_both, 0.5) << "both tags patched the same model";
    std::printf("high-noise LoRA %.3f, LoRA %.3f, between them %.3f\n", d_high, d_low, d_both);

    std::vector<std::string> args = wan::model_args();
    args.insert(args.end(), {"--lora-model-dir", dir, "-p", "x<lora:|high_noise|k:1>", "-W", "64",
                             "-H", "64", "--steps", "1", "-o", dir + "/none.png"});
    const RunResult none = run_ggdiff(args, dir, 900);
    EXPECT_FALSE(none.succeeded());
    EXPECT_TRUE(contains(none.err, "no high-noise expert")) << none.describe();
}

}  // namespace
}  // namespace ggdiff::e2e
