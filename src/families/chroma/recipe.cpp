// Chroma (an open FLUX.1-schnell derivative): T5-XXL alone conditions it (no CLIP, no
// pooled vector), its DiT takes every modulation vector from the distilled_guidance_layer
// approximator (families/chroma/dit.h), FLUX.1's 16-channel VAE decodes. It is not
// guidance-distilled: real CFG with the negative prompt, --guidance has no input.
// As in stable-diffusion.cpp, T5 always sees 512 tokens (prompt, EOS, padding) and the DiT
// masks the padding after the first --chroma-t5-mask-pad pads (--chroma-disable-dit-mask:
// no mask); --chroma-enable-t5-mask masks the padding inside T5 as well. Defaults are the
// reference's: euler, cfg 7, the FLUX schedule (shift 1.0 for the others).
// Chroma1-Radiance (a second recipe here) is the same DiT in pixel space: it patches RGB
// pixels (16x16) and decodes them with its NeRF head (families/chroma/radiance.h); there is
// no VAE, and the FLUX schedule counts the image's pixels.
#include <cmath>
#include <string>

#include "core/log.h"
#include "families/chroma/denoiser.h"
#include "families/chroma/names.h"
#include "pipeline/family.h"
#include "pipeline/parts/kl_autoencoder.h"
#include "pipeline/parts/lora_targets.h"
#include "pipeline/parts/pixel_space.h"
#include "pipeline/parts/t5_encoder.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";
constexpr const char* kT5 = "text_encoders.t5xxl.";
// T5's sequence for Chroma: prompt tokens + EOS padded to 512 (longer prompts take more
// chunks of 512).
constexpr int kChromaT5Tokens = 512;

bool detect(const TensorIndex& index) {
    const std::string d = kDit;
    return index.has(d + "distilled_guidance_layer.in_proj.weight") &&
           index.has(d + "img_in.weight");
}

bool detect_radiance(const TensorIndex& index) {
    const std::string d = kDit;
    return index.has(d + "distilled_guidance_layer.in_proj.weight") &&
           index.has(d + "nerf_final_layer_conv.conv.weight");
}

class ChromaConditioner : public TextConditioner {
  public:
    ChromaConditioner(std::unique_ptr<T5TextEncoder> t5, const ModelOptions& o)
        : t5_(std::move(t5)),
          dit_mask_(o.chroma_dit_mask),
          t5_mask_(o.chroma_t5_mask),
          mask_pad_(o.chroma_t5_mask_pad) {}

    Result<Conditioning> encode(const TextRequest& request) override {
        auto r = t5_->encode_masked(request.prompt, t5_mask_);
        if (!r.ok()) return r.status().with_context("T5");
        Conditioning c;
        c.context = std::move(r->hidden);
        if (dit_mask_) {
            // The padding is hidden from the DiT except its first mask_pad tokens.
            const int64_t n = static_cast<int64_t>(r->real.size());
            c.key_mask = HostTensor({n});
            int kept = 0;
            for (int64_t i = 0; i < n; ++i) {
                const bool pad = !r->real[static_cast<size_t>(i)];
                if (pad && kept < mask_pad_) {
                    ++kept;
                } else if (pad) {
                    c.key_mask.data[static_cast<size_t>(i)] = -INFINITY;
                }
            }
        }
        return c;
    }
    void end_phase() override { t5_->end_phase(); }

  private:
    std::unique_ptr<T5TextEncoder> t5_;
    bool dit_mask_, t5_mask_;
    int mask_pad_;
};

Result<Family> load(const FamilyContext& ctx) {
    auto dit = models::detect_chroma(ctx.index, kDit);
    if (!dit.ok()) return dit.status();
    const char* name = ctx.recipe->display;
    if (!ctx.index.has_prefix(kT5)) {
        return Status::Error(std::string(name) +
                             " needs the T5-XXL text encoder: pass it with --t5xxl FILE");
    }
    if (dit->radiance && ctx.index.has_prefix("first_stage_model.")) {
        return Status::Error(
            "Chroma1-Radiance works on pixels and has no VAE: leave --vae (and the VAE "
            "weights) out");
    }
    if (!dit->radiance && !ctx.index.has_prefix("first_stage_model.")) {
        return Status::Error(
            "Chroma needs FLUX.1's 16-channel VAE (ae.safetensors): pass it with --vae FILE");
    }
    auto t5cfg = models::detect_t5(ctx.index, kT5);
    if (!t5cfg.ok()) return t5cfg.status().with_context("--t5xxl");
    if (t5cfg->width != dit->flux.context_dim) {
        return Status::Error(string_format(
            "the T5 encoder's width %lld does not match the Chroma DiT's text input (txt_in "
            "takes %lld)",
            (long long)t5cfg->width, (long long)dit->flux.context_dim));
    }

    Family f;
    if (dit->radiance) {
        f.variant = dit->rad.x0 ? "x0" : "";
        f.vae = std::make_unique<PixelSpace>();
    } else {
        auto vae = models::detect_vae(ctx.index);
        if (!vae.ok()) return vae.status();
        if (vae->z_channels != dit->flux.latent_channels()) {
            return Status::Error(string_format(
                "the VAE has %d latent channels but the Chroma DiT takes %lld (Chroma uses "
                "FLUX.1's 16-channel VAE, ae.safetensors)",
                vae->z_channels, (long long)dit->flux.latent_channels()));
        }
        vae->scale_factor = 0.3611f;
        vae->shift_factor = 0.1159f;
        auto ae = make_sd_autoencoder(ctx, *vae);
        if (!ae.ok()) return ae.status();
        f.vae = std::move(*ae);
    }
    f.param = sampling::Parameterization::flux_flow(1.0f);
    f.defaults.sampler = "euler";
    f.defaults.cfg_scale = 7.0f;
    f.defaults.schedule = sampling::ScheduleKind::Flux;
    f.latent_channels = static_cast<int>(dit->flux.latent_channels());
    // Chroma1-Radiance samples the image itself; Chroma uses FLUX.1's VAE.
    f.latent_rgb = dit->radiance ? LatentRgb::Pixels : LatentRgb::Flux;
    f.uses_cfg = true;
    f.uses_guidance = false;  // the approximator's guidance input is always 0
    // Not an edit model: -r is refused, and A1111 img2img stays img2img on the server (the
    // reference would join -r latents to the sequence as for Kontext).
    f.ref_image_multiple = 0;
    f.skips_layers = true;
    f.skip_layer_count = dit->flux.depth + dit->flux.depth_single;
    GGDIFF_LOG_INFO("%s: %d double and %d single blocks, hidden %lld, %lld heads%s",
                    ctx.recipe->display, dit->flux.depth, dit->flux.depth_single,
                    (long long)dit->flux.hidden, (long long)dit->flux.heads,
                    ctx.options.chroma_dit_mask ? "" : ", DiT mask off");

    auto t5_tok = load_t5_tokenizer(ctx);
    if (!t5_tok.ok()) return t5_tok.status();
    auto t5 = T5TextEncoder::create(ctx, ctx.placement.te, *t5cfg, *t5_tok, kChromaT5Tokens);
    if (!t5.ok()) return t5.status();
    f.text = std::make_unique<ChromaConditioner>(std::move(*t5), ctx.options);

    auto denoiser = ChromaDenoiser::create(ctx, ctx.placement.diffusion, *dit);
    if (!denoiser.ok()) return denoiser.status();
    f.lora_targets.push_back(chroma_lora_target((*denoiser)->runner(), dit->flux.prefix));
    f.denoiser = std::move(*denoiser);
    return f;
}

}  // namespace

extern const FamilyRecipe kChromaRecipe = {
    "chroma",
    "Chroma",
    "model.diffusion_model.distilled_guidance_layer.in_proj.weight and img_in.weight",
    detect,
    load,
    "vae,t5xxl",
    &kChromaLayout,
    {"double_blocks", "single_blocks"},
    /*circular=*/true};

extern const FamilyRecipe kChromaRadianceRecipe = {
    "chroma_radiance",
    "Chroma1-Radiance",
    "model.diffusion_model.distilled_guidance_layer.in_proj.weight and "
    "nerf_final_layer_conv.conv.weight",
    detect_radiance,
    load,
    "t5xxl",
    &kChromaLayout,
    {"double_blocks", "single_blocks"},
    /*circular=*/true};

}  // namespace ggdiff
