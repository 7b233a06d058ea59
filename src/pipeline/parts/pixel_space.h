// The "autoencoder" of a pixel-space model (Chroma1-Radiance): the denoiser works on the
// image itself, RGB in [-1, 1] at full size, so encoding and decoding pass it through.
#pragma once

#include "pipeline/family.h"

namespace ggdiff {

class PixelSpace : public Autoencoder {
  public:
    int downscale() const override { return 1; }
    Result<HostTensor> decode(const HostTensor& latent) override { return latent; }
    bool can_encode() const override { return true; }
    Result<HostTensor> encode(const HostTensor& image, sampling::Rng&) override { return image; }
    void end_phase() override {}
};

}  // namespace ggdiff
