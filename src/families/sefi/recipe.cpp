// The SeFi-Image recipe (SeFi-Image 1B / 2B / 5B, Base, RL and turbo): a FLUX.2 DiT
// (families/flux2/dit.h) whose latent carries 16 semantic channels ahead of FLUX.2's 128
// patchified VAE channels, and whose timestep vector embeds a semantic and a texture timestep
// (dual_time_embed) instead of time_in. As stable-diffusion.cpp (38a51f81) runs it:
// - the text from Qwen3-VL's language model (2B for SeFi 1B / 2B, 4B for 5B; the vision tower
//   is not read; RoPE theta 5e6, text-only multimodal RoPE being plain RoPE): the prompt in the
//   chat template without a thinking block, right-padded with <|endoftext|> to 1024 tokens
//   (the padding hidden as keys), the residual stream after layers 9, 18 and 27 concatenated;
// - its own dual-time Euler (families/sefi/schedule.h) whatever --sampling-method and
//   --scheduler say, with the reference's alpha 1 and delta 0.1 (its docs' 0.3 for the Base and
//   RL models would need --extra-sample-args, which ggdiff does not take yet);
// - the FLUX.2 VAE decodes the texture channels; cfg 7, 512x512 when not given (the reference's
//   docs: turbo --cfg-scale 1 --steps 4, Base and RL --cfg-scale 4 --steps 50).
// img2img, reference images and --sigmas are refused: the reference fails on the first two (the
// VAE encodes 128 channels where the DiT takes 144; no semantic encoder ships) and does not
// sample at all with the last.
#include <memory>
#include <string>

#include "core/log.h"
#include "families/flux2/denoiser.h"
#include "families/flux2/names.h"
#include "families/flux2/vae.h"
#include "families/sefi/schedule.h"
#include "models/te/qwen_llm.h"
#include "pipeline/family.h"
#include "pipeline/parts/llm_encoder.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.";
constexpr const char* kLlm = "text_encoders.llm.";
constexpr const char* kVae = "first_stage_model.";
constexpr float kQwen3VlRopeTheta = 5000000.0f;

bool detect(const TensorIndex& index) {
    return index.has(std::string(kDit) + "dual_time_embed.semantic_embedder.linear_1.weight");
}

ChatTemplate sefi_template() {
    ChatTemplate t;
    t.prefix = "<|im_start|>user\n";
    t.suffix = "<|im_end|>\n<|im_start|>assistant\n";
    t.out_layers = {8, 17, 26};
    t.pad_tokens = 1024;
    return t;
}

// The FLUX.2 VAE on the texture channels (16 .. 143) of SeFi's latent; it cannot encode into
// SeFi's latent (no semantic encoder ships with the model).
class SefiAutoencoder : public Autoencoder {
  public:
    explicit SefiAutoencoder(std::unique_ptr<Flux2Autoencoder> vae) : vae_(std::move(vae)) {}
    int downscale() const override { return vae_->downscale(); }
    Result<HostTensor> decode(const HostTensor& latent) override {
        const int64_t plane = latent.dim(0) * latent.dim(1);
        if (latent.dim(2) != kSefiSemanticChannels + kSefiTextureChannels || latent.dim(3) != 1) {
            return Status::Error(
                string_format("SeFi-Image VAE: a latent of %lld channels, expected %lld",
                              (long long)latent.dim(2),
                              (long long)(kSefiSemanticChannels + kSefiTextureChannels)));
        }
        HostTensor texture({latent.dim(0), latent.dim(1), kSefiTextureChannels, 1});
        std::copy(latent.data.begin() + plane * kSefiSemanticChannels, latent.data.end(),
                  texture.data.begin());
        return vae_->decode(texture);
    }
    // What the VAE could do: the request check refuses -i with SeFi's own reason first.
    bool can_encode() const override { return vae_->can_encode(); }
    Result<HostTensor> encode(const HostTensor&, sampling::Rng&) override {
        return Status::Error(
            "SeFi-Image cannot encode images: its latent's 16 semantic channels have no encoder "
            "(stable-diffusion.cpp fails on it too)");
    }
    void end_phase() override { vae_->end_phase(); }

  private:
    std::unique_ptr<Flux2Autoencoder> vae_;
};

Status check_request(const GenerateOptions& o) {
    if (o.init_image) {
        return Status::Error(
            "img2img (-i) is not supported for SeFi-Image: the VAE encodes only its 128 texture "
            "channels, the 16 semantic ones have no encoder (stable-diffusion.cpp fails on it)");
    }
    if (!o.sigmas.empty()) {
        return Status::Error(
            "--sigmas is not supported for SeFi-Image: it samples on its own semantic and texture "
            "schedules (stable-diffusion.cpp does not sample at all with custom sigmas)");
    }
    if (o.hires.enabled) {
        return Status::Error(
            "--hires is not supported for SeFi-Image: its second pass is img2img, which SeFi-Image "
            "cannot do");
    }
    if (o.sampler && *o.sampler != sampling::SamplerKind::Euler) {
        GGDIFF_LOG_WARN(
            "--sampling-method %s has no effect on SeFi-Image: it samples with its own dual-time "
            "euler, as stable-diffusion.cpp does",
            sampling::sampler_cli_name(*o.sampler));
    }
    if (o.scheduler) {
        GGDIFF_LOG_WARN(
            "--scheduler %s has no effect on SeFi-Image: its semantic and texture schedules are "
            "its own, as in stable-diffusion.cpp",
            sampling::schedule_name(*o.scheduler));
    }
    if (o.flow_shift) {
        GGDIFF_LOG_WARN("--flow-shift has no effect on SeFi-Image (its schedule has no shift)");
    }
    return Status::Ok();
}

// The dual-time euler over the texture sigmas the plan holds (sefi_schedule's), telling the
// DiT each evaluation's timesteps through `times`.
std::shared_ptr<const OwnSampler> sefi_sampler(std::shared_ptr<Flux2DualTimesteps> times) {
    auto s = std::make_shared<OwnSampler>();
    s->sigmas = [](int steps) { return sefi_schedule(steps).texture_sigmas; };
    s->run = [times](const sampling::DenoiseFn& denoise, std::vector<float>& x,
                     const std::vector<float>& sigmas, const sampling::SamplerOptions& so) {
        const SefiSchedule sched = sefi_schedule(static_cast<int>(sigmas.size()) - 1);
        if (sched.texture_sigmas != sigmas) {
            return Status::Error("SeFi-Image samples only its own schedule");
        }
        const int64_t plane =
            static_cast<int64_t>(x.size()) / (kSefiSemanticChannels + kSefiTextureChannels);
        auto set = [&](float semantic, float texture) {
            times->semantic = semantic;
            times->texture = texture;
        };
        return sefi_euler(denoise, set, x, plane, sched, so.on_step);
    };
    return s;
}

Result<Family> load(const FamilyContext& ctx) {
    // Everything is checked before any weight is read: configs, the VAE, the tokenizer.
    auto dit = models::detect_flux2(ctx.index, kDit);
    if (!dit.ok()) return dit.status();
    const int64_t channels = kSefiSemanticChannels + kSefiTextureChannels;
    if (!dit->dual_time || dit->in_channels != channels || dit->out_channels != channels) {
        return Status::Error(string_format(
            "SeFi-Image DiT: img_in takes %lld channels and final_layer.linear gives %lld; "
            "SeFi-Image's take and give %lld (16 semantic + 128 texture)",
            (long long)dit->in_channels, (long long)dit->out_channels, (long long)channels));
    }
    if (dit->guidance_embed) {
        return Status::Error("SeFi-Image DiT: guidance_in is not part of SeFi-Image's DiT");
    }
    const std::string& pred = ctx.options.prediction;
    if (!pred.empty() && pred != "sefi_flow") {
        return Status::Error("--prediction " + pred +
                             " does not apply to SeFi-Image models (they predict sefi_flow)");
    }
    if (!ctx.index.has_prefix(kLlm)) {
        return Status::Error(
            "SeFi-Image needs its text encoder: pass --llm with Qwen3-VL-2B-Instruct (SeFi 1B, "
            "2B) or Qwen3-VL-4B-Instruct (SeFi 5B), converted by stable-diffusion.cpp's "
            "script/convert_qwen3_vl.py or with model.language_model. names");
    }
    auto llm = models::detect_qwen_llm(ctx.index, kLlm);
    if (!llm.ok()) return llm.status().with_context("--llm");
    if (!llm->qk_norm) {
        return Status::Error("--llm: not a Qwen3 model (no q/k norms); SeFi-Image reads Qwen3-VL");
    }
    llm->rope_theta = kQwen3VlRopeTheta;
    if (!ctx.index.has_prefix(kVae)) {
        return Status::Error(
            "SeFi-Image needs the FLUX.2 VAE: pass --vae flux2_ae.safetensors (FLUX.2-dev's)");
    }
    auto vae = models::detect_vae(ctx.index, kVae);
    if (!vae.ok()) return vae.status().with_context("--vae");
    if (vae->z_channels * 4 != kSefiTextureChannels) {
        return Status::Error(string_format(
            "the VAE has %d latent channels; SeFi-Image decodes with FLUX.2's 32-channel VAE "
            "(flux2_ae.safetensors)",
            vae->z_channels));
    }
    const ChatTemplate tmpl = sefi_template();
    if (tmpl.width(llm->hidden) != dit->context_dim) {
        return Status::Error(string_format(
            "the text encoder is %lld wide (3 layers: %lld), the SeFi-Image DiT's txt_in takes "
            "%lld: not this model's encoder (SeFi 1B / 2B: Qwen3-VL-2B, 5B: Qwen3-VL-4B)",
            (long long)llm->hidden, (long long)tmpl.width(llm->hidden),
            (long long)dit->context_dim));
    }
    auto tokenizer = load_llm_tokenizer(ctx);
    if (!tokenizer.ok()) return tokenizer.status();

    Family f;
    f.param = sampling::Parameterization::flux_flow(1.0f);
    f.defaults.sampler = "euler";
    f.defaults.cfg_scale = 7.0f;
    f.latent_channels = static_cast<int>(channels);
    f.size_multiple = 16;
    f.latent_rgb = LatentRgb::SefiImage;
    f.uses_cfg = true;
    f.check_request = check_request;
    f.ref_images_not_yet =
        "--ref-image is not supported for SeFi-Image: reference latents would need its 16 "
        "semantic channels, which no encoder gives (stable-diffusion.cpp fails on them)";
    // Skip-layer guidance numbers the double blocks first, then the single blocks.
    f.skips_layers = true;
    f.skip_layer_count = dit->depth + dit->depth_single;
    GGDIFF_LOG_INFO(
        "SeFi-Image: %d double and %d single blocks, hidden %lld, %lld heads; Qwen3-VL %lld "
        "wide, %lld layers",
        dit->depth, dit->depth_single, (long long)dit->hidden, (long long)dit->heads,
        (long long)llm->hidden, (long long)llm->layers);

    auto encoder = LlmTextEncoder::create(ctx, ctx.placement.te, *llm, *tokenizer, "LLM", tmpl);
    if (!encoder.ok()) return encoder.status();
    f.text = std::make_unique<LlmConditioner>(std::move(*encoder), tmpl);

    auto times = std::make_shared<Flux2DualTimesteps>();
    auto denoiser = Flux2Denoiser::create(ctx, ctx.placement.diffusion, *dit, times);
    if (!denoiser.ok()) return denoiser.status();
    f.lora_targets.push_back(flux2_lora_target((*denoiser)->runner()));
    f.denoiser = std::move(*denoiser);
    f.own_sampler = sefi_sampler(std::move(times));

    auto ae = Flux2Autoencoder::create(ctx, ctx.placement.vae, *vae);
    if (!ae.ok()) return ae.status();
    f.vae = std::make_unique<SefiAutoencoder>(std::move(*ae));
    return f;
}

}  // namespace

extern const FamilyRecipe kSefiImageRecipe = {
    "sefi_image",
    "SeFi-Image",
    "model.diffusion_model.dual_time_embed.semantic_embedder.linear_1.weight (FLUX.2's layout "
    "with a dual timestep embedding)",
    detect,
    load,
    "diffusion-model,llm,vae",
    &kFlux2Layout,
    {"double_blocks", "single_blocks"},
    /*circular=*/true};

}  // namespace ggdiff
