// Phase "decode": a clean latent through the VAE to images, and the images a batch item
// hands over. It owns the frames of a latent (a latent of F frames decodes to F images,
// tiles taken one frame at a time), --vae-tiling and the auto-fit retry with tiles, and the
// assembly of each image with its seed and infotext.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/status.h"
#include "image/infotext.h"
#include "models/vae/tiling.h"
#include "pipeline/family.h"
#include "pipeline/generate_plan.h"
#include "pipeline/options.h"

namespace ggdiff {

// `latent` (the plan's shape) without its first `drop` frames (of latent_channels each);
// `p` is changed to the shape returned.
std::vector<float> drop_leading_frames(GeneratePlan& p, int latent_channels, int drop,
                                       const std::vector<float>& latent);

// The tile sizes and overlap of --vae-tiling as the tiled VAE passes take them (for a VAE that
// tiles its own decode as well as for the engine's).
models::TileOptions tile_options(const TilingOptions& tiling);

// Decodes `latent` (the plan's latent shape) to images [W, H, channels, frames] in [-1, 1],
// whole or in tiles as `tiling` says. With `auto_fit`, an untiled decode that fails is
// retried once with 256x256 tiles (logged).
Result<HostTensor> decode_latent(Family& f, const GeneratePlan& p, std::vector<float> latent,
                                 const TilingOptions& tiling, bool auto_fit);

// Decodes `latent` for a live preview (Autoencoder::decode_preview: TAESD with
// --taesd-preview-only), whole or in tiles as `tiling` says; no retry.
Result<HostTensor> decode_preview_latent(Family& f, const GeneratePlan& p,
                                         const std::vector<float>& latent,
                                         const TilingOptions& tiling);

// The infotext fields every image of a generation shares (each image sets its seed).
// `model_name`: the main model file's base name, unless o.output_model_name says otherwise;
// `lora_hashes`: the LoraManager's, empty when no LoRA is applied.
GenerationInfo generation_info(const Family& f, const GeneratePlan& p, const GenerateOptions& o,
                               const std::string& model_name, const std::string& lora_hashes);

// One image per frame of `decoded`, each with `seed` and the infotext of `info` for it.
std::vector<GeneratedImage> decoded_images(const HostTensor& decoded, int64_t seed,
                                           GenerationInfo info);

}  // namespace ggdiff
