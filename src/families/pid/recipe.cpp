// The PiD recipe (NVIDIA's Pixel Diffusion Decoder), as stable-diffusion.cpp (38a51f81) runs it:
// an edit pipeline that decodes (and upscales) an image from a VAE latent by diffusion in pixel
// space. The first -r image is encoded by the --vae, whose latent format --vae-format names
// (flux: FLUX.1 / Z-Image PiD, sd3, flux2; the checkpoint alone does not tell), and the DiT
// (families/pid/dit.h) denoises the RGB output conditioned on that latent and on Gemma 2 2B's
// states of the prompt (families/pid/text.h).
// - flow prediction with shift 1.5, lcm on the lcm schedule, cfg 7 (the reference's defaults;
//   its docs use 4 steps at cfg 1), 512x512 when no size is given;
// - -r is required and taken at its own size (the DiT resizes the latent to its patch grid);
//   img2img (-i) is refused: the reference cannot run it (it would VAE-encode the init image
//   as the pixel-space start).
#include <string>

#include "core/log.h"
#include "families/flux2/vae.h"
#include "families/pid/dit.h"
#include "families/pid/names.h"
#include "families/pid/text.h"
#include "models/te/gemma.h"
#include "models/te/gemma_vocab.h"
#include "models/vae/vae.h"
#include "pipeline/family.h"
#include "pipeline/parts/kl_autoencoder.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.net.";
constexpr const char* kLlm = "text_encoders.llm.";
constexpr const char* kVae = "first_stage_model.";

bool detect(const TensorIndex& index) {
    return models::is_pid(index, kDit);
}

// Pixel space for the generic path (the images are the latents); the -r images go through the
// real VAE, cut to its whole latent pixels.
class PidVae : public Autoencoder {
  public:
    explicit PidVae(std::unique_ptr<Autoencoder> vae) : vae_(std::move(vae)) {}
    int downscale() const override { return 1; }
    Result<HostTensor> decode(const HostTensor& latent) override { return latent; }
    bool can_encode() const override { return vae_->can_encode(); }
    Result<HostTensor> encode(const HostTensor& image, sampling::Rng& rng) override {
        const int64_t m = vae_->downscale(), w = image.dim(0), h = image.dim(1);
        const int64_t cw = w / m * m, ch = h / m * m;
        if (cw == 0 || ch == 0) {
            return Status::Error(string_format(
                "the reference image is %lldx%lld; PiD's VAE needs at least %lldx%lld",
                (long long)w, (long long)h, (long long)m, (long long)m));
        }
        if (cw == w && ch == h) return vae_->encode(image, rng);
        HostTensor cut({cw, ch, image.dim(2), 1});
        for (int64_t c = 0; c < image.dim(2); ++c) {
            for (int64_t y = 0; y < ch; ++y) {
                std::copy_n(image.data.begin() + (c * h + y) * w, cw,
                            cut.data.begin() + (c * ch + y) * cw);
            }
        }
        return vae_->encode(cut, rng);
    }
    void end_phase() override { vae_->end_phase(); }

  private:
    std::unique_ptr<Autoencoder> vae_;
};

Status check_request(const GenerateOptions& o) {
    if (o.ref_images.empty()) {
        return Status::Error(
            "PiD needs a reference image (-r / --ref-image): it decodes that image's VAE latent "
            "into the output");
    }
    if (o.init_image) {
        return Status::Error(
            "PiD img2img (-i) is not supported: PiD denoises the output pixels from noise, "
            "conditioned on the -r image (stable-diffusion.cpp cannot run -i with it either)");
    }
    if (o.ref_images.size() > 1) {
        GGDIFF_LOG_WARN("PiD reads the first reference image only; the other %zu are ignored",
                        o.ref_images.size() - 1);
    }
    if (!std::isnan(o.img_cfg_scale) && o.img_cfg_scale != 1.0f) {
        return Status::Error(
            "--img-cfg-scale is not supported for PiD: its DiT cannot run without the reference "
            "latent, so there is no image-unconditional side");
    }
    return Status::Ok();
}

// The VAE and its latent format: --vae-format, or from its latent channels.
Result<std::unique_ptr<Autoencoder>> make_vae(const FamilyContext& ctx, int64_t lq_channels) {
    if (!ctx.index.has_prefix(kVae)) {
        return Status::Error(
            "PiD needs the VAE its checkpoint was trained on: pass --vae (ae.safetensors with "
            "--vae-format flux, the SD3 VAE with sd3, flux2-vae.safetensors with flux2)");
    }
    auto vae = models::detect_vae(ctx.index, kVae);
    if (!vae.ok()) {
        return vae.status().with_context(
            "--vae: PiD takes the VAE its checkpoint was trained on (FLUX.1's ae.safetensors, the "
            "SD3 VAE or flux2-vae.safetensors)");
    }
    std::string format = ctx.options.vae_format.empty() ? "auto" : ctx.options.vae_format;
    if (format != "auto" && format != "flux" && format != "sd3" && format != "flux2") {
        return Status::Error("--vae-format " + format +
                             ": not a VAE format (auto, flux, sd3, flux2)");
    }
    if (format == "auto") {
        if (vae->z_channels == 32) {
            format = "flux2";
        } else {
            GGDIFF_LOG_WARN(
                "PiD: --vae-format auto reads the %d-channel VAE's latent unscaled, as "
                "stable-diffusion.cpp does; pass --vae-format flux or sd3 to match the checkpoint",
                vae->z_channels);
            vae->scale_factor = 1.0f;
            vae->shift_factor = 0.0f;
        }
    }
    const int want = format == "flux2" ? 32 : 16;
    if (vae->z_channels != want) {
        return Status::Error(string_format(
            "--vae: a VAE with %d latent channels; --vae-format %s takes a %d-channel one",
            vae->z_channels, format.c_str(), want));
    }
    const int64_t channels = format == "flux2" ? 4 * want : want;
    if (channels != lq_channels) {
        return Status::Error(string_format(
            "the PiD checkpoint reads %lld-channel latents; --vae-format %s gives %lld (flux and "
            "sd3: 16, flux2: 128)",
            (long long)lq_channels, format.c_str(), (long long)channels));
    }
    if (format == "flux") {
        vae->scale_factor = 0.3611f;
        vae->shift_factor = 0.1159f;
    } else if (format == "sd3") {
        vae->scale_factor = 1.5305f;
        vae->shift_factor = 0.0609f;
    }
    if (!vae->has_encoder) {
        return Status::Error("--vae has no encoder weights: PiD encodes the -r image with it");
    }
    if (format == "flux2") {
        auto ae = Flux2Autoencoder::create(ctx, ctx.placement.vae, *vae);
        if (!ae.ok()) return ae.status();
        return std::unique_ptr<Autoencoder>(std::move(*ae));
    }
    auto ae = KlAutoencoder::create(ctx, ctx.placement.vae, *vae);
    if (!ae.ok()) return ae.status();
    return std::unique_ptr<Autoencoder>(std::move(*ae));
}

Result<Family> load(const FamilyContext& ctx) {
    auto dit = models::detect_pid(ctx.index, kDit);
    if (!dit.ok()) return dit.status();
    const std::string& pred = ctx.options.prediction;
    if (!pred.empty() && pred != "sd3_flow") {
        return Status::Error("--prediction " + pred +
                             " does not apply to PiD models (they predict sd3_flow)");
    }
    if (!ctx.index.has_prefix(kLlm)) {
        return Status::Error(
            "PiD needs its Gemma 2 2B text encoder: pass --llm gemma_2_2b_it_elm_bf16.safetensors");
    }
    auto llm = models::detect_gemma2(ctx.index, kLlm);
    if (!llm.ok()) return llm.status().with_context("--llm");
    if (llm->hidden != dit->text_width) {
        return Status::Error(string_format(
            "--llm: a Gemma model %lld wide; the PiD DiT reads %lld-wide states (Gemma 2 2B)",
            (long long)llm->hidden, (long long)dit->text_width));
    }
    std::string source;
    auto tok = models::load_gemma_tokenizer({ctx.options.llm, ctx.main_file},
                                            ctx.options.llm_tokenizer, ctx.options.llm, &source);
    if (!tok.ok()) return tok.status();
    GGDIFF_LOG_INFO("Gemma tokenizer: %s (%zu tokens)", source.c_str(), tok->vocab_size());
    auto vae = make_vae(ctx, dit->lq_channels);
    if (!vae.ok()) return vae.status();

    Family f;
    f.param = sampling::Parameterization::flow(1.5f);
    f.defaults.sampler = "lcm";
    f.defaults.cfg_scale = 7.0f;
    f.latent_channels = static_cast<int>(dit->channels);
    f.latent_rgb = LatentRgb::Pixels;
    f.uses_cfg = true;
    f.ref_image_multiple = dit->patch;
    f.ref_images_as_given = true;
    f.check_request = check_request;
    GGDIFF_LOG_INFO(
        "PiD: DiT %lld wide, %lld patch blocks (%lld heads), %lld pixel blocks (%lld wide, %lld "
        "heads), %dx%d patches, %lld-channel source latent; Gemma 2 %lld wide, %lld layers",
        (long long)dit->hidden, (long long)dit->patch_depth, (long long)dit->heads,
        (long long)dit->pixel_depth, (long long)dit->pixel_attn, (long long)dit->pixel_heads,
        dit->patch, dit->patch, (long long)dit->lq_channels, (long long)llm->hidden,
        (long long)llm->layers);

    auto text =
        PidText::create(ctx, ctx.placement.te, *llm,
                        std::make_shared<const GemmaTokenizer>(std::move(*tok)), dit->text_max);
    if (!text.ok()) return text.status();
    f.text = std::move(*text);
    auto denoiser = PidDenoiser::create(ctx, ctx.placement.diffusion, *dit);
    if (!denoiser.ok()) return denoiser.status();
    f.lora_targets.push_back(pid_lora_target((*denoiser)->runner()));
    f.denoiser = std::move(*denoiser);
    f.vae = std::make_unique<PidVae>(std::move(*vae));
    return f;
}

}  // namespace

extern const FamilyRecipe kPidRecipe = {"pid",
                                        "PiD",
                                        "model.diffusion_model.net.lq_proj.latent_proj.0.weight",
                                        detect,
                                        load,
                                        "diffusion-model,llm,vae",
                                        &kPidLayout,
                                        {"patch_blocks", "pixel_blocks"}};

}  // namespace ggdiff
