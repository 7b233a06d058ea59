// The Z-Image recipe (Z-Image Turbo and its base): the Qwen3 language model as text encoder
// with the plain chat template (every token kept; the caption features are the hidden states
// after layer 35 when the model has that many layers, else its final normed output), the
// Z-Image DiT on the rectified-flow schedule with shift 3, and the 16-channel FLUX VAE
// (latent scale 0.3611, shift 0.1159). Turbo is distilled: cfg 1 by default, which runs no
// unconditional pass; --cfg-scale above 1 runs real CFG with the negative prompt.
#include <string>

#include "core/log.h"
#include "families/z_image/denoiser.h"
#include "families/z_image/dit.h"
#include "families/z_image/names.h"
#include "models/te/qwen_llm.h"
#include "pipeline/family.h"
#include "pipeline/parts/kl_autoencoder.h"
#include "pipeline/parts/llm_encoder.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";
constexpr const char* kLlm = "text_encoders.llm.";
constexpr const char* kVae = "first_stage_model.";

// Caption features: the hidden states after this many layers (the reference engines take
// the second-to-last of Qwen3-4B's 36), or the final normed output of a shallower model.
constexpr int kCaptionLayers = 35;

bool detect(const TensorIndex& index) {
    return models::is_z_image(index, kDit);
}

ChatTemplate z_image_template(const models::QwenLlmConfig& llm) {
    ChatTemplate t;
    t.prefix = "<|im_start|>user\n";
    t.suffix = "<|im_end|>\n<|im_start|>assistant\n";
    t.drop_tokens = 0;
    if (llm.layers >= kCaptionLayers) t.out_layers = {kCaptionLayers - 1};
    return t;
}

Result<Family> load(const FamilyContext& ctx) {
    // Everything is checked before any weight is read: configs, the VAE, the tokenizer.
    auto dit = models::detect_z_image(ctx.index, kDit);
    if (!dit.ok()) return dit.status();
    if (!ctx.index.has_prefix(kLlm)) {
        return Status::Error(
            "Z-Image needs its Qwen3 text encoder: pass --llm qwen_3_4b.safetensors");
    }
    auto llm = models::detect_qwen_llm(ctx.index, kLlm);
    if (!llm.ok()) return llm.status().with_context("--llm");
    if (llm->hidden != dit->cap_width) {
        return Status::Error(string_format(
            "the text encoder is %lld wide, the Z-Image DiT's cap_embedder takes %lld: not "
            "Z-Image's encoder (Qwen3-4B)",
            (long long)llm->hidden, (long long)dit->cap_width));
    }
    auto vae = detect_flux1_image_vae(ctx, kVae, "Z-Image", dit->latent_channels);
    if (!vae.ok()) return vae.status();
    auto tokenizer = load_llm_tokenizer(ctx);
    if (!tokenizer.ok()) return tokenizer.status();

    Family f;
    f.param = sampling::Parameterization::flow(3.0f);
    f.defaults.sampler = "euler";
    f.defaults.cfg_scale = 1.0f;
    f.defaults.width = f.defaults.height = 1024;
    f.latent_channels = static_cast<int>(dit->latent_channels);
    f.latent_rgb = LatentRgb::Flux;
    f.uses_cfg = true;  // --cfg-scale > 1 runs real CFG with the negative prompt
    const ChatTemplate tmpl = z_image_template(*llm);
    GGDIFF_LOG_INFO(
        "Z-Image: DiT %lld wide, %lld layers (+%lld noise / %lld context refiners), %lld heads; "
        "Qwen3 %lld wide, %lld layers (caption features: %s)",
        (long long)dit->width, (long long)dit->layers, (long long)dit->noise_refiners,
        (long long)dit->context_refiners, (long long)dit->heads, (long long)llm->hidden,
        (long long)llm->layers,
        tmpl.last_layer() >= 0 ? string_format("after layer %d", tmpl.last_layer() + 1).c_str()
                               : "final norm");

    auto encoder = LlmTextEncoder::create(ctx, ctx.placement.te, *llm, *tokenizer, "LLM", tmpl);
    if (!encoder.ok()) return encoder.status();
    f.text = std::make_unique<LlmConditioner>(std::move(*encoder), tmpl);

    auto denoiser = ZImageDenoiser::create(ctx, ctx.placement.diffusion, *dit);
    if (!denoiser.ok()) return denoiser.status();
    f.denoiser = std::move(*denoiser);

    auto ae = make_sd_autoencoder(ctx, *vae);
    if (!ae.ok()) return ae.status();
    f.vae = std::move(*ae);
    return f;
}

}  // namespace

extern const FamilyRecipe kZImageRecipe = {
    "z_image",
    "Z-Image",
    "model.diffusion_model.cap_embedder.0.weight and x_embedder.weight",
    detect,
    load,
    nullptr,
    &kZImageLayout,
    {"layers"},
    /*circular=*/true};

}  // namespace ggdiff
