// diffusers UNet2DConditionModel -> LDM UNetModel names (SD1, SD2, SDXL).
//
// LDM numbers the down path as input_blocks 1.. with, per level, `R` resnet(+attention)
// blocks followed by one downsample block, and the up path as output_blocks with R+1
// resnet(+attention) blocks per level, the last of which also holds the upsampler.
#include <algorithm>

#include "io/name_map.h"
#include "io/name_util.h"

namespace ggdiff {

namespace {

// diffusers ResnetBlock2D member -> LDM ResBlock member.
std::string map_resnet_member(const std::string& rest) {
    static const std::pair<const char*, const char*> kMap[] = {
        {"norm1.", "in_layers.0."},          {"conv1.", "in_layers.2."},
        {"norm2.", "out_layers.0."},         {"conv2.", "out_layers.3."},
        {"time_emb_proj.", "emb_layers.1."}, {"conv_shortcut.", "skip_connection."},
    };
    for (const auto& [from, to] : kMap) {
        std::string s = rest;
        if (replace_prefix(&s, from, to)) return s;
    }
    return rest;
}

}  // namespace

bool DiffusersUnetMap::detect(const std::vector<std::string>& names) {
    bool conv_in = false, down = false, time = false;
    for (const std::string& n : names) {
        conv_in = conv_in || starts_with(n, "conv_in.");
        down = down || starts_with(n, "down_blocks.");
        time = time || starts_with(n, "time_embedding.");
    }
    return conv_in && down && time;
}

DiffusersUnetMap::DiffusersUnetMap(const std::vector<std::string>& names) {
    int max_down_res = -1, max_up_res = -1, max_up_level = -1;
    std::vector<std::pair<int, bool>> attn;
    for (const std::string& n : names) {
        int level = 0, j = 0;
        std::string rest, inner;
        if (take_indexed(n, "down_blocks.", &level, &rest) &&
            take_indexed(rest, "resnets.", &j, &inner)) {
            max_down_res = std::max(max_down_res, j);
        }
        if (take_indexed(n, "up_blocks.", &level, &rest)) {
            max_up_level = std::max(max_up_level, level);
            if (take_indexed(rest, "resnets.", &j, &inner)) max_up_res = std::max(max_up_res, j);
            if (starts_with(rest, "attentions.")) attn.emplace_back(level, true);
        }
    }
    if (max_down_res >= 0) down_resnets_ = max_down_res + 1;
    if (max_up_res >= 0) up_resnets_ = max_up_res + 1;
    up_attn_.assign(std::max(max_up_level + 1, 0), false);
    for (const auto& [level, has] : attn) up_attn_[level] = has;
}

bool DiffusersUnetMap::map(const std::string& name, std::string* out) const {
    static const std::pair<const char*, const char*> kFixed[] = {
        {"time_embedding.linear_1.", "time_embed.0."},
        {"time_embedding.linear_2.", "time_embed.2."},
        {"add_embedding.linear_1.", "label_emb.0.0."},
        {"add_embedding.linear_2.", "label_emb.0.2."},
        {"conv_in.", "input_blocks.0.0."},
        {"conv_norm_out.", "out.0."},
        {"conv_out.", "out.2."},
        {"mid_block.attentions.0.", "middle_block.1."},
    };
    for (const auto& [from, to] : kFixed) {
        std::string s = name;
        if (replace_prefix(&s, from, to)) {
            *out = s;
            return true;
        }
    }

    int level = 0, j = 0;
    std::string rest, inner;
    if (take_indexed(name, "mid_block.resnets.", &j, &rest)) {
        *out = "middle_block." + std::to_string(2 * j) + "." + map_resnet_member(rest);
        return true;
    }
    if (take_indexed(name, "down_blocks.", &level, &rest)) {
        const int base = 1 + level * (down_resnets_ + 1);
        if (take_indexed(rest, "resnets.", &j, &inner)) {
            *out = "input_blocks." + std::to_string(base + j) + ".0." + map_resnet_member(inner);
            return true;
        }
        if (take_indexed(rest, "attentions.", &j, &inner)) {
            *out = "input_blocks." + std::to_string(base + j) + ".1." + inner;
            return true;
        }
        if (replace_prefix(&rest, "downsamplers.0.conv.", "")) {
            *out = "input_blocks." + std::to_string(base + down_resnets_) + ".0.op." + rest;
            return true;
        }
        return false;
    }
    if (take_indexed(name, "up_blocks.", &level, &rest)) {
        const int base = level * up_resnets_;
        if (take_indexed(rest, "resnets.", &j, &inner)) {
            *out = "output_blocks." + std::to_string(base + j) + ".0." + map_resnet_member(inner);
            return true;
        }
        if (take_indexed(rest, "attentions.", &j, &inner)) {
            *out = "output_blocks." + std::to_string(base + j) + ".1." + inner;
            return true;
        }
        if (replace_prefix(&rest, "upsamplers.0.", "")) {
            const bool attn = level < static_cast<int>(up_attn_.size()) && up_attn_[level];
            *out = "output_blocks." + std::to_string(base + up_resnets_ - 1) + "." +
                   (attn ? "2." : "1.") + rest;
            return true;
        }
        return false;
    }
    return false;
}

}  // namespace ggdiff
