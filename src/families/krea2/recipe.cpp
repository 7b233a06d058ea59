// The Krea2 recipe (Krea's Krea 2 image model): its DiT (families/krea2/dit.h) conditioned by the
// language model of Qwen3-VL-4B (--llm; its vision tower is not used), and the Wan 2.1 VAE (Qwen
// Image's, 16 latent channels). As stable-diffusion.cpp (38a51f81) runs it:
// - the prompt in the user turn after a describe-the-image system prompt, then the assistant
//   turn's opening; emphasis weights on the prompt's tokens; the hidden states after layers 2,
//   5, 8, ..., 35 (1-based; those the model has) stacked per token; the template's first 34
//   tokens dropped. Qwen3-VL's text RoPE is plain RoPE with theta 5,000,000;
// - FLUX's flow prediction (the model's time is sigma) with shift (mu) 1.15 on the discrete
//   schedule, euler, cfg 7 with the negative prompt, 512x512 when no size is given.
#include <string>
#include <vector>

#include "core/log.h"
#include "families/krea2/dit.h"
#include "families/krea2/names.h"
#include "models/te/qwen_llm.h"
#include "models/vae/wan_vae.h"
#include "pipeline/family.h"
#include "pipeline/parts/llm_encoder.h"
#include "pipeline/parts/wan_autoencoder.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";
constexpr const char* kLlm = "text_encoders.llm.";
constexpr const char* kVae = "first_stage_model.";
constexpr float kShift = 1.15f;

bool detect(const TensorIndex& index) {
    return models::is_krea2(index, kDit);
}

// The states Krea2 reads: after layers 2, 5, ..., 35 (1-based) of those the LLM has.
ChatTemplate krea2_template(const models::QwenLlmConfig& llm) {
    ChatTemplate t;
    t.prefix =
        "<|im_start|>system\nDescribe the image by detailing the color, shape, size, texture, "
        "quantity, text, spatial relationships of the objects and background:<|im_end|>\n"
        "<|im_start|>user\n";
    t.suffix = "<|im_end|>\n<|im_start|>assistant\n";
    t.drop_tokens = 34;
    for (int layer = 2; layer <= 35 && layer <= llm.layers; layer += 3) {
        t.out_layers.push_back(layer - 1);
    }
    return t;
}

Result<Family> load(const FamilyContext& ctx) {
    // Everything is checked before any weight is read: configs, the VAE, the tokenizer.
    auto dit = models::detect_krea2(ctx.index, kDit);
    if (!dit.ok()) return dit.status();
    const std::string& pred = ctx.options.prediction;
    if (!pred.empty() && pred != "flux_flow") {
        return Status::Error("--prediction " + pred +
                             " does not apply to Krea2 models (they predict flux_flow)");
    }
    if (!ctx.index.has_prefix(kLlm)) {
        return Status::Error(
            "Krea2 needs its text encoder, Qwen3-VL-4B's language model: pass it with --llm "
            "FILE");
    }
    auto llm = models::detect_qwen_llm(ctx.index, kLlm);
    if (!llm.ok()) return llm.status().with_context("--llm");
    llm->rope_theta = 5000000.0f;  // Qwen3-VL's
    const ChatTemplate tmpl = krea2_template(*llm);
    if (!llm->qk_norm || llm->hidden != dit->text_width ||
        static_cast<int64_t>(tmpl.out_layers.size()) != dit->text_states) {
        return Status::Error(string_format(
            "--llm: a %s %lld wide with %lld layers (%zu of the states Krea2 stacks); the Krea2 "
            "DiT reads %lld states %lld wide (Qwen3-VL-4B's language model: 36 layers, 2560 "
            "wide)",
            llm->qk_norm ? "Qwen3" : "Qwen2-type LLM", (long long)llm->hidden,
            (long long)llm->layers, tmpl.out_layers.size(), (long long)dit->text_states,
            (long long)dit->text_width));
    }
    auto vae = detect_wan21_image_vae(ctx, kVae, "Krea2", dit->channels);
    if (!vae.ok()) return vae.status();
    auto tokenizer = load_llm_tokenizer(ctx);
    if (!tokenizer.ok()) return tokenizer.status();

    Family f;
    f.param = sampling::Parameterization::flux_flow(kShift);
    f.defaults.sampler = "euler";
    f.defaults.cfg_scale = 7.0f;
    f.latent_channels = static_cast<int>(dit->channels);
    f.latent_rgb = LatentRgb::Wan21;
    f.uses_cfg = true;
    GGDIFF_LOG_INFO(
        "Krea2: DiT %lld wide, %lld blocks, %lld heads of %lld (%lld key/value); text fusion "
        "%lld wide over %lld states; Qwen3 %lld wide, %lld layers",
        (long long)dit->width, (long long)dit->layers, (long long)dit->heads,
        (long long)dit->head_dim, (long long)dit->kv_heads, (long long)dit->text_width,
        (long long)dit->text_states, (long long)llm->hidden, (long long)llm->layers);

    auto encoder = LlmTextEncoder::create(ctx, ctx.placement.te, *llm, *tokenizer, "LLM", tmpl);
    if (!encoder.ok()) return encoder.status();
    f.text = std::make_unique<LlmConditioner>(std::move(*encoder), tmpl);

    auto denoiser = Krea2Denoiser::create(ctx, ctx.placement.diffusion, *dit);
    if (!denoiser.ok()) return denoiser.status();
    f.lora_targets.push_back(krea2_lora_target((*denoiser)->runner()));
    f.denoiser = std::move(*denoiser);

    auto ae = WanAutoencoder::create(ctx, ctx.placement.vae, *vae);
    if (!ae.ok()) return ae.status();
    f.vae = std::move(*ae);
    return f;
}

}  // namespace

extern const FamilyRecipe kKrea2Recipe = {
    "krea2",
    "Krea2",
    "model.diffusion_model.txtfusion.projector.weight (or text_fusion.projector.weight in the "
    "diffusers names)",
    detect,
    load,
    "diffusion-model,llm,vae",
    &kKrea2Layout,
    // The text fusion's blocks run first: they are a large part of the DiT (690 MB in f16 at
    // the real width), so layer split and --max-vram place them like the main blocks.
    {"layerwise_blocks", "refiner_blocks", "blocks"}};

}  // namespace ggdiff
