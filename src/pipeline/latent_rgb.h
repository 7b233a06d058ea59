// Latent previews without a decoder (--preview proj): each latent pixel's channels mapped to
// RGB by a small linear map fitted per latent format (the coefficients stable-diffusion.cpp
// uses, so that the previews look alike), with the 2x2 patches of FLUX.2's packed latent
// unfolded to pixels. A pixel-space model's "latent" is the image itself. Pure code: no
// model, no device.
#pragma once

#include "core/host_tensor.h"
#include "core/status.h"
#include "image/image.h"

namespace ggdiff {

// The latent formats a family can name for its previews (Family::latent_rgb).
enum class LatentRgb {
    None,    // no projection known: --preview proj is refused
    Pixels,  // the latent is RGB in [-1, 1] (Chroma1-Radiance)
    Sd,      // SD1.x / SD2.x KL VAE, 4 channels
    Sdxl,    // SDXL KL VAE, 4 channels
    Sd3,     // SD3 VAE, 16 channels
    Flux,    // FLUX.1 VAE, 16 channels (also Chroma, Z-Image)
    Flux2,   // FLUX.2 VAE, 32 channels packed 2x2 into 128 (channel c * 4 + py * 2 + px)
    // SeFi-Image: 16 semantic channels (not shown), then FLUX.2's 128 (the reference has no
    // projection for its 144 channels and shows no preview)
    SefiImage,
    Wan21,  // Wan 2.1 VAE, 16 channels (also Qwen Image)
    Wan22,  // Wan 2.2 VAE, 48 channels
};

// The latent channels per frame a format reads (3 for Pixels, 0 for None).
int latent_rgb_channels(LatentRgb format);

// Frame `frame` of `latent` [w, h, channels * frames, 1] (channel c of frame f in plane
// c * frames + f, as Family::latent_frames lays them out) as an RGB image of
// w * patch x h * patch pixels (patch 2 for Flux2, else 1): each pixel is the projection plus
// its bias, mapped from [-1, 1] to [0, 255] (clamped, truncated). Fails for None or when the
// latent's channels do not match the format.
Result<Image> project_latent_rgb(const HostTensor& latent, LatentRgb format, int frames = 1,
                                 int frame = 0);

}  // namespace ggdiff
