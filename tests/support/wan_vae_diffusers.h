// The inverse of the diffusers AutoencoderKLWan renaming, for tests: an original Wan 2.1 VAE
// name ("decoder.upsamples.4.shortcut.weight") -> its diffusers name
// ("decoder.up_blocks.1.resnets.0.conv_shortcut.weight"). Written from diffusers' block
// structure (4 up blocks of 3 resnets, an upsampler after each of the first three), not from
// the renaming it checks. to_diffusers22: the same for the Wan 2.2 VAE, whose groups
// ("decoder.upsamples.1.upsamples.3.resample.1.weight") become diffusers' residual blocks
// ("decoder.up_blocks.1.upsampler.resample.1.weight").
#pragma once

#include <string>

namespace wan_vae_test {

inline bool swap_prefix(std::string* s, const std::string& from, const std::string& to) {
    if (s->compare(0, from.size(), from) != 0) return false;
    *s = to + s->substr(from.size());
    return true;
}

// "residual.0.gamma" -> "norm1.gamma", ...; a resampler's member is kept.
inline std::string diffusers_member(std::string m) {
    (void)(swap_prefix(&m, "residual.0.", "norm1.") || swap_prefix(&m, "residual.2.", "conv1.") ||
           swap_prefix(&m, "residual.3.", "norm2.") || swap_prefix(&m, "residual.6.", "conv2.") ||
           swap_prefix(&m, "shortcut.", "conv_shortcut."));
    return m;
}

// "<N>.<rest>" -> N and rest; -1 when no index leads.
inline int split_index(const std::string& s, std::string* rest) {
    const size_t dot = s.find('.');
    if (dot == 0 || dot == std::string::npos) return -1;
    for (size_t i = 0; i < dot; ++i) {
        if (s[i] < '0' || s[i] > '9') return -1;
    }
    *rest = s.substr(dot + 1);
    return std::stoi(s.substr(0, dot));
}

inline std::string to_diffusers(const std::string& name) {
    std::string s = name;
    if (swap_prefix(&s, "conv1.", "quant_conv.") || swap_prefix(&s, "conv2.", "post_quant_conv."))
        return s;
    const std::string coder = name.substr(0, 8);  // "encoder." / "decoder."
    std::string r = name.substr(8), rest;
    if (swap_prefix(&r, "conv1.", "conv_in.") || swap_prefix(&r, "head.0.", "norm_out.") ||
        swap_prefix(&r, "head.2.", "conv_out.") ||
        swap_prefix(&r, "middle.1.", "mid_block.attentions.0.")) {
        return coder + r;
    }
    if (swap_prefix(&r, "middle.", "")) {
        const int k = split_index(r, &rest);
        return coder + "mid_block.resnets." + std::to_string(k / 2) + "." + diffusers_member(rest);
    }
    if (swap_prefix(&r, "downsamples.", "")) {
        const int k = split_index(r, &rest);
        return coder + "down_blocks." + std::to_string(k) + "." + diffusers_member(rest);
    }
    if (swap_prefix(&r, "upsamples.", "")) {
        const int k = split_index(r, &rest);
        const std::string block = coder + "up_blocks." + std::to_string(k / 4) + ".";
        if (k % 4 == 3) return block + "upsamplers.0." + rest;
        return block + "resnets." + std::to_string(k % 4) + "." + diffusers_member(rest);
    }
    return name;
}

inline std::string to_diffusers22(const std::string& name) {
    for (const std::string coder : {"encoder.", "decoder."}) {
        const bool enc = coder == "encoder.";
        const std::string group = enc ? "downsamples." : "upsamples.";
        std::string r = name, inner, rest;
        if (!swap_prefix(&r, coder + group, "")) continue;
        const int n = split_index(r, &inner);
        if (n < 0 || !swap_prefix(&inner, group, "")) continue;
        const int m = split_index(inner, &rest);
        const std::string block =
            coder + (enc ? "down_blocks." : "up_blocks.") + std::to_string(n) + ".";
        // A group's resampler (the last block) keeps its members; the rest are resnets.
        if (rest.rfind("resample.", 0) == 0 || rest.rfind("time_conv.", 0) == 0)
            return block + (enc ? "downsampler." : "upsampler.") + rest;
        return block + "resnets." + std::to_string(m) + "." + diffusers_member(rest);
    }
    return to_diffusers(name);
}

}  // namespace wan_vae_test
