// The LDM KL autoencoder (SD1/SD2/SDXL, and without quant convs SD3/FLUX/Z-Image) and
// TAESD as family parts. Both take and return diffusion-space latents: the KL VAE's
// latent normalization (z_vae = z / scale + shift) happens here.
#pragma once

#include <memory>
#include <string>

#include "models/vae/taesd.h"
#include "models/vae/vae.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

// The runner of an LDM KL VAE with `cfg` on `where` (its decoder, and its encoder when the
// file has one, declared from representative graphs).
Result<std::unique_ptr<ModuleRunner>> make_kl_vae_module(const FamilyContext& ctx,
                                                         const ModuleDevices& where,
                                                         const models::VaeConfig& cfg);

class KlAutoencoder : public Autoencoder {
  public:
    // cfg.scale_factor / shift_factor: the family's latent normalization.
    static Result<std::unique_ptr<KlAutoencoder>> create(const FamilyContext& ctx,
                                                         const ModuleDevices& where,
                                                         const models::VaeConfig& cfg);
    int downscale() const override { return cfg_.downscale(); }
    Result<HostTensor> decode(const HostTensor& latent) override;
    bool can_encode() const override { return cfg_.has_encoder; }
    // Samples the posterior: mean + exp(logvar / 2) * noise, then normalizes.
    Result<HostTensor> encode(const HostTensor& image, sampling::Rng& rng) override;
    void end_phase() override { runner_->end_phase(); }

  private:
    models::VaeConfig cfg_;
    std::unique_ptr<ModuleRunner> runner_;
};

class TaesdAutoencoder : public Autoencoder {
  public:
    // `fallback_encoder` (may be null) encodes when the TAESD file has no encoder. With
    // `preview_only` (--taesd-preview-only) TAESD decodes the previews only and the fallback
    // (then required) decodes and encodes everything else.
    static Result<std::unique_ptr<TaesdAutoencoder>> create(
        const FamilyContext& ctx, const ModuleDevices& where, const models::TaesdConfig& cfg,
        std::unique_ptr<Autoencoder> fallback_encoder, bool preview_only = false);
    int downscale() const override { return cfg_.downscale(); }
    Result<HostTensor> decode(const HostTensor& latent) override;
    bool can_encode() const override {
        return (cfg_.has_encoder && !preview_only_) || (fallback_ && fallback_->can_encode());
    }
    Result<HostTensor> encode(const HostTensor& image, sampling::Rng& rng) override;
    void end_phase() override;
    Result<HostTensor> decode_preview(const HostTensor& latent) override;
    bool has_taesd() const override { return true; }

  private:
    models::TaesdConfig cfg_;
    std::unique_ptr<ModuleRunner> runner_;
    std::unique_ptr<Autoencoder> fallback_;
    bool preview_only_ = false;
};

// FLUX.1's 16-channel VAE (latent scale 0.3611, shift 0.1159) of an image family (`family`: its
// display name, in the errors) whose DiT works on `latent_channels`-channel latents: the config
// under `prefix`, or an error that says which file to pass (a missing VAE, or one of other
// latent channels).
Result<models::VaeConfig> detect_flux1_image_vae(const FamilyContext& ctx,
                                                 const std::string& prefix, const char* family,
                                                 int64_t latent_channels);

// The checkpoint's KL VAE with `cfg`; with --taesd, TAESD (weights under "taesd.") decodes
// instead, and encodes too when its file has an encoder (else the KL VAE encodes); with
// --taesd-preview-only as well, TAESD decodes the live previews only.
Result<std::unique_ptr<Autoencoder>> make_sd_autoencoder(const FamilyContext& ctx,
                                                         const models::VaeConfig& cfg);

}  // namespace ggdiff
