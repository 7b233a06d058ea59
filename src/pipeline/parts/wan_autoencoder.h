// The Wan 2.1 VAE as a family part (Qwen Image; 4-channel RGBA for Qwen Image Layered). It
// takes diffusion-space latents: per-channel (z - mean) / std. A latent with F frames holds
// channel c of frame f in plane c * F + f; each frame is decoded on its own.
#pragma once

#include <memory>

#include "models/vae/wan_vae.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

class WanAutoencoder : public Autoencoder {
  public:
    static Result<std::unique_ptr<WanAutoencoder>> create(const FamilyContext& ctx,
                                                          const ModuleDevices& where,
                                                          const models::WanVaeConfig& cfg);
    int downscale() const override { return cfg_.downscale(); }
    // [w, h, F * z_dim, 1] -> [w*8, h*8, channels, F].
    Result<HostTensor> decode(const HostTensor& latent) override;
    bool can_encode() const override { return cfg_.has_encoder; }
    // The posterior mean (the Wan VAE samples nothing): [W, H, channels, 1] -> [w, h, z_dim, 1].
    Result<HostTensor> encode(const HostTensor& image, sampling::Rng& rng) override;
    void end_phase() override { runner_->end_phase(); }

    const models::WanVaeConfig& config() const { return cfg_; }

  private:
    models::WanVaeConfig cfg_;
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace ggdiff
