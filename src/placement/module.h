// The modules a device spec can name. Names are case-insensitive and ignore '-' and '_'.
//
//   diffusion    the denoiser (UNet or DiT); aliases: unet, dit
//   te           the text encoders / conditioner; aliases: textencoder(s), clip, conditioner
//   vae          the VAE (encode and decode); alias: firststage
//   taesd        the tiny preview/decode autoencoder (--taesd, --tae); alias: tae
//   controlnet   --control-net; alias: control
//   upscaler     --upscale-model; alias: upscale
//   photomaker   --photo-maker; alias: pm
//   pulid        --pulid-weights
//   clip_vision  --clip_vision, --llm_vision, --qwen2vl_vision; alias: vision
//   audio_vae    --audio-vae
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace ggdiff::placement {

enum class Module {
    Diffusion,
    TextEncoder,
    Vae,
    Taesd,
    ControlNet,
    Upscaler,
    PhotoMaker,
    Pulid,
    ClipVision,
    AudioVae,
};

// Every module, in canonical order (the order specs are printed in).
const std::vector<Module>& all_modules();
// Canonical name: "diffusion", "te", "vae", "taesd", "controlnet", "upscaler",
// "photomaker", "pulid", "clip_vision", "audio_vae".
const char* module_name(Module m);
// Parses a module name or alias. Error: unknown module "X" (known: diffusion, te, ...).
Result<Module> parse_module(const std::string& name);

}  // namespace ggdiff::placement
