// Wan's image conditions for video (Family::video_conditions), as stable-diffusion.cpp builds
// them:
//  - image-to-video DiTs (Wan 2.1 I2V / FLF2V, Wan 2.2 I2V: 20 extra input channels) get a video
//    of the output's frame count, mid grey (0 in [-1, 1]) except the first frame (-i) and the
//    last (--end-img), through the video VAE, after 4 mask channels per latent frame: all four 1
//    at latent frame 0 with a first frame, channel 3 at the last latent frame with a last frame
//    (the last of the four video frames that latent frame covers);
//  - Wan 2.2 TI2V (48 channels in and out) holds latent frame 0 at the VAE latent of -i (and
//    the last one at --end-img's): those frames go in as given at timestep 0 and stay;
//  - DiTs with img_emb (Wan 2.1 I2V, FLF2V) also get the CLIP vision tokens of the first frame
//    (zeros without one), and FLF2V (img_emb.emb_pos) those of the last frame after them.
#pragma once

#include <functional>

#include "families/wan/dit.h"
#include "pipeline/family.h"

namespace ggdiff {

// CLIP vision tokens of an RGB image at the output size: [image_width, 257, 1].
using WanClipVision = std::function<Result<HostTensor>(const Image&)>;

// The conditions for `dit`; `vae` (the family's video VAE) and `clip` (null for DiTs without
// img_emb) must outlive the returned function.
std::function<Result<VideoConditions>(const GenerateOptions&, int, int, int, sampling::Rng&)>
wan_video_conditions(const models::WanConfig& dit, Autoencoder* vae, WanClipVision clip);

// Whether `dit` takes image conditions (an image-to-video DiT).
bool wan_takes_images(const models::WanConfig& dit);

// Whether `dit` holds given frames instead (Wan 2.2 TI2V).
bool wan_holds_frames(const models::WanConfig& dit);

}  // namespace ggdiff
