// diffusers AutoencoderKLWan (the Wan 2.1 layout: Wan 2.1, Qwen Image) -> the original Wan VAE
// names that models/vae/wan_vae.cpp reads.
//
//   quant_conv / post_quant_conv          conv1 / conv2
//   {encoder,decoder}.conv_in             .conv1
//   {encoder,decoder}.norm_out / conv_out .head.0 / .head.2
//   .mid_block.resnets.0 / attentions.0 / resnets.1    .middle.0 / .middle.1 / .middle.2
//   encoder.down_blocks.N                 encoder.downsamples.N (already one flat list)
//   decoder.up_blocks.I.resnets.J         decoder.upsamples.K, K counting the blocks of the
//   decoder.up_blocks.I.upsamplers.0      earlier up blocks (their resnets and upsampler)
//   residual blocks: norm1, conv1, norm2, conv2, conv_shortcut -> residual.0, residual.2,
//   residual.3, residual.6, shortcut; resamplers (resample.1, time_conv) and the attention
//   (norm, to_qkv, proj) keep their member names.
//
// Wan 2.2's AutoencoderKLWan (is_residual, 48 channels) groups its blocks as the original
// Wan 2.2 VAE does, so its groups keep their index:
//   encoder.down_blocks.N.resnets.M       encoder.downsamples.N.downsamples.M
//   encoder.down_blocks.N.downsampler     encoder.downsamples.N.downsamples.R (R: the group's
//   decoder.up_blocks.N.resnets.M         decoder.upsamples.N.upsamples.M      resnet count)
//   decoder.up_blocks.N.upsampler         decoder.upsamples.N.upsamples.R
#include <algorithm>

#include "io/name_map.h"
#include "io/name_util.h"

namespace ggdiff {

namespace {

// A residual block's member ("norm1.gamma") -> the original one ("residual.0.gamma").
bool map_residual_member(const std::string& rest, std::string* out) {
    static const std::pair<const char*, const char*> kMap[] = {
        {"norm1.", "residual.0."}, {"conv1.", "residual.2."},       {"norm2.", "residual.3."},
        {"conv2.", "residual.6."}, {"conv_shortcut.", "shortcut."},
    };
    for (const auto& [from, to] : kMap) {
        std::string s = rest;
        if (replace_prefix(&s, from, to)) {
            *out = s;
            return true;
        }
    }
    return false;
}

// A member of a flat encoder block: a residual block's, or a resampler's kept as it is.
bool map_block_member(const std::string& rest, std::string* out) {
    if (starts_with(rest, "resample.") || starts_with(rest, "time_conv.")) {
        *out = rest;
        return true;
    }
    return map_residual_member(rest, out);
}

bool has_gamma_under(const std::vector<std::string>& names, const char* prefix) {
    for (const std::string& n : names) {
        if (starts_with(n, prefix) && ends_with(n, ".gamma")) return true;
    }
    return false;
}

}  // namespace

bool DiffusersWanVaeMap::detect(const std::vector<std::string>& names) {
    // RMS norms (gamma) in the middle block: the diffusers SD/FLUX VAE has group norms
    // (weight, bias) there, the original Wan names say "middle".
    return has_gamma_under(names, "decoder.mid_block.") ||
           has_gamma_under(names, "encoder.mid_block.");
}

bool DiffusersWanVaeMap::grouped(const std::vector<std::string>& names) {
    for (const std::string& n : names) {
        int i = 0;
        std::string rest;
        if (take_indexed(n, "encoder.down_blocks.", &i, &rest) &&
            (starts_with(rest, "resnets.") || starts_with(rest, "downsampler."))) {
            return true;
        }
        if (take_indexed(n, "decoder.up_blocks.", &i, &rest) && starts_with(rest, "upsampler."))
            return true;
    }
    return false;
}

namespace {

// Resnets per block under `blocks` ("decoder.up_blocks."): the highest index + 1 of each.
std::vector<int> resnet_counts(const std::vector<std::string>& names, const char* blocks) {
    std::vector<int> counts;
    for (const std::string& n : names) {
        int i = 0, j = 0;
        std::string rest, inner;
        if (!take_indexed(n, blocks, &i, &rest) || i > 1000) continue;
        if (static_cast<size_t>(i) >= counts.size()) counts.resize(i + 1, 0);
        if (take_indexed(rest, "resnets.", &j, &inner)) counts[i] = std::max(counts[i], j + 1);
    }
    return counts;
}

}  // namespace

DiffusersWanVaeMap::DiffusersWanVaeMap(const std::vector<std::string>& names)
    : grouped_(grouped(names)),
      up_resnets_(resnet_counts(names, "decoder.up_blocks.")),
      down_resnets_(resnet_counts(names, "encoder.down_blocks.")) {
    // Wan 2.1: the up blocks flatten into one list (each block's resnets, then its upsampler).
    std::vector<int> upsampler(up_resnets_.size(), 0);
    for (const std::string& n : names) {
        int i = 0;
        std::string rest;
        if (take_indexed(n, "decoder.up_blocks.", &i, &rest) &&
            static_cast<size_t>(i) < upsampler.size() && starts_with(rest, "upsamplers.0.")) {
            upsampler[i] = 1;
        }
    }
    int next = 0;
    for (size_t i = 0; i < up_resnets_.size(); ++i) {
        up_first_.push_back(next);
        next += up_resnets_[i] + upsampler[i];
    }
}

bool DiffusersWanVaeMap::map_grouped(const std::string& coder, const std::string& rest,
                                     std::string* out) const {
    const bool enc = coder == "encoder.";
    const std::vector<int>& resnets = enc ? down_resnets_ : up_resnets_;
    const std::string group = enc ? "downsamples." : "upsamples.";
    int i = 0, j = 0;
    std::string r, inner, member;
    if (!take_indexed(rest, enc ? "down_blocks." : "up_blocks.", &i, &r) ||
        static_cast<size_t>(i) >= resnets.size()) {
        return false;
    }
    const std::string base = coder + group + std::to_string(i) + "." + group;
    if (take_indexed(r, "resnets.", &j, &inner) && map_residual_member(inner, &member)) {
        *out = base + std::to_string(j) + "." + member;
        return true;
    }
    if (replace_prefix(&r, enc ? "downsampler." : "upsampler.", "") &&
        map_block_member(r, &member)) {
        *out = base + std::to_string(resnets[i]) + "." + member;
        return true;
    }
    return false;
}

bool DiffusersWanVaeMap::map(const std::string& name, std::string* out) const {
    std::string s = name;
    if (replace_prefix(&s, "quant_conv.", "conv1.") ||
        replace_prefix(&s, "post_quant_conv.", "conv2.")) {
        *out = s;
        return true;
    }
    std::string coder;
    for (const char* c : {"encoder.", "decoder."}) {
        if (starts_with(name, c)) coder = c;
    }
    if (coder.empty()) return false;
    const std::string rest = name.substr(coder.size());
    std::string r = rest, member;
    int i = 0, j = 0;
    if (replace_prefix(&r, "conv_in.", "conv1.") || replace_prefix(&r, "norm_out.", "head.0.") ||
        replace_prefix(&r, "conv_out.", "head.2.")) {
        *out = coder + r;
        return true;
    }
    if (take_indexed(rest, "mid_block.resnets.", &i, &r) && i <= 1 &&
        map_residual_member(r, &member)) {
        *out = coder + "middle." + std::to_string(2 * i) + "." + member;
        return true;
    }
    r = rest;
    if (replace_prefix(&r, "mid_block.attentions.0.", "middle.1.")) {
        *out = coder + r;
        return true;
    }
    if (grouped_) return map_grouped(coder, rest, out);
    if (coder == "encoder." && take_indexed(rest, "down_blocks.", &i, &r) &&
        map_block_member(r, &member)) {
        *out = coder + "downsamples." + std::to_string(i) + "." + member;
        return true;
    }
    if (coder == "decoder." && take_indexed(rest, "up_blocks.", &i, &r) &&
        static_cast<size_t>(i) < up_first_.size()) {
        std::string inner;
        if (take_indexed(r, "resnets.", &j, &inner) && map_residual_member(inner, &member)) {
            *out = coder + "upsamples." + std::to_string(up_first_[i] + j) + "." + member;
            return true;
        }
        if (replace_prefix(&r, "upsamplers.0.", "") && map_block_member(r, &member)) {
            *out =
                coder + "upsamples." + std::to_string(up_first_[i] + up_resnets_[i]) + "." + member;
            return true;
        }
    }
    return false;
}

}  // namespace ggdiff
