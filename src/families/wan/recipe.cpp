// Wan 2.1 / 2.2 text-to-video: umT5-XXL conditions the Wan DiT, which denoises a latent video
// of 1 + (frames - 1) / 4 latent frames on the rectified-flow schedule with shift 5; the Wan
// 2.1 VAE decodes latent frame 0 to one frame and every later one to four (causal 3-D
// convolutions), so --video-frames is aligned down to 4n + 1.
//
// As in stable-diffusion.cpp, umT5 always sees 512 tokens (prompt, EOS, padding; longer
// prompts take more windows of 512), the padding is masked inside umT5 and its features at
// the padding are zeroed; the DiT attends to all of them.
#include <cmath>
#include <string>

#include "core/log.h"
#include "families/wan/conditions.h"
#include "families/wan/denoiser.h"
#include "families/wan/names.h"
#include "families/wan/vace.h"
#include "models/te/clip_vision.h"
#include "models/te/t5.h"
#include "pipeline/family.h"
#include "pipeline/parts/clip_vision_encoder.h"
#include "pipeline/parts/t5_encoder.h"
#include "pipeline/parts/wan_autoencoder.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";
constexpr const char* kHighNoise = "model.high_noise_diffusion_model.";
constexpr const char* kT5 = "text_encoders.t5xxl.";
constexpr const char* kVae = "first_stage_model.";
constexpr const char* kClipVision = "clip_vision.";
constexpr int kWanT5Tokens = 512;

bool detect(const TensorIndex& index) {
    return models::is_wan_dit(index, kDit);
}

// --video-frames aligned down to 4n + 1 -> latent frames.
int latent_frames(const GenerateOptions& o) {
    return (std::max(1, o.video_frames) - 1) / 4 + 1;
}

// VACE: one more latent frame for a reference image (-i), dropped before decoding.
int vace_latent_frames(const GenerateOptions& o) {
    return wan_vace_latent_frames(o, latent_frames(o));
}

int output_frames(const GenerateOptions& o) {
    return (latent_frames(o) - 1) * 4 + 1;
}

Status check_request(const GenerateOptions& o) {
    const int made = output_frames(o);
    if (made != o.video_frames) {
        GGDIFF_LOG_WARN("--video-frames %d: Wan makes 4n+1 frames; making %d", o.video_frames,
                        made);
    }
    return Status::Ok();
}

class WanConditioner : public TextConditioner {
  public:
    explicit WanConditioner(std::unique_ptr<T5TextEncoder> t5) : t5_(std::move(t5)) {}

    Result<Conditioning> encode(const TextRequest& request) override {
        auto r = t5_->encode_masked(request.prompt, true);
        if (!r.ok()) return r.status().with_context("umT5");
        HostTensor& h = r->hidden;
        const int64_t width = h.dim(0);
        for (size_t i = 0; i < r->real.size(); ++i) {
            if (r->real[i]) continue;
            std::fill_n(h.data.begin() + static_cast<int64_t>(i) * width, width, 0.0f);
        }
        Conditioning c;
        c.context = std::move(h);
        return c;
    }
    void end_phase() override { t5_->end_phase(); }

  private:
    std::unique_ptr<T5TextEncoder> t5_;
};

Result<Family> load(const FamilyContext& ctx) {
    const std::string name = ctx.recipe->display;
    auto dit = models::detect_wan_dit(ctx.index, kDit);
    if (!dit.ok()) return dit.status();
    if (dit->vace_layers > 0 && wan_takes_images(*dit)) {
        return Status::Error(name +
                             " VACE DiTs with image-to-video input channels are no layout "
                             "ggdiff knows");
    }
    const std::string& pred = ctx.options.prediction;
    if (!pred.empty() && pred != "sd3_flow") {
        return Status::Error("--prediction " + pred + " does not apply to " + name +
                             " models (they predict sd3_flow)");
    }
    if (!ctx.index.has_prefix(kT5)) {
        return Status::Error(name +
                             " needs its umT5-XXL text encoder: pass it with --t5xxl "
                             "umt5-xxl.safetensors");
    }
    auto t5cfg = models::detect_t5(ctx.index, kT5);
    if (!t5cfg.ok()) return t5cfg.status().with_context("--t5xxl");
    if (!t5cfg->bias_per_layer && t5cfg->layers > 1) {
        return Status::Error(
            "--t5xxl: this T5 shares one relative position table across its layers (T5 v1.1, "
            "as FLUX's t5xxl); " +
            name + " needs umT5-XXL (a table per layer)");
    }
    if (t5cfg->width != dit->text_width) {
        return Status::Error(
            string_format("the umT5 encoder is %lld wide, the DiT's text_embedding takes %lld",
                          (long long)t5cfg->width, (long long)dit->text_width));
    }
    if (!models::is_wan_vae(ctx.index, kVae)) {
        return Status::Error(name + " needs its VAE: pass --vae wan_2.1_vae.safetensors");
    }
    auto vae = models::detect_wan_vae(ctx.index, kVae);
    if (!vae.ok()) return vae.status().with_context("--vae");
    if (vae->image_channels != 3) {
        return Status::Error(
            string_format("%s needs an RGB Wan VAE; this one decodes %lld channels", name.c_str(),
                          (long long)vae->image_channels));
    }
    if (vae->z_dim != dit->out_channels) {
        return Status::Error(string_format("the VAE's latent has %lld channels, the DiT's %lld",
                                           (long long)vae->z_dim, (long long)dit->out_channels));
    }
    if (wan_takes_images(*dit) && dit->in_channels != dit->out_channels + 4 + vae->z_dim) {
        return Status::Error(string_format(
            "%s: a DiT taking %lld input channels for %lld-channel latents is no image-to-video "
            "layout ggdiff knows (latent + 4 mask + %lld image channels)",
            name.c_str(), (long long)dit->in_channels, (long long)dit->out_channels,
            (long long)vae->z_dim));
    }
    auto tokenizer = load_t5_tokenizer(ctx);
    if (!tokenizer.ok()) return tokenizer.status();

    Family f;
    f.variant = dit->size_name();
    f.param = sampling::Parameterization::flow(5.0f);
    f.defaults.sampler = "euler";
    f.defaults.cfg_scale = 7.0f;
    f.defaults.width = 832;
    f.defaults.height = 480;
    f.latent_channels = static_cast<int>(dit->out_channels);
    // Wan 2.1's VAE (16 channels, 8x) or Wan 2.2's (48 channels, 16x: TI2V 5B).
    f.latent_rgb = vae->z_dim == 16 ? LatentRgb::Wan21 : LatentRgb::None;
    f.size_multiple = 2 * vae->downscale();  // the VAE's factor times the DiT's 2x2 patches
    f.latent_frames = latent_frames;
    f.output_frames = output_frames;
    f.check_request = check_request;
    GGDIFF_LOG_INFO("%s %s: DiT %lld wide, %lld blocks; umT5 %lld wide, %lld layers", name.c_str(),
                    f.variant.c_str(), (long long)dit->width, (long long)dit->layers,
                    (long long)t5cfg->width, (long long)t5cfg->layers);

    auto t5 = T5TextEncoder::create(ctx, ctx.placement.te, *t5cfg, *tokenizer, kWanT5Tokens);
    if (!t5.ok()) return t5.status();
    f.text = std::make_unique<WanConditioner>(std::move(*t5));

    auto denoiser = WanDenoiser::create(ctx, ctx.placement.diffusion, *dit);
    if (!denoiser.ok()) return denoiser.status();
    f.lora_targets.push_back(wan_lora_target((*denoiser)->runner(), dit->prefix));
    f.denoiser = std::move(*denoiser);

    // Wan 2.2 A14B: the high-noise expert, a second DiT of the same kind.
    if (ctx.index.has_prefix(kHighNoise)) {
        auto hn = models::detect_wan_dit(ctx.index, kHighNoise);
        if (!hn.ok()) return hn.status().with_context("--high-noise-diffusion-model");
        if (hn->in_channels != dit->in_channels || hn->out_channels != dit->out_channels ||
            hn->text_width != dit->text_width || hn->image_embedding != dit->image_embedding) {
            return Status::Error(
                "--high-noise-diffusion-model: the expert is not the same kind of Wan DiT as "
                "--diffusion-model (" +
                std::to_string(hn->in_channels) + " vs " + std::to_string(dit->in_channels) +
                " input channels, text " + std::to_string(hn->text_width) + " vs " +
                std::to_string(dit->text_width) + ")");
        }
        if ((hn->vace_layers > 0) != (dit->vace_layers > 0) ||
            (hn->vace_layers > 0 && hn->vace_in_channels != dit->vace_in_channels)) {
            return Status::Error(
                "--high-noise-diffusion-model: the expert and --diffusion-model must both be VACE "
                "DiTs (vace_blocks, with the same control channels) or neither");
        }
        auto expert = WanDenoiser::create(ctx, ctx.placement.diffusion, *hn);
        if (!expert.ok()) return expert.status().with_context("high-noise expert");
        GGDIFF_LOG_INFO("%s: high-noise expert %s, %lld blocks", name.c_str(),
                        hn->size_name().c_str(), (long long)hn->layers);
        LoraTarget expert_lora = wan_lora_target((*expert)->runner(), hn->prefix);
        expert_lora.label = "Wan high-noise DiT";
        expert_lora.high_noise = true;
        f.lora_targets.push_back(std::move(expert_lora));
        f.high_noise = std::move(*expert);
    }

    auto ae = WanAutoencoder::create(ctx, ctx.placement.vae, *vae, /*video=*/true);
    if (!ae.ok()) return ae.status();
    if (!dit->image_embedding && ctx.index.has_prefix(kClipVision)) {
        GGDIFF_LOG_WARN(
            "--clip_vision: this %s DiT takes no CLIP image features (no img_emb); "
            "the encoder is not used",
            name.c_str());
    }
    if (dit->vace_layers > 0) {
        if (!(*ae)->can_encode()) {
            return Status::Error(name + " VACE needs a full VAE (with the encoder)");
        }
        f.video_conditions = wan_vace_conditions(*dit, ae->get());
        f.latent_frames = vace_latent_frames;
        f.takes_control_video = true;
        f.variant += " VACE";
        GGDIFF_LOG_INFO("%s: VACE, %lld blocks, one after every %lld", name.c_str(),
                        (long long)dit->vace_layers,
                        (long long)models::wan_vace_block_after(*dit, 1));
    }
    if (dit->vace_layers == 0 && (wan_takes_images(*dit) || wan_holds_frames(*dit))) {
        if (!(*ae)->can_encode()) {
            return Status::Error(name + " image-to-video needs a full VAE (with the encoder)");
        }
        WanClipVision clip;
        if (dit->image_embedding) {
            // Wan 2.1 I2V / FLF2V: the images' CLIP vision tokens (ViT-H/14, --clip_vision).
            if (!ctx.index.has_prefix(kClipVision)) {
                return Status::Error(name + " " + dit->size_name() +
                                     " image-to-video (img_emb) needs its CLIP vision encoder: "
                                     "pass --clip_vision clip_vision_h.safetensors");
            }
            auto ccfg = models::detect_clip_vision(ctx.index, kClipVision);
            if (!ccfg.ok()) return ccfg.status().with_context("--clip_vision");
            if (ccfg->width != dit->image_width) {
                return Status::Error(string_format(
                    "--clip_vision: the encoder is %lld wide, the DiT's img_emb takes %lld",
                    (long long)ccfg->width, (long long)dit->image_width));
            }
            auto enc = ClipVisionEncoder::create(ctx, ctx.placement.clip_vision, *ccfg);
            if (!enc.ok()) return enc.status();
            std::shared_ptr<ClipVisionEncoder> shared = std::move(*enc);
            clip = [shared](const Image& img) -> Result<HostTensor> {
                auto r = shared->encode(img);
                shared->end_phase();
                return r;
            };
        }
        f.video_conditions = wan_video_conditions(*dit, ae->get(), std::move(clip));
        f.takes_end_image = true;
        if (wan_takes_images(*dit)) f.variant += " I2V";
    }
    f.vae = std::move(*ae);
    return f;
}

}  // namespace

extern const FamilyRecipe kWanRecipe = {"wan",
                                        "Wan",
                                        "model.diffusion_model.patch_embedding.weight and "
                                        "blocks.0.cross_attn.q.weight",
                                        detect,
                                        load,
                                        "diffusion-model,t5xxl,vae,clip_vision",
                                        &kWanLayout,
                                        {"blocks"},
                                        /*circular=*/false,
                                        /*text_embeddings=*/false,
                                        /*high_noise_expert=*/true};

}  // namespace ggdiff
