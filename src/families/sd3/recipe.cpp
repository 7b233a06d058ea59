// The SD3 / SD3.5 recipe (SD3 Medium, SD3.5 Medium / Large / Large Turbo): CLIP-L, OpenCLIP
// bigG and T5-XXL give the token context and the pooled vector (families/sd3/text.h), the
// MMDiT predicts the flow velocity on the rectified-flow schedule with shift 3 (--flow-shift
// changes it), the 16-channel SD3 VAE decodes (latent scale 1.5305, shift 0.0609).
// Defaults as the reference engine's: euler, cfg 7, 512x512, clip skip 2. Skip-layer
// guidance (--slg-scale) skips joint blocks.
#include <string>

#include "core/log.h"
#include "families/sd3/denoiser.h"
#include "families/sd3/names.h"
#include "families/sd3/text.h"
#include "pipeline/family.h"
#include "pipeline/parts/kl_autoencoder.h"
#include "pipeline/parts/lora_targets.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";
constexpr const char* kT5 = "text_encoders.t5xxl.";
constexpr float kLatentScale = 1.5305f;
constexpr float kLatentShift = 0.0609f;

// Where each CLIP encoder's HF-layout "text_model." lives, whether it came as a split file
// (--clip_l, --clip_g), inside a single-file checkpoint or from a diffusers folder.
constexpr const char* kClipL = "text_encoders.clip_l.text_model.";
constexpr const char* kClipG = "text_encoders.clip_g.text_model.";

bool detect(const TensorIndex& index) {
    const std::string d = kDit;
    return index.has(d + "x_embedder.proj.weight") &&
           (index.has(d + "joint_blocks.0.x_block.attn.qkv.weight") ||
            index.has(d + "joint_blocks.0.x_block.attn.q.weight"));
}

// The config of the CLIP encoder under `prefix`, nullopt when the files have none.
Result<std::optional<models::ClipTextConfig>> find_clip(const TensorIndex& index,
                                                        const std::string& prefix,
                                                        const char* flag) {
    if (!index.has_prefix(prefix)) return std::optional<models::ClipTextConfig>();
    auto cfg = models::detect_clip_text(index, prefix);
    if (!cfg.ok()) return cfg.status().with_context(flag);
    return std::optional<models::ClipTextConfig>(*cfg);
}

Result<Family> load(const FamilyContext& ctx) {
    // Everything is checked before any weight is read.
    auto dit = models::detect_sd3(ctx.index, kDit);
    if (!dit.ok()) return dit.status();
    auto clip_l = find_clip(ctx.index, kClipL, "--clip_l");
    if (!clip_l.ok()) return clip_l.status();
    auto clip_g = find_clip(ctx.index, kClipG, "--clip_g");
    if (!clip_g.ok()) return clip_g.status();
    std::optional<models::T5Config> t5cfg;
    if (ctx.index.has_prefix(kT5)) {
        auto t = models::detect_t5(ctx.index, kT5);
        if (!t.ok()) return t.status().with_context("--t5xxl");
        t5cfg = *t;
    }
    if (!*clip_l && !*clip_g && !t5cfg) {
        return Status::Error(
            "SD3 needs its text encoders: pass --clip_l clip_l.safetensors --clip_g "
            "clip_g.safetensors --t5xxl t5xxl_fp16.safetensors (or a checkpoint that holds them)");
    }
    if (!ctx.index.has_prefix("first_stage_model.")) {
        return Status::Error(
            "SD3 needs its 16-channel VAE: the checkpoint has none (pass it with --vae "
            "sd3_vae.safetensors)");
    }
    auto vae = models::detect_vae(ctx.index);
    if (!vae.ok()) return vae.status().with_context("--vae");
    if (vae->z_channels != dit->in_channels) {
        return Status::Error(string_format(
            "the VAE has %d latent channels but the SD3 MMDiT takes %lld (SD3 needs its own "
            "16-channel VAE)",
            vae->z_channels, (long long)dit->in_channels));
    }
    vae->scale_factor = kLatentScale;
    vae->shift_factor = kLatentShift;
    if (t5cfg && t5cfg->width != dit->context_dim) {
        return Status::Error(string_format(
            "the T5 encoder is %lld wide, the SD3 MMDiT's context_embedder takes %lld: not "
            "SD3's T5-XXL",
            (long long)t5cfg->width, (long long)dit->context_dim));
    }
    if (*clip_l) (*clip_l)->projection = models::ClipTextConfig::Projection::None;
    if (*clip_g && (*clip_g)->projection == models::ClipTextConfig::Projection::None) {
        return Status::Error("--clip_g: missing tensor " + (*clip_g)->prefix +
                             "../text_projection.weight (bigG's pooled output projection)");
    }
    const int64_t pooled = (*clip_l ? (*clip_l)->width : Sd3Conditioner::kClipLWidth) +
                           (*clip_g ? (*clip_g)->projection_dim : Sd3Conditioner::kClipGWidth);
    if (dit->pooled_dim > 0 && pooled != dit->pooled_dim) {
        return Status::Error(string_format(
            "the CLIP encoders pool %lld values but the SD3 MMDiT's y_embedder takes %lld",
            (long long)pooled, (long long)dit->pooled_dim));
    }

    Family f;
    if (dit->mmdit_x_blocks() > 0) {
        f.variant = "3.5 medium";
    } else if (dit->qk_norm != models::Sd3Config::QkNorm::None) {
        f.variant = dit->depth >= 38 ? "3.5 large" : "3.5";
    } else if (dit->depth == 24) {
        f.variant = "3 medium";
    }
    f.param = sampling::Parameterization::flow(3.0f);
    f.defaults.sampler = "euler";
    f.defaults.cfg_scale = 7.0f;
    f.defaults.clip_skip = 2;
    f.latent_channels = static_cast<int>(dit->in_channels);
    f.latent_rgb = LatentRgb::Sd3;
    f.skips_layers = true;
    f.skip_layer_count = dit->depth;
    const char* qk = dit->qk_norm == models::Sd3Config::QkNorm::Rms     ? "RMS"
                     : dit->qk_norm == models::Sd3Config::QkNorm::Layer ? "LayerNorm"
                                                                        : "no";
    GGDIFF_LOG_INFO(
        "SD3 MMDiT: %d joint blocks (%d MMDiT-X), hidden %lld, %lld heads, %s q/k norm; text "
        "encoders: %s%s%s",
        dit->depth, dit->mmdit_x_blocks(), (long long)dit->hidden, (long long)dit->heads, qk,
        *clip_l ? "CLIP-L " : "", *clip_g ? "bigG " : "", t5cfg ? "T5-XXL" : "");
    if (!*clip_l) GGDIFF_LOG_WARN("SD3 without CLIP-L (--clip_l): its features are zeros");
    if (!*clip_g) GGDIFF_LOG_WARN("SD3 without OpenCLIP bigG (--clip_g): its features are zeros");
    if (!t5cfg) GGDIFF_LOG_WARN("SD3 without T5-XXL (--t5xxl): its tokens are zeros");

    auto tokenizer = load_clip_tokenizer(ctx);
    if (!tokenizer.ok()) return tokenizer.status();
    std::unique_ptr<ClipTextEncoder> enc_l, enc_g;
    std::unique_ptr<T5TextEncoder> enc_t5;
    // CLIP-L stays on the text module's first device; bigG and T5 take a layer split.
    if (*clip_l) {
        auto e = ClipTextEncoder::create(ctx, ctx.placement.te.first_device_only(), **clip_l,
                                         *tokenizer, 49407, "CLIP-L", ClipPooled::Also);
        if (!e.ok()) return e.status();
        enc_l = std::move(*e);
        f.lora_targets.push_back(clip_lora_target(*enc_l, "CLIP-L", {"te1", "text_encoder"}));
    }
    if (*clip_g) {
        auto e = ClipTextEncoder::create(ctx, ctx.placement.te, **clip_g, *tokenizer, 0,
                                         "OpenCLIP bigG", ClipPooled::Also);
        if (!e.ok()) return e.status();
        enc_g = std::move(*e);
        f.lora_targets.push_back(
            clip_lora_target(*enc_g, "OpenCLIP bigG", {"te2", "text_encoder_2"}));
    }
    if (t5cfg) {
        auto t5_tok = load_t5_tokenizer(ctx);
        if (!t5_tok.ok()) return t5_tok.status();
        auto e = T5TextEncoder::create(ctx, ctx.placement.te, *t5cfg, *t5_tok, 77);
        if (!e.ok()) return e.status();
        enc_t5 = std::move(*e);
    }
    f.text = std::make_unique<Sd3Conditioner>(std::move(enc_l), std::move(enc_g), std::move(enc_t5),
                                              *tokenizer, dit->context_dim, f.defaults.clip_skip);

    auto denoiser = Sd3Denoiser::create(ctx, ctx.placement.diffusion, *dit);
    if (!denoiser.ok()) return denoiser.status();
    f.lora_targets.push_back(sd3_lora_target((*denoiser)->runner()));
    f.denoiser = std::move(*denoiser);

    auto ae = make_sd_autoencoder(ctx, *vae);
    if (!ae.ok()) return ae.status();
    f.vae = std::move(*ae);
    return f;
}

}  // namespace

extern const FamilyRecipe kSd3Recipe = {
    "sd3",
    "SD3",
    "model.diffusion_model.joint_blocks.0.x_block.attn.qkv (or .q).weight and "
    "x_embedder.proj.weight",
    detect,
    load,
    "vae,clip_l,clip_g,t5xxl",
    &kSd3Layout,
    {"joint_blocks"},
    /*circular=*/true};

}  // namespace ggdiff
