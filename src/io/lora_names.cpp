#include "io/lora_names.h"

#include <algorithm>

#include "io/name_util.h"

namespace ggdiff {
namespace {

struct Suffix {
    const char* text;
    LoraPart part;
};

// Longest first where one suffix ends another.
const Suffix kSuffixes[] = {
    // stable-diffusion.cpp's converted files: "lora.<model tensor>.weight.lora_down".
    {".weight.lora_down", LoraPart::Down},
    {".weight.lora_up", LoraPart::Up},
    {".weight.lora_mid", LoraPart::Mid},
    {".weight.alpha", LoraPart::Alpha},
    {".weight.scale", LoraPart::Scale},
    {".weight.diff", LoraPart::Diff},
    {".bias.diff", LoraPart::DiffBias},
    {".lora_down.weight", LoraPart::Down},
    {".lora_up.weight", LoraPart::Up},
    {".lora_mid.weight", LoraPart::Mid},
    {".lora.down.weight", LoraPart::Down},
    {".lora.up.weight", LoraPart::Up},
    {"_lora.down.weight", LoraPart::Down},
    {"_lora.up.weight", LoraPart::Up},
    {".lora_A.default.weight", LoraPart::Down},
    {".lora_B.default.weight", LoraPart::Up},
    {".lora_A.weight", LoraPart::Down},
    {".lora_B.weight", LoraPart::Up},
    {".lora_A", LoraPart::Down},
    {".lora_B", LoraPart::Up},
    {".alpha", LoraPart::Alpha},
    {".scale", LoraPart::Scale},
    {".hada_w1_a", LoraPart::HadaW1A},
    {".hada_w1_b", LoraPart::HadaW1B},
    {".hada_w2_a", LoraPart::HadaW2A},
    {".hada_w2_b", LoraPart::HadaW2B},
    {".hada_t1", LoraPart::HadaT1},
    {".hada_t2", LoraPart::HadaT2},
    {".lokr_w1_a", LoraPart::LokrW1A},
    {".lokr_w1_b", LoraPart::LokrW1B},
    {".lokr_w2_a", LoraPart::LokrW2A},
    {".lokr_w2_b", LoraPart::LokrW2B},
    {".lokr_w1", LoraPart::LokrW1},
    {".lokr_w2", LoraPart::LokrW2},
    {".lokr_t2", LoraPart::LokrT2},
    {".diff_b", LoraPart::DiffBias},
    {".diff", LoraPart::Diff},
    {".dora_scale", LoraPart::DoraScale},
};

std::string dots_to_underscores(std::string s) {
    std::replace(s.begin(), s.end(), '.', '_');
    return s;
}

// "in_layers.2.weight" style ResBlock members, LDM -> diffusers.
std::string resnet_member(const std::string& rest) {
    static const std::pair<const char*, const char*> kMap[] = {
        {"in_layers.0.", "norm1."},          {"in_layers.2.", "conv1."},
        {"out_layers.0.", "norm2."},         {"out_layers.3.", "conv2."},
        {"emb_layers.1.", "time_emb_proj."}, {"skip_connection.", "conv_shortcut."},
    };
    for (const auto& [from, to] : kMap) {
        std::string s = rest;
        if (replace_prefix(&s, from, to)) return s;
    }
    return rest;
}

std::string strip_weight(const std::string& name) {
    const std::string w = ".weight";
    return ends_with(name, w) ? name.substr(0, name.size() - w.size()) : name;
}

}  // namespace

const char* lora_part_name(LoraPart p) {
    for (const Suffix& s : kSuffixes) {
        if (s.part == p) return s.text + 1;
    }
    return "?";
}

std::string normalize_lora_key(std::string key) {
    for (const char* wrapper : {"base_model.model.", "lora_", "lora."}) {
        if (starts_with(key, wrapper)) {
            key = key.substr(std::string(wrapper).size());
            break;
        }
    }
    const std::string processor = ".processor";
    for (size_t at; (at = key.find(processor)) != std::string::npos;)
        key.erase(at, processor.size());
    return dots_to_underscores(key);
}

std::string lora_canonical_key(const std::string& canonical_weight) {
    return dots_to_underscores(strip_weight(canonical_weight));
}

std::optional<LoraTensorName> parse_lora_tensor_name(const std::string& name) {
    for (const Suffix& s : kSuffixes) {
        if (ends_with(name, s.text) && name.size() > std::string(s.text).size()) {
            return LoraTensorName{
                normalize_lora_key(name.substr(0, name.size() - std::string(s.text).size())),
                s.part};
        }
    }
    return std::nullopt;
}

UnetDiffusersPaths::UnetDiffusersPaths(const std::vector<std::string>& ldm_names) {
    // The first downsample op sits right after level 0's ResBlocks.
    int first_op = -1, last_input = 0;
    for (const std::string& n : ldm_names) {
        int i = 0;
        std::string rest;
        if (!take_indexed(n, "input_blocks.", &i, &rest)) continue;
        last_input = std::max(last_input, i);
        if (starts_with(rest, "0.op.") && (first_op < 0 || i < first_op)) first_op = i;
    }
    res_blocks_ = first_op > 1 ? first_op - 1 : std::max(1, last_input);
}

bool UnetDiffusersPaths::map(const std::string& ldm, std::string* out) const {
    static const std::pair<const char*, const char*> kFixed[] = {
        {"time_embed.0.", "time_embedding.linear_1."},
        {"time_embed.2.", "time_embedding.linear_2."},
        {"label_emb.0.0.", "add_embedding.linear_1."},
        {"label_emb.0.2.", "add_embedding.linear_2."},
        {"input_blocks.0.0.", "conv_in."},
        {"out.0.", "conv_norm_out."},
        {"out.2.", "conv_out."},
    };
    for (const auto& [from, to] : kFixed) {
        std::string s = ldm;
        if (replace_prefix(&s, from, to)) {
            *out = s;
            return true;
        }
    }
    const int per = res_blocks_ + 1;
    int i = 0, part = 0;
    std::string rest, member;
    if (take_indexed(ldm, "input_blocks.", &i, &rest) && i >= 1 &&
        take_indexed(rest, "", &part, &member)) {
        const int level = (i - 1) / per, j = (i - 1) % per;
        const std::string down = "down_blocks." + std::to_string(level) + ".";
        if (j == res_blocks_) {
            if (part != 0 || !replace_prefix(&member, "op.", "")) return false;
            *out = down + "downsamplers.0.conv." + member;
        } else if (part == 0) {
            *out = down + "resnets." + std::to_string(j) + "." + resnet_member(member);
        } else if (part == 1) {
            *out = down + "attentions." + std::to_string(j) + "." + member;
        } else {
            return false;
        }
        return true;
    }
    if (take_indexed(ldm, "middle_block.", &part, &member)) {
        // middle_block.1 is the transformer when there is one (it has no in_layers).
        const bool transformer_1 = part == 1 && !starts_with(member, "in_layers.") &&
                                   !starts_with(member, "out_layers.") &&
                                   !starts_with(member, "emb_layers.") &&
                                   !starts_with(member, "skip_connection.");
        if (transformer_1) {
            *out = "mid_block.attentions.0." + member;
        } else {
            *out = "mid_block.resnets." + std::to_string(part == 0 ? 0 : 1) + "." +
                   resnet_member(member);
        }
        return true;
    }
    if (take_indexed(ldm, "output_blocks.", &i, &rest) && take_indexed(rest, "", &part, &member)) {
        const int level = i / per, j = i % per;
        const std::string up = "up_blocks." + std::to_string(level) + ".";
        if (part == 0) {
            *out = up + "resnets." + std::to_string(j) + "." + resnet_member(member);
        } else if (starts_with(member, "conv.")) {
            *out = up + "upsamplers.0." + member;
        } else if (part == 1) {
            *out = up + "attentions." + std::to_string(j) + "." + member;
        } else {
            return false;
        }
        return true;
    }
    return false;
}

std::vector<std::string> lora_unet_keys(const std::string& ldm_weight,
                                        const UnetDiffusersPaths& paths) {
    const std::string ldm = dots_to_underscores(strip_weight(ldm_weight));
    // Bare paths too: PEFT files saved from the UNet alone have no "unet." prefix.
    std::vector<std::string> keys = {"unet_" + ldm, "diffusion_model_" + ldm, ldm};
    std::string diffusers;
    if (paths.map(ldm_weight, &diffusers)) {
        const std::string d = dots_to_underscores(strip_weight(diffusers));
        keys.push_back("unet_" + d);
        keys.push_back(d);
    }
    return keys;
}

std::vector<std::string> lora_clip_keys(const std::string& hf_weight,
                                        const std::vector<std::string>& prefixes) {
    const std::string path = dots_to_underscores(strip_weight(hf_weight));
    std::vector<std::string> keys;
    for (const std::string& p : prefixes) keys.push_back(p + "_" + path);
    return keys;
}

}  // namespace ggdiff
