// LTX-2's hires fix: its latent upscalers (families/ltx/latent_upscaler.h) as the family's
// Family::latent_upscaler, run the way stable-diffusion.cpp (38a51f81) runs them between its
// two sampling passes: the video part of the packed latent is un-normalized with the video
// VAE's per-channel statistics, upscaled (x2 or x1.5 in space, or x2 in time: 2 T - 1 latent
// frames), normalized again; the audio part keeps its values, cut or padded with zeros to the
// second pass's audio length when the frames change; both are packed again at the new size.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "pipeline/family.h"

namespace ggdiff::ltx {

using LatentUpscalerLoader =
    std::function<Result<std::shared_ptr<LatentUpscaler>>(const std::string& path)>;

// The loader of LTX-2 latent upscaler files for a family being loaded from `ctx`, whose video
// VAE's tensors are under `vae_prefix` (its per-channel statistics are read here). The
// upscalers run on ctx.placement.upscaler (--backend upscaler=...) with their stored types.
// A file that is not an LTX-2 latent upscaler, or one for another channel count, is refused
// when it is opened, naming the file.
Result<LatentUpscalerLoader> ltx_latent_upscalers(const FamilyContext& ctx,
                                                  const std::string& vae_prefix);

}  // namespace ggdiff::ltx
