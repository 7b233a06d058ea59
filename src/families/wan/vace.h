// Wan VACE's control context (Family::video_conditions of DiTs with vace_blocks), as
// stable-diffusion.cpp builds it:
//  - the control video: --control-video's frames (the first --video-frames of them, each
//    resized to the output size), mid grey where frames are missing;
//  - the mask is all ones (every pixel is "reactive"), so the inactive video is all mid grey
//    and the reactive one is the control video; both go through the video VAE;
//  - per latent frame: the inactive latent's channels, the reactive latent's, then the mask's
//    d x d pixels per latent pixel (d: the VAE's factor) as d * d channels of ones;
//  - with -i, the reference image's latent (after it, zeros for the reactive channels and the
//    mask) comes first as one more latent frame: the video is sampled one latent frame longer
//    and that frame is dropped before decoding (VideoConditions::leading_frames).
#pragma once

#include <functional>

#include "families/wan/dit.h"
#include "pipeline/family.h"

namespace ggdiff {

// The conditions for the VACE DiT `dit`; `vae` (the family's video VAE) must outlive the
// returned function.
std::function<Result<VideoConditions>(const GenerateOptions&, int, int, int, sampling::Rng&)>
wan_vace_conditions(const models::WanConfig& dit, Autoencoder* vae);

// Latent frames of a VACE request: the video's, plus one for a reference image (-i).
int wan_vace_latent_frames(const GenerateOptions& o, int video_latent_frames);

}  // namespace ggdiff
