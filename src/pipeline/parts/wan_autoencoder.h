// The Wan VAE as a family part (2.1: Qwen Image, 4-channel RGBA for Qwen Image Layered, Wan
// video; 2.2: Wan TI2V). It takes diffusion-space latents: per-channel (z - mean) / std. A latent
// with F frames holds channel c of frame f in plane c * F + f. As an image VAE each frame is
// decoded on its own; as a video VAE (`video`) the F frames are one video, decoded causally (one
// graph per latent frame, the convolution caches kept on the host between them) to
// 1 + 4 (F - 1) frames, and a video of 1 + 4 n frames encodes to 1 + n latent frames.
#pragma once

#include <memory>
#include <string>

#include "models/vae/wan_vae.h"
#include "pipeline/family.h"
#include "runtime/module_runner.h"

namespace ggdiff {

// The Wan 2.1 VAE of an image family (`family`: its display name, in the errors) whose DiT works
// on `latent_channels`-channel latents: the config under `prefix`, or an error that says which
// file to pass (a missing or other VAE, or one of other latent or image channels).
Result<models::WanVaeConfig> detect_wan21_image_vae(const FamilyContext& ctx,
                                                    const std::string& prefix, const char* family,
                                                    int64_t latent_channels);

class WanAutoencoder : public Autoencoder {
  public:
    static Result<std::unique_ptr<WanAutoencoder>> create(const FamilyContext& ctx,
                                                          const ModuleDevices& where,
                                                          const models::WanVaeConfig& cfg,
                                                          bool video = false);
    int downscale() const override { return cfg_.downscale(); }
    // [w, h, F * z_dim, 1] -> [w*d, h*d, channels, F] (d = downscale()); video: 1 + 4 (F - 1)
    // frames.
    Result<HostTensor> decode(const HostTensor& latent) override;
    bool can_encode() const override { return cfg_.has_encoder; }
    // The posterior mean (the Wan VAE samples nothing): [W, H, channels, 1] -> [w, h, z_dim, 1];
    // video: [W, H, channels, 1 + 4 n] -> [w, h, (1 + n) * z_dim, 1] (planes c * T + t).
    Result<HostTensor> encode(const HostTensor& image, sampling::Rng& rng) override;
    void end_phase() override { runner_->end_phase(); }

    const models::WanVaeConfig& config() const { return cfg_; }
    bool video() const { return video_; }

  private:
    models::WanVaeConfig cfg_;
    bool video_ = false;
    models::WanGraphRun graph_run();
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace ggdiff
