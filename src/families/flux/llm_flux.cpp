#include "families/flux/llm_flux.h"

#include "core/log.h"
#include "families/flux/denoiser.h"
#include "families/flux/names.h"
#include "pipeline/parts/kl_autoencoder.h"
#include "pipeline/parts/llm_encoder.h"

namespace ggdiff {

namespace {
constexpr const char* kLlm = "text_encoders.llm.";
}

Result<LlmFluxParts> detect_llm_flux_parts(const FamilyContext& ctx, const models::FluxConfig& dit,
                                           const std::string& encoder,
                                           const std::string& encoder_file) {
    const std::string name = ctx.recipe->display;
    if (!ctx.index.has_prefix(kLlm)) {
        return Status::Error(name + " needs its text encoder (" + encoder +
                             "): pass it with --llm " + encoder_file);
    }
    LlmFluxParts parts;
    auto llm = models::detect_qwen_llm(ctx.index, kLlm);
    if (!llm.ok()) return llm.status().with_context("--llm");
    if (llm->hidden != dit.context_dim) {
        return Status::Error(string_format(
            "the text encoder is %lld wide, the DiT's txt_in takes %lld: not %s's %s",
            (long long)llm->hidden, (long long)dit.context_dim, name.c_str(), encoder.c_str()));
    }
    parts.llm = *llm;
    if (!ctx.index.has_prefix("first_stage_model.")) {
        return Status::Error(name +
                             " needs FLUX.1's 16-channel VAE (ae.safetensors): pass it with "
                             "--vae FILE");
    }
    auto vae = models::detect_vae(ctx.index);
    if (!vae.ok()) return vae.status();
    if (vae->z_channels != dit.latent_channels()) {
        return Status::Error(string_format(
            "the VAE has %d latent channels but the DiT takes %lld (%s needs FLUX.1's "
            "16-channel VAE, ae.safetensors)",
            vae->z_channels, (long long)dit.latent_channels(), name.c_str()));
    }
    parts.vae = *vae;
    parts.vae.scale_factor = 0.3611f;
    parts.vae.shift_factor = 0.1159f;
    auto tokenizer = load_llm_tokenizer(ctx);
    if (!tokenizer.ok()) return tokenizer.status();
    parts.tokenizer = *tokenizer;
    return parts;
}

Status add_llm_flux_parts(const FamilyContext& ctx, const models::FluxConfig& dit,
                          const LlmFluxParts& parts, Family& f) {
    f.latent_channels = static_cast<int>(dit.latent_channels());
    f.latent_rgb = LatentRgb::Flux;
    f.uses_cfg = true;
    f.uses_guidance = false;
    f.ref_image_multiple = 16;
    f.skips_layers = true;
    f.skip_layer_count = dit.depth + dit.depth_single;

    auto denoiser = FluxDenoiser::create(ctx, ctx.placement.diffusion, dit);
    if (!denoiser.ok()) return denoiser.status();
    f.lora_targets.push_back(flux_lora_target((*denoiser)->runner(), dit.prefix));
    f.denoiser = std::move(*denoiser);

    auto ae = make_sd_autoencoder(ctx, parts.vae);
    if (!ae.ok()) return ae.status();
    f.vae = std::move(*ae);
    return Status::Ok();
}

}  // namespace ggdiff
