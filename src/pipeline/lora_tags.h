// <lora:NAME:WEIGHT> prompt tags (A1111 syntax): found, summed and removed before the prompt
// is tokenized; the saved prompt keeps them.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace ggdiff {

struct LoraRequest {
    std::string name;
    float te = 1.0f;    // multiplier for the text encoders
    float unet = 1.0f;  // multiplier for the denoiser
    // <lora:|high_noise|NAME:W> (sd-cli's syntax): for Wan 2.2's high-noise expert only.
    bool high_noise = false;
    // A file read instead of NAME from --lora-model-dir: a model's own LoRA (PhotoMaker's,
    // inside its file), whose other tensors are not reported and which gets no A1111 hash.
    std::string path{};
    bool operator==(const LoraRequest& o) const {
        return name == o.name && te == o.te && unet == o.unet && high_noise == o.high_noise &&
               path == o.path;
    }
};

// Splits `prompt` into the text without its <lora:...> (or <lyco:...>) tags and the LoRAs
// they ask for, in order of first appearance. <lora:NAME> means weight 1,
// <lora:NAME:W> weight W, <lora:NAME:TE:UNET> separate text-encoder and denoiser weights;
// the same name twice adds the weights. A name starting with "|high_noise|" asks for the LoRA
// on the high-noise expert (Wan 2.2) instead of the model. A tag with a weight that is no number is
// an error naming it.
Result<std::string> extract_lora_tags(const std::string& prompt, std::vector<LoraRequest>* loras);

}  // namespace ggdiff
