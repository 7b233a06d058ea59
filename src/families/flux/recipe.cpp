// The FLUX.1 recipe (dev and schnell): CLIP-L gives the pooled vector, T5-XXL the token
// context, the FLUX DiT predicts the flow velocity (guidance-distilled: cfg 1 by default,
// --guidance 3.5 into the guidance embedding of dev), the 16-channel VAE decodes
// (latent scale 0.3611, shift 0.1159). The default schedule is stable-diffusion.cpp's flux
// schedule: evenly spaced levels shifted by mu = 0.5 .. 1.15 by the latent's pixel count
// (256 .. 4096); other schedules use mu 1.15 (dev) or 1.0 (schnell). --flow-shift sets mu.
// FLUX.1 Kontext is a dev checkpoint that reads reference images: as in stable-diffusion.cpp,
// every FLUX.1 model takes -r, the references' (sampled) latents joining the DiT's sequence.
#include <optional>
#include <string>

#include "core/log.h"
#include "families/flux/denoiser.h"
#include "families/flux/names.h"
#include "pipeline/family.h"
#include "pipeline/parts/clip_encoder.h"
#include "pipeline/parts/kl_autoencoder.h"
#include "pipeline/parts/lora_targets.h"
#include "pipeline/parts/t5_encoder.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";
constexpr const char* kClipL = "text_encoders.clip_l.text_model.";
constexpr const char* kT5 = "text_encoders.t5xxl.";

bool detect(const TensorIndex& index) {
    const std::string d = kDit;
    return index.has(d + "img_in.weight") &&
           (index.has(d + "double_blocks.0.img_attn.qkv.weight") ||
            index.has(d + "double_blocks.0.img_attn.q.weight"));
}

// CLIP-L pools, T5 gives the tokens.
class FluxConditioner : public TextConditioner {
  public:
    FluxConditioner(std::unique_ptr<ClipTextEncoder> clip, std::unique_ptr<T5TextEncoder> t5)
        : clip_(std::move(clip)), t5_(std::move(t5)) {}

    Result<Conditioning> encode(const TextRequest& request) override {
        Conditioning c;
        auto pooled = clip_->encode_pooled(request.prompt);
        if (!pooled.ok()) return pooled.status().with_context("CLIP-L");
        auto context = t5_->encode(request.prompt);
        if (!context.ok()) return context.status().with_context("T5");
        c.pooled = std::move(*pooled);
        c.context = std::move(*context);
        return c;
    }
    // The CLIP window limit bounds T5's 256-token chunks as well (both count about one token
    // per word piece), so a huge prompt is refused before either encoder runs.
    Status check(const TextRequest& request) const override {
        return clip_->check(request.prompt,
                            request.negative ? "the negative prompt" : "the prompt");
    }
    void end_phase() override {
        clip_->end_phase();
        t5_->end_phase();
    }

  private:
    std::unique_ptr<ClipTextEncoder> clip_;
    std::unique_ptr<T5TextEncoder> t5_;
};

Result<Family> load(const FamilyContext& ctx) {
    auto dit = models::detect_flux(ctx.index, kDit);
    if (!dit.ok()) return dit.status();
    if (!ctx.index.has_prefix(kT5)) {
        return Status::Error("FLUX needs the T5-XXL text encoder: pass it with --t5xxl FILE");
    }
    if (!ctx.index.has_prefix(kClipL)) {
        return Status::Error("FLUX needs the CLIP-L text encoder: pass it with --clip_l FILE");
    }
    if (!ctx.index.has_prefix("first_stage_model.")) {
        return Status::Error(
            "FLUX needs its 16-channel VAE (ae.safetensors): pass it with --vae FILE");
    }
    auto t5cfg = models::detect_t5(ctx.index, kT5);
    if (!t5cfg.ok()) return t5cfg.status().with_context("--t5xxl");
    auto clip = models::detect_clip_text(ctx.index, kClipL);
    if (!clip.ok()) return clip.status().with_context("--clip_l");
    // FLUX takes CLIP-L's unprojected pooled state (ComfyUI's clip_l.safetensors carries a
    // text_projection.weight that the reference pipelines leave unused for FLUX).
    clip->projection = models::ClipTextConfig::Projection::None;
    auto vae = models::detect_vae(ctx.index);
    if (!vae.ok()) return vae.status();

    if (t5cfg->width != dit->context_dim) {
        return Status::Error(string_format(
            "the T5 encoder's width %lld does not match the FLUX DiT's text input (txt_in takes "
            "%lld)",
            (long long)t5cfg->width, (long long)dit->context_dim));
    }
    if (vae->z_channels != dit->latent_channels()) {
        return Status::Error(string_format(
            "the VAE has %d latent channels but the FLUX DiT takes %lld (FLUX needs its own "
            "16-channel VAE, ae.safetensors)",
            vae->z_channels, (long long)dit->latent_channels()));
    }
    vae->scale_factor = 0.3611f;
    vae->shift_factor = 0.1159f;

    Family f;
    f.variant = dit->guidance_embed ? "dev" : "schnell";
    f.param = sampling::Parameterization::flux_flow(dit->guidance_embed ? 1.15f : 1.0f);
    f.defaults.sampler = "euler";
    f.defaults.cfg_scale = 1.0f;
    f.defaults.schedule = sampling::ScheduleKind::Flux;
    f.latent_channels = static_cast<int>(dit->latent_channels());
    f.latent_rgb = LatentRgb::Flux;
    f.uses_cfg = true;  // --cfg-scale > 1 runs real CFG with the negative prompt
    f.uses_guidance = dit->guidance_embed;
    // Kontext: nothing in the file marks it; any FLUX.1 model takes -r reference images,
    // resized to about the output's pixel count in multiples of 16.
    f.ref_image_multiple = 16;
    // Skip-layer guidance numbers the double blocks first, then the single blocks.
    f.skips_layers = true;
    f.skip_layer_count = dit->depth + dit->depth_single;
    GGDIFF_LOG_INFO("%s-%s: %d double and %d single blocks, hidden %lld, %lld heads",
                    ctx.recipe->display, f.variant.c_str(), dit->depth, dit->depth_single,
                    (long long)dit->hidden, (long long)dit->heads);

    // CLIP-L only pools: it stays on the text module's first device, T5 takes the split.
    const ModuleDevices clip_where = ctx.placement.te.first_device_only();
    auto clip_tok = load_clip_tokenizer(ctx);
    if (!clip_tok.ok()) return clip_tok.status();
    auto clip_enc = ClipTextEncoder::create(ctx, clip_where, *clip, *clip_tok, 49407, "CLIP-L",
                                            ClipPooled::Only);
    if (!clip_enc.ok()) return clip_enc.status();
    // kohya / sd-scripts FLUX LoRAs name CLIP-L "te1" (T5, "te2", takes none).
    f.lora_targets.push_back(clip_lora_target(**clip_enc, "CLIP-L", {"te1", "text_encoder"}));
    const int64_t pooled_width = (*clip_enc)->pooled_width();
    if (dit->vec_in_dim > 0 && pooled_width != dit->vec_in_dim) {
        return Status::Error(string_format(
            "the CLIP-L encoder pools %lld values but the FLUX DiT's vector_in takes %lld",
            (long long)pooled_width, (long long)dit->vec_in_dim));
    }
    auto t5_tok = load_t5_tokenizer(ctx);
    if (!t5_tok.ok()) return t5_tok.status();
    auto t5 = T5TextEncoder::create(ctx, ctx.placement.te, *t5cfg, *t5_tok);
    if (!t5.ok()) return t5.status();
    f.text = std::make_unique<FluxConditioner>(std::move(*clip_enc), std::move(*t5));

    // PuLID-FLUX: its modules run inside the DiT, on its devices.
    std::optional<models::PulidConfig> pulid;
    if (!ctx.options.pulid_weights.empty()) {
        auto pc = models::detect_pulid(ctx.index, prefix_for_role("pulid-weights"), *dit);
        if (!pc.ok())
            return pc.status().with_context("--pulid-weights " + ctx.options.pulid_weights);
        pulid = *pc;
        GGDIFF_LOG_INFO(
            "PuLID-FLUX: %d identity cross-attention modules (%d heads, identity tokens "
            "of %lld); they act with --pulid-id-embedding",
            pulid->modules, pulid->heads, (long long)pulid->id_dim);
        f.identity = [cfg = *pulid](const GenerateOptions& o) {
            return models::load_pulid_embedding(o.pulid_id_embedding, cfg);
        };
    }
    auto denoiser = FluxDenoiser::create(ctx, ctx.placement.diffusion, *dit, pulid);
    if (!denoiser.ok()) return denoiser.status();
    f.lora_targets.push_back(flux_lora_target((*denoiser)->runner(), dit->prefix));
    f.denoiser = std::move(*denoiser);

    auto ae = make_sd_autoencoder(ctx, *vae);
    if (!ae.ok()) return ae.status();
    f.vae = std::move(*ae);
    return f;
}

}  // namespace

extern const FamilyRecipe kFluxRecipe = {
    "flux",
    "FLUX.1",
    "model.diffusion_model.img_in.weight and double_blocks.0.img_attn.qkv (or .q).weight",
    detect,
    load,
    nullptr,
    &kFluxLayout,
    {"double_blocks", "single_blocks"},
    /*circular=*/true};

}  // namespace ggdiff
