// diffusers AutoencoderKL -> LDM AutoencoderKL names. diffusers numbers the decoder's
// up blocks from the lowest resolution; LDM numbers them from the highest.
#include <algorithm>

#include "io/name_map.h"
#include "io/name_util.h"

namespace ggdiff {

namespace {

std::string map_resnet_member(const std::string& rest) {
    std::string s = rest;
    replace_prefix(&s, "conv_shortcut.", "nin_shortcut.");
    return s;
}

std::string map_attention_member(const std::string& rest) {
    static const std::pair<const char*, const char*> kMap[] = {
        {"group_norm.", "norm."},    {"query.", "q."}, {"key.", "k."},  {"value.", "v."},
        {"proj_attn.", "proj_out."}, {"to_q.", "q."},  {"to_k.", "k."}, {"to_v.", "v."},
        {"to_out.0.", "proj_out."},
    };
    for (const auto& [from, to] : kMap) {
        std::string s = rest;
        if (replace_prefix(&s, from, to)) return s;
    }
    return rest;
}

// Maps the part after "encoder." / "decoder.".
bool map_coder(const std::string& rest, bool decoder, int up_levels, std::string* out) {
    int level = 0, j = 0;
    std::string r, inner;
    std::string s = rest;
    if (replace_prefix(&s, "conv_norm_out.", "norm_out.") || starts_with(s, "conv_in.") ||
        starts_with(s, "conv_out.")) {
        *out = s;
        return true;
    }
    if (take_indexed(rest, "mid_block.resnets.", &j, &r)) {
        *out = "mid.block_" + std::to_string(j + 1) + "." + map_resnet_member(r);
        return true;
    }
    if (replace_prefix(&s, "mid_block.attentions.0.", "")) {
        *out = "mid.attn_1." + map_attention_member(s);
        return true;
    }
    if (!decoder && take_indexed(rest, "down_blocks.", &level, &r)) {
        const std::string base = "down." + std::to_string(level) + ".";
        if (take_indexed(r, "resnets.", &j, &inner)) {
            *out = base + "block." + std::to_string(j) + "." + map_resnet_member(inner);
            return true;
        }
        if (replace_prefix(&r, "downsamplers.0.", "")) {
            *out = base + "downsample." + r;
            return true;
        }
        return false;
    }
    if (decoder && take_indexed(rest, "up_blocks.", &level, &r)) {
        const std::string base = "up." + std::to_string(up_levels - 1 - level) + ".";
        if (take_indexed(r, "resnets.", &j, &inner)) {
            *out = base + "block." + std::to_string(j) + "." + map_resnet_member(inner);
            return true;
        }
        if (replace_prefix(&r, "upsamplers.0.", "")) {
            *out = base + "upsample." + r;
            return true;
        }
    }
    return false;
}

}  // namespace

bool DiffusersVaeMap::detect(const std::vector<std::string>& names) {
    for (const std::string& n : names) {
        if (starts_with(n, "encoder.down_blocks.") || starts_with(n, "decoder.up_blocks."))
            return true;
    }
    return false;
}

DiffusersVaeMap::DiffusersVaeMap(const std::vector<std::string>& names) {
    int max_level = -1;
    for (const std::string& n : names) {
        int level = 0;
        std::string rest;
        if (take_indexed(n, "decoder.up_blocks.", &level, &rest))
            max_level = std::max(max_level, level);
    }
    if (max_level >= 0) up_levels_ = max_level + 1;
}

bool DiffusersVaeMap::map(const std::string& name, std::string* out) const {
    std::string rest = name;
    std::string mapped;
    if (replace_prefix(&rest, "encoder.", "") && map_coder(rest, false, up_levels_, &mapped)) {
        *out = "encoder." + mapped;
        return true;
    }
    rest = name;
    if (replace_prefix(&rest, "decoder.", "") && map_coder(rest, true, up_levels_, &mapped)) {
        *out = "decoder." + mapped;
        return true;
    }
    return false;
}

}  // namespace ggdiff
