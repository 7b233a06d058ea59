// The SD1.x / SD2.x recipe: one CLIP text encoder (OpenAI ViT-L/14 for SD1, OpenCLIP
// ViT-H/14 for SD2) -> LDM UNet (eps or v) -> KL VAE.
#include <cstdio>
#include <string>

#include "core/log.h"
#include "io/name_util.h"
#include "pipeline/family.h"
#include "pipeline/parts/clip_encoder.h"
#include "pipeline/parts/kl_autoencoder.h"
#include "pipeline/parts/lora_targets.h"
#include "pipeline/parts/prediction.h"
#include "pipeline/parts/unet_denoiser.h"

namespace ggdiff {
namespace {

constexpr const char* kUnet = "model.diffusion_model.";
constexpr const char* kClip = "cond_stage_model.transformer.text_model.";
// Where a stand-alone --clip_l file's encoder is indexed; it replaces the checkpoint's.
constexpr const char* kClipFile = "text_encoders.clip_l.text_model.";

// Width of the UNet's cross-attention context (attn2.to_k takes [dim, context]).
int64_t context_width(const TensorIndex& index) {
    for (const TensorInfo& t : index.tensors()) {
        if (starts_with(t.name, kUnet) && ends_with(t.name, ".attn2.to_k.weight") &&
            t.shape.size() == 2) {
            return t.shape[1];
        }
    }
    return 0;
}

// An LDM UNet with cross-attention and no label embedding (that is SDXL's): SD2 at context
// width 1024 (OpenCLIP ViT-H), SD1 at any other (768, or small models of the same layout).
bool is_sd_unet(const TensorIndex& index) {
    return index.has(std::string(kUnet) + "input_blocks.0.0.weight") &&
           !index.has(std::string(kUnet) + "label_emb.0.0.weight");
}
bool detect_sd1(const TensorIndex& index) {
    const int64_t w = context_width(index);
    return is_sd_unet(index) && w > 0 && w != 1024;
}
bool detect_sd2(const TensorIndex& index) {
    return is_sd_unet(index) && context_width(index) == 1024;
}

// "WxH" from the checkpoint's modelspec.resolution (the size it was trained for).
void read_default_size(const TensorIndex& index, FamilyDefaults& d) {
    auto it = index.metadata().find("modelspec.resolution");
    if (it == index.metadata().end()) return;
    int w = 0, h = 0;
    char x = 0;
    if (std::sscanf(it->second.c_str(), "%d%c%d", &w, &x, &h) == 3 && (x == 'x' || x == 'X') &&
        w >= 64 && h >= 64 && w % 8 == 0 && h % 8 == 0 && w <= 16384 && h <= 16384) {
        d.width = w;
        d.height = h;
    }
}

Result<Family> load(const FamilyContext& ctx) {
    auto unet = models::detect_unet(ctx.index);
    if (!unet.ok()) return unet.status();
    auto clip = models::detect_clip_text(ctx.index, ctx.options.clip_l.empty() ? kClip : kClipFile);
    if (!clip.ok()) return clip.status().with_context("text encoder");
    auto vae = models::detect_vae(ctx.index);
    if (!vae.ok()) return vae.status();

    const bool sd2 = unet->context_dim == 1024;
    Family f;
    if (clip->width != unet->context_dim) {
        return Status::Error(
            string_format("text encoder width %lld does not match the UNet's context width %d",
                          static_cast<long long>(clip->width), unet->context_dim));
    }
    auto pred = family_prediction(ctx, ctx.recipe->display);
    if (!pred.ok()) return pred.status();
    f.param = sampling::Parameterization::discrete(*pred);
    f.arch = sampling::DenoiserArch::UNet;
    f.defaults.sampler = "euler_a";
    f.defaults.clip_skip = sd2 ? 2 : 1;
    read_default_size(ctx.index, f.defaults);
    f.latent_channels = unet->out_channels;
    f.latent_rgb = LatentRgb::Sd;
    // An inpainting UNet also takes the mask and the masked image's latent.
    if (unet->in_channels == 2 * unet->out_channels + 1) {
        f.inpaint_inputs = true;
        f.variant = "inpainting";
    } else if (unet->in_channels != unet->out_channels) {
        return Status::Error(string_format(
            "the UNet takes %d input channels for a %d-channel latent; ggdiff knows %d "
            "(text to image) and %d (inpainting)",
            unet->in_channels, unet->out_channels, unet->out_channels, 2 * unet->out_channels + 1));
    }

    auto tokenizer = load_clip_tokenizer(ctx);
    if (!tokenizer.ok()) return tokenizer.status();
    auto embeddings =
        open_clip_embeddings(ctx, {clip->width}, {sd2 ? "OpenCLIP ViT-H" : "CLIP ViT-L"});
    if (!embeddings.ok()) return embeddings.status();
    // SD1's CLIP pads with EOS, SD2's OpenCLIP with 0.
    auto encoder = ClipTextEncoder::create(ctx, ctx.placement.te, *clip, *tokenizer,
                                           sd2 ? 0 : 49407, "text encoder");
    if (!encoder.ok()) return encoder.status();
    f.lora_targets.push_back(clip_lora_target(**encoder, "text encoder", {"te", "text_encoder"}));
    f.text = std::make_unique<ClipConditioner>(std::move(*encoder), f.defaults.clip_skip,
                                               std::move(*embeddings));

    auto denoiser = UNetDenoiser::create(ctx, ctx.placement.diffusion, *unet);
    if (!denoiser.ok()) return denoiser.status();
    if (!ctx.options.control_net.empty()) {
        auto cn = models::detect_controlnet(ctx.index);
        if (!cn.ok()) return cn.status().with_context("--control-net " + ctx.options.control_net);
        Status fits = models::check_controlnet_fits(*cn, *unet);
        if (!fits.ok()) return fits.with_context("--control-net " + ctx.options.control_net);
        auto part = ControlNetPart::create(ctx, ctx.placement.control, *cn);
        if (!part.ok()) return part.status();
        (*denoiser)->attach_control(std::move(*part));
        f.takes_control = true;
    }
    f.lora_targets.push_back(unet_lora_target(**denoiser));
    f.denoiser = std::move(*denoiser);

    auto ae = make_sd_autoencoder(ctx, *vae);
    if (!ae.ok()) return ae.status();
    f.vae = std::move(*ae);
    return f;
}

}  // namespace

// The UNet's names are shared (io knows them); the family declares its diffusers pipelines.
const ModelLayout kSdLayout = {
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    {"StableDiffusionPipeline", "StableDiffusionImg2ImgPipeline", "StableDiffusionInpaintPipeline"},
    {{"unet", "model.diffusion_model."},
     {"vae", "first_stage_model."},
     {"text_encoder", "cond_stage_model.transformer."}},
};

extern const FamilyRecipe kSd1Recipe = {
    "sd1",
    "SD1",
    "model.diffusion_model.input_blocks.0.0.weight, a cross-attention context width other "
    "than 1024 and no label_emb",
    detect_sd1,
    load,
    "diffusion-model,clip_l,vae,taesd",
    &kSdLayout,
    {"input_blocks", "middle_block", "output_blocks"},
    /*circular=*/true,
    /*text_embeddings=*/true};
extern const FamilyRecipe kSd2Recipe = {
    "sd2",
    "SD2",
    "model.diffusion_model.input_blocks.0.0.weight, cross-attention context width 1024, no "
    "label_emb",
    detect_sd2,
    load,
    "diffusion-model,clip_l,vae,taesd",
    &kSdLayout,
    {"input_blocks", "middle_block", "output_blocks"},
    /*circular=*/true,
    /*text_embeddings=*/true};

}  // namespace ggdiff
