// diffusers ControlNetModel -> the original (LDM) ControlNet names: the UNet half maps
// like the UNet (DiffusersUnetMap); the conditioning encoder becomes input_hint_block
// (conv_in, blocks.0..5, conv_out = convs 0..7, LDM index 2 * conv), controlnet_down_blocks.N
// becomes zero_convs.N.0 and controlnet_mid_block middle_block_out.0.
#include "io/name_map.h"
#include "io/name_util.h"

namespace ggdiff {

bool DiffusersControlNetMap::detect(const std::vector<std::string>& names) {
    for (const std::string& n : names) {
        if (starts_with(n, "controlnet_cond_embedding.") ||
            starts_with(n, "controlnet_down_blocks."))
            return true;
    }
    return false;
}

DiffusersControlNetMap::DiffusersControlNetMap(const std::vector<std::string>& names)
    : unet_(names) {}

bool DiffusersControlNetMap::map(const std::string& name, std::string* out) const {
    int i = 0;
    std::string rest;
    std::string s = name;
    if (replace_prefix(&s, "controlnet_cond_embedding.conv_in.", "input_hint_block.0.") ||
        replace_prefix(&s, "controlnet_cond_embedding.conv_out.", "input_hint_block.14.") ||
        replace_prefix(&s, "controlnet_mid_block.", "middle_block_out.0.")) {
        *out = s;
        return true;
    }
    if (take_indexed(name, "controlnet_cond_embedding.blocks.", &i, &rest)) {
        *out = "input_hint_block." + std::to_string(2 * i + 2) + "." + rest;
        return true;
    }
    if (take_indexed(name, "controlnet_down_blocks.", &i, &rest)) {
        *out = "zero_convs." + std::to_string(i) + ".0." + rest;
        return true;
    }
    return unet_.map(name, out);
}

}  // namespace ggdiff
