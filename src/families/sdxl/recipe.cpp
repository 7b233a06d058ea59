// The SDXL (base) recipe: CLIP ViT-L/14 + OpenCLIP ViT-bigG/14 (hidden states concatenated,
// bigG's pooled output and the size conditioning as the label input) -> LDM UNet with
// label_emb -> KL VAE with SDXL's latent scale.
#include <string>
#include <vector>

#include "core/log.h"
#include "families/sdxl/photomaker.h"
#include "io/name_util.h"
#include "pipeline/family.h"
#include "pipeline/parts/dual_clip_conditioner.h"
#include "pipeline/parts/kl_autoencoder.h"
#include "pipeline/parts/lora_targets.h"
#include "pipeline/parts/prediction.h"
#include "pipeline/parts/unet_denoiser.h"

namespace ggdiff {
namespace {

constexpr const char* kUnet = "model.diffusion_model.";
constexpr float kSdxlLatentScale = 0.13025f;

// Where each encoder's HF-layout "text_model." lives: single-file and diffusers checkpoints
// (conditioner.embedders.N.transformer.), split files (--clip_l / --clip_g), and
// stable-diffusion.cpp's own names.
const std::vector<const char*> kClipL = {"conditioner.embedders.0.transformer.text_model.",
                                         "text_encoders.clip_l.text_model.",
                                         "cond_stage_model.transformer.text_model."};
const std::vector<const char*> kClipG = {"conditioner.embedders.1.transformer.text_model.",
                                         "text_encoders.clip_g.text_model.",
                                         "cond_stage_model.1.transformer.text_model."};

bool detect(const TensorIndex& index) {
    return index.has(std::string(kUnet) + "input_blocks.0.0.weight") &&
           index.has(std::string(kUnet) + "label_emb.0.0.weight");
}

// The first prefix whose token embedding exists.
Result<models::ClipTextConfig> find_encoder(const TensorIndex& index,
                                            const std::vector<const char*>& prefixes,
                                            const char* what, const char* flag) {
    for (const char* p : prefixes) {
        if (index.has(std::string(p) + "embeddings.token_embedding.weight")) {
            auto cfg = models::detect_clip_text(index, p);
            if (!cfg.ok()) return cfg.status().with_context(what);
            return cfg;
        }
    }
    return Status::Error(std::string("SDXL needs the ") + what +
                         " text encoder: the checkpoint has none (pass it with " + flag + ")");
}

Result<Family> load(const FamilyContext& ctx) {
    auto unet = models::detect_unet(ctx.index);
    if (!unet.ok()) return unet.status();
    auto clip_l = find_encoder(ctx.index, kClipL, "CLIP-L", "--clip_l");
    if (!clip_l.ok()) return clip_l.status();
    auto clip_g = find_encoder(ctx.index, kClipG, "OpenCLIP bigG", "--clip_g");
    if (!clip_g.ok()) return clip_g.status();
    if (clip_g->projection == models::ClipTextConfig::Projection::None) {
        return Status::Error("OpenCLIP bigG text encoder: missing tensor " + clip_g->prefix +
                             "../text_projection (the pooled output's projection)");
    }
    auto vae = models::detect_vae(ctx.index);
    if (!vae.ok()) return vae.status();
    vae->scale_factor = kSdxlLatentScale;

    if (clip_l->width + clip_g->width != unet->context_dim) {
        return Status::Error(string_format(
            "text encoder widths %lld + %lld do not match the UNet's context width %d",
            static_cast<long long>(clip_l->width), static_cast<long long>(clip_g->width),
            unet->context_dim));
    }
    const int label_width = static_cast<int>(clip_g->projection_dim) + 6 * 256;
    if (unet->adm_in_channels != label_width) {
        return Status::Error(string_format(
            "the UNet's label input takes %d values; bigG's pooled output (%lld) and the size "
            "conditioning give %d",
            unet->adm_in_channels, static_cast<long long>(clip_g->projection_dim), label_width));
    }

    Family f;
    auto pred = family_prediction(ctx, ctx.recipe->display);
    if (!pred.ok()) return pred.status();
    f.param = sampling::Parameterization::discrete(*pred);
    f.arch = sampling::DenoiserArch::UNet;
    f.defaults.sampler = "euler_a";
    f.defaults.width = f.defaults.height = 1024;
    f.defaults.clip_skip = 2;
    f.latent_channels = unet->out_channels;
    f.latent_rgb = LatentRgb::Sdxl;

    auto tokenizer = load_clip_tokenizer(ctx);
    if (!tokenizer.ok()) return tokenizer.status();
    // A1111's SDXL embeddings name their two tables after the encoders.
    auto embeddings =
        open_clip_embeddings(ctx, {clip_l->width, clip_g->width}, {"clip_l", "clip_g"});
    if (!embeddings.ok()) return embeddings.status();
    auto enc_l = ClipTextEncoder::create(ctx, ctx.placement.te.first_device_only(), *clip_l,
                                         *tokenizer, 49407, "CLIP-L");
    if (!enc_l.ok()) return enc_l.status();
    auto enc_g = ClipTextEncoder::create(ctx, ctx.placement.te, *clip_g, *tokenizer, 49407,
                                         "OpenCLIP bigG", ClipPooled::Also);
    if (!enc_g.ok()) return enc_g.status();
    f.lora_targets.push_back(clip_lora_target(**enc_l, "CLIP-L", {"te1", "text_encoder"}));
    f.lora_targets.push_back(clip_lora_target(**enc_g, "OpenCLIP bigG", {"te2", "text_encoder_2"}));
    auto text = std::make_unique<DualClipConditioner>(std::move(*enc_l), std::move(*enc_g),
                                                      *tokenizer, f.defaults.clip_skip, label_width,
                                                      std::move(*embeddings));
    DualClipConditioner& dual = *text;
    f.text = std::move(text);
    // PhotoMaker (--photo-maker): the identity stacked into the prompt's class word.
    if (!ctx.options.photo_maker.empty()) {
        auto pm = PhotoMaker::load(ctx, dual, unet->context_dim);
        if (!pm.ok()) return pm.status();
        f.id_conditions = [pm = *pm](const GenerateOptions& o, const TextRequest& r) {
            return pm->conditions(o, r);
        };
        // Its UNet LoRA (in the same file) is always applied, at full weight.
        LoraRequest lora;
        lora.name = "photomaker";
        lora.te = 0.0f;
        lora.path = ctx.options.photo_maker;
        f.own_loras.push_back(lora);
    }

    auto denoiser = UNetDenoiser::create(ctx, ctx.placement.diffusion, *unet);
    if (!denoiser.ok()) return denoiser.status();
    f.lora_targets.push_back(unet_lora_target(**denoiser));
    f.denoiser = std::move(*denoiser);

    auto ae = make_sd_autoencoder(ctx, *vae);
    if (!ae.ok()) return ae.status();
    f.vae = std::move(*ae);
    return f;
}

}  // namespace

// The UNet's names are shared (io knows them); the family declares its diffusers pipelines.
const ModelLayout kSdxlLayout = {
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    {"StableDiffusionXLPipeline", "StableDiffusionXLImg2ImgPipeline",
     "StableDiffusionXLInpaintPipeline"},
    {{"unet", "model.diffusion_model."},
     {"vae", "first_stage_model."},
     {"text_encoder", "conditioner.embedders.0.transformer."},
     {"text_encoder_2", "conditioner.embedders.1.transformer."}},
};

extern const FamilyRecipe kSdxlRecipe = {
    "sdxl",
    "SDXL",
    "model.diffusion_model.input_blocks.0.0.weight and label_emb.0.0.weight",
    detect,
    load,
    nullptr,
    &kSdxlLayout,
    {"input_blocks", "middle_block", "output_blocks"},
    /*circular=*/true,
    /*text_embeddings=*/true};

}  // namespace ggdiff
