#include "models/diffusion/controlnet.h"

#include "io/checkpoint_file.h"
#include "nn/layers.h"

namespace ggdiff::models {
namespace {

// The hint encoder: 8 3x3 convs; these (0-based) convs downsample by 2.
constexpr int kHintConvs = 8;
bool hint_conv_strided(int conv) {
    return conv == 2 || conv == 4 || conv == 6;
}
std::string hint_conv_name(int conv) {
    return "input_hint_block." + std::to_string(2 * conv);
}

// Output channels of each input block (the skip connections), in order.
std::vector<int> block_channels(const UNetConfig& u) {
    std::vector<int> out{u.model_channels};
    const size_t levels = u.channel_mult.size();
    for (size_t l = 0; l < levels; ++l) {
        for (int j = 0; j < u.num_res_blocks; ++j)
            out.push_back(u.channel_mult[l] * u.model_channels);
        if (l + 1 < levels) out.push_back(u.channel_mult[l] * u.model_channels);
    }
    return out;
}

// A [out, in, k, k] conv weight with the given sizes (in or out < 0: any).
Result<std::vector<int64_t>> conv_shape(const TensorIndex& index, const std::string& name, int k,
                                        int64_t in, int64_t out) {
    const TensorInfo* t = index.find(name);
    if (!t) return Status::Error("ControlNet tensor '" + name + "' is missing");
    const std::vector<int64_t>& s = t->shape;
    if (s.size() != 4 || s[2] != k || s[3] != k || (in >= 0 && s[1] != in) ||
        (out >= 0 && s[0] != out)) {
        std::string want = "[" + (out >= 0 ? std::to_string(out) : std::string("out")) + ", " +
                           (in >= 0 ? std::to_string(in) : std::string("in")) + ", " +
                           std::to_string(k) + ", " + std::to_string(k) + "]";
        return Status::Error("ControlNet tensor '" + name + "' has shape " + shape_string(s) +
                             ", expected " + want);
    }
    return s;
}

std::string widths_text(const UNetConfig& u) {
    std::string s;
    for (size_t l = 0; l < u.channel_mult.size(); ++l) {
        s += (l ? "/" : "") + std::to_string(u.channel_mult[l] * u.model_channels);
    }
    return s;
}

}  // namespace

int ControlNetConfig::outputs() const {
    return static_cast<int>(block_channels(net).size()) + 1;
}

int ControlNetConfig::residual_channels(int i) const {
    const std::vector<int> ch = block_channels(net);
    return i < static_cast<int>(ch.size()) ? ch[i] : net.channel_mult.back() * net.model_channels;
}

Result<ControlNetConfig> detect_controlnet(const TensorIndex& index, const std::string& prefix) {
    ControlNetConfig cfg;
    auto net = detect_unet_encoder(index, prefix);
    if (!net.ok()) return net.status().with_context("ControlNet");
    cfg.net = *net;

    int64_t in = -1;
    for (int i = 0; i < kHintConvs; ++i) {
        const std::string name = prefix + hint_conv_name(i) + ".weight";
        const int64_t out = i + 1 == kHintConvs ? cfg.net.model_channels : -1;
        auto s = conv_shape(index, name, 3, in, out);
        if (!s.ok()) return s.status();
        if (i == 0) cfg.hint_channels = static_cast<int>((*s)[1]);
        cfg.hint_widths.push_back(static_cast<int>((*s)[0]));
        in = (*s)[0];
    }
    const std::string extra = prefix + hint_conv_name(kHintConvs) + ".weight";
    if (index.has(extra)) {
        return Status::Error("ControlNet tensor '" + extra +
                             "': the hint encoder has more than 8 convolutions, which ggdiff "
                             "does not know");
    }
    const std::vector<int> ch = block_channels(cfg.net);
    for (size_t i = 0; i < ch.size(); ++i) {
        const std::string name = prefix + "zero_convs." + std::to_string(i) + ".0.weight";
        GGDIFF_TRY(conv_shape(index, name, 1, ch[i], ch[i]).status());
    }
    const int mid = cfg.net.channel_mult.back() * cfg.net.model_channels;
    GGDIFF_TRY(conv_shape(index, prefix + "middle_block_out.0.weight", 1, mid, mid).status());
    return cfg;
}

Status check_controlnet_fits(const ControlNetConfig& control, const UNetConfig& unet) {
    const UNetConfig& c = control.net;
    const bool same_levels = c.channel_mult.size() == unet.channel_mult.size() &&
                             c.num_res_blocks == unet.num_res_blocks &&
                             c.model_channels == unet.model_channels;
    bool same_widths = same_levels;
    for (size_t l = 0; same_widths && l < c.channel_mult.size(); ++l) {
        same_widths = c.channel_mult[l] == unet.channel_mult[l];
    }
    if (!same_widths) {
        return Status::Error(
            "the ControlNet's levels (" + widths_text(c) + ", " + std::to_string(c.num_res_blocks) +
            " blocks each) do not match the UNet's (" + widths_text(unet) + ", " +
            std::to_string(unet.num_res_blocks) + " blocks each): it was made for another model");
    }
    if (c.context_dim != unet.context_dim) {
        return Status::Error("the ControlNet attends to a " + std::to_string(c.context_dim) +
                             "-wide text context, the UNet to " + std::to_string(unet.context_dim) +
                             ": it was made for another model");
    }
    if (c.adm_in_channels != unet.adm_in_channels) {
        return Status::Error("the ControlNet's label input (" + std::to_string(c.adm_in_channels) +
                             ") differs from the UNet's (" + std::to_string(unet.adm_in_channels) +
                             "): it was made for another model");
    }
    if (c.in_channels != unet.out_channels) {
        return Status::Error("the ControlNet takes " + std::to_string(c.in_channels) +
                             " latent channels, the UNet makes " +
                             std::to_string(unet.out_channels));
    }
    return Status::Ok();
}

std::vector<ggml_tensor*> build_controlnet(nn::Ctx& c, const ControlNetConfig& cfg, ggml_tensor* x,
                                           ggml_tensor* timesteps, ggml_tensor* context,
                                           ggml_tensor* hint, ggml_tensor* y, float strength,
                                           const std::string& prefix) {
    // The hint encoder, SiLU after every conv but the last.
    ggml_tensor* h = hint;
    int64_t in = cfg.hint_channels;
    for (int i = 0; i < kHintConvs; ++i) {
        const int64_t out = cfg.hint_widths[i];
        h = nn::conv2d(c, h, prefix + hint_conv_name(i), in, out, 3, hint_conv_strided(i) ? 2 : 1,
                       1);
        if (i + 1 < kHintConvs) h = ggml_silu(c.ctx, h);
        in = out;
    }
    const UNetEncoderOutputs enc =
        build_unet_encoder(c, cfg.net, x, timesteps, context, prefix, y, h);
    std::vector<ggml_tensor*> out;
    for (size_t i = 0; i < enc.blocks.size(); ++i) {
        const int64_t ch = cfg.residual_channels(static_cast<int>(i));
        out.push_back(nn::conv2d(c, enc.blocks[i],
                                 prefix + "zero_convs." + std::to_string(i) + ".0", ch, ch, 1));
    }
    const int64_t mid = cfg.net.channel_mult.back() * cfg.net.model_channels;
    out.push_back(nn::conv2d(c, enc.middle, prefix + "middle_block_out.0", mid, mid, 1));
    for (ggml_tensor*& t : out) t = ggml_scale(c.ctx, t, strength);
    return out;
}

}  // namespace ggdiff::models
