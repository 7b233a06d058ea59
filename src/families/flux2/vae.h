// The FLUX.2 autoencoder as a family part: the LDM KL VAE with 32 latent channels (its quant
// convs inside encoder/decoder), whose latent the DiT sees patchified 2x2 into 128 channels
// (channel c*4 + py*2 + px) and normalized per channel with the real FLUX.2 VAE's batch-norm
// statistics, which stable-diffusion.cpp keeps as constants (it never reads bn.* from a file;
// neither does this). Encoding keeps the posterior mean: nothing is sampled.
#pragma once

#include <memory>

#include "models/vae/vae.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

// VAE latent [2w, 2h, 32, 1] <-> diffusion latent [w, h, 128, 1] (patchify and normalize).
HostTensor flux2_vae_to_diffusion(const HostTensor& vae_latent);
HostTensor flux2_diffusion_to_vae(const HostTensor& latent);

class Flux2Autoencoder : public Autoencoder {
  public:
    // cfg: a VAE with 32 latent channels.
    static Result<std::unique_ptr<Flux2Autoencoder>> create(const FamilyContext& ctx,
                                                            const ModuleDevices& where,
                                                            const models::VaeConfig& cfg);
    int downscale() const override { return 2 * cfg_.downscale(); }
    Result<HostTensor> decode(const HostTensor& latent) override;
    bool can_encode() const override { return cfg_.has_encoder; }
    Result<HostTensor> encode(const HostTensor& image, sampling::Rng& rng) override;
    void end_phase() override { runner_->end_phase(); }

  private:
    models::VaeConfig cfg_;
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace ggdiff
