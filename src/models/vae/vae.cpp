#include "models/vae/vae.h"

#include "io/checkpoint_file.h"
#include "nn/layers.h"

namespace ggdiff::models {

namespace {

using Shapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

// --- graph pieces ----------------------------------------------------------------

// LDM ResnetBlock without time embedding: norm1, SiLU, conv1, norm2, SiLU, conv2, plus
// the input (through a 1x1 nin_shortcut when the width changes).
ggml_tensor* resnet_block(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t in,
                          int64_t out) {
    ggml_tensor* h = nn::group_norm(c, x, p + "norm1", in);
    h = ggml_silu(c.ctx, h);
    h = nn::conv2d(c, h, p + "conv1", in, out, 3, 1, 1);
    h = nn::group_norm(c, h, p + "norm2", out);
    h = ggml_silu(c.ctx, h);
    h = nn::conv2d(c, h, p + "conv2", out, out, 3, 1, 1);
    if (in != out) x = nn::conv2d(c, x, p + "nin_shortcut", in, out, 1);
    return ggml_add(c.ctx, h, x);
}

// LDM AttnBlock: single-head self-attention over all pixels. The 1x1 convs q/k/v/proj_out
// are applied as linears on the token layout (same weights, [C, C, 1, 1] == [C, C]).
ggml_tensor* attn_block(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t ch) {
    const int64_t w = x->ne[0], h = x->ne[1];
    ggml_tensor* t = nn::image_to_tokens(c.ctx, nn::group_norm(c, x, p + "norm", ch));
    ggml_tensor* q = nn::linear(c, t, p + "q", ch, ch);
    ggml_tensor* k = nn::linear(c, t, p + "k", ch, ch);
    ggml_tensor* v = nn::linear(c, t, p + "v", ch, ch);
    ggml_tensor* a = nn::attention(c.ctx, q, k, v, 1);
    a = nn::linear(c, a, p + "proj_out", ch, ch);
    return ggml_add(c.ctx, nn::tokens_to_image(c.ctx, a, w, h), x);
}

// Stride-2 3x3 conv after zero padding one column on the right and one row at the
// bottom (torch: F.pad(x, (0, 1, 0, 1))); with seamless tiling the pad wraps around.
ggml_tensor* downsample(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t ch) {
    x = nn::pad_conv_input(c.ctx, x, 0, 1, 0, 1);
    return nn::conv2d(c, x, p + "conv", ch, ch, 3, 2, 0);
}

ggml_tensor* upsample(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t ch) {
    x = nn::upsample_nearest2x(c.ctx, x);
    return nn::conv2d(c, x, p + "conv", ch, ch, 3, 1, 1);
}

ggml_tensor* mid_blocks(nn::Ctx& c, ggml_tensor* h, const std::string& p, int64_t ch) {
    h = resnet_block(c, h, p + "mid.block_1.", ch, ch);
    h = attn_block(c, h, p + "mid.attn_1.", ch);
    return resnet_block(c, h, p + "mid.block_2.", ch, ch);
}

// --- shape list (mirrors the graphs above) -------------------------------------------

void add_conv(Shapes& s, const std::string& p, int64_t in, int64_t out, int64_t k) {
    s.push_back({p + ".weight", {out, in, k, k}});
    s.push_back({p + ".bias", {out}});
}

void add_norm(Shapes& s, const std::string& p, int64_t ch) {
    s.push_back({p + ".weight", {ch}});
    s.push_back({p + ".bias", {ch}});
}

void add_resnet(Shapes& s, const std::string& p, int64_t in, int64_t out) {
    add_norm(s, p + "norm1", in);
    add_conv(s, p + "conv1", in, out, 3);
    add_norm(s, p + "norm2", out);
    add_conv(s, p + "conv2", out, out, 3);
    if (in != out) add_conv(s, p + "nin_shortcut", in, out, 1);
}

void add_mid(Shapes& s, const std::string& p, int64_t ch) {
    add_resnet(s, p + "mid.block_1.", ch, ch);
    add_norm(s, p + "mid.attn_1.norm", ch);
    for (const char* n : {"q", "k", "v", "proj_out"}) add_conv(s, p + "mid.attn_1." + n, ch, ch, 1);
    add_resnet(s, p + "mid.block_2.", ch, ch);
}

// Stored shape equals the expected one; a 1x1 kernel may also be stored as a matrix.
bool shape_matches(const std::vector<int64_t>& got, const std::vector<int64_t>& want) {
    if (got == want) return true;
    return want.size() == 4 && want[2] == 1 && want[3] == 1 && got.size() == 2 &&
           got[0] == want[0] && got[1] == want[1];
}

const TensorInfo* require(const TensorIndex& index, const std::string& name, size_t rank,
                          Status* err) {
    const TensorInfo* t = index.find(name);
    if (!t) {
        *err = Status::Error("VAE: missing tensor " + name);
    } else if (t->shape.size() != rank) {
        *err = Status::Error("VAE: tensor " + name + " has shape " + shape_string(t->shape) +
                             ", expected " + std::to_string(rank) + " dimensions");
        t = nullptr;
    }
    return t;
}

}  // namespace

Shapes vae_tensor_shapes(const VaeConfig& cfg, const std::string& prefix) {
    Shapes s;
    const int levels = static_cast<int>(cfg.ch_mult.size());
    const int64_t top = static_cast<int64_t>(cfg.ch) * cfg.ch_mult.back();

    if (cfg.has_quant_conv)
        add_conv(s, prefix + cfg.post_quant_conv(), cfg.z_channels, cfg.z_channels, 1);
    const std::string d = prefix + "decoder.";
    add_conv(s, d + "conv_in", cfg.z_channels, top, 3);
    add_mid(s, d, top);
    int64_t block_in = top;
    for (int i = levels - 1; i >= 0; --i) {
        const int64_t block_out = static_cast<int64_t>(cfg.ch) * cfg.ch_mult[i];
        for (int j = 0; j <= cfg.num_res_blocks; ++j) {
            add_resnet(s, d + "up." + std::to_string(i) + ".block." + std::to_string(j) + ".",
                       block_in, block_out);
            block_in = block_out;
        }
        if (i != 0)
            add_conv(s, d + "up." + std::to_string(i) + ".upsample.conv", block_in, block_in, 3);
    }
    add_norm(s, d + "norm_out", block_in);
    add_conv(s, d + "conv_out", block_in, cfg.out_ch, 3);

    if (!cfg.has_encoder) return s;
    const std::string e = prefix + "encoder.";
    add_conv(s, e + "conv_in", cfg.in_channels, cfg.ch, 3);
    block_in = cfg.ch;
    for (int i = 0; i < levels; ++i) {
        const int64_t block_out = static_cast<int64_t>(cfg.ch) * cfg.ch_mult[i];
        for (int j = 0; j < cfg.num_res_blocks; ++j) {
            add_resnet(s, e + "down." + std::to_string(i) + ".block." + std::to_string(j) + ".",
                       block_in, block_out);
            block_in = block_out;
        }
        if (i != levels - 1) {
            add_conv(s, e + "down." + std::to_string(i) + ".downsample.conv", block_in, block_in,
                     3);
        }
    }
    add_mid(s, e, block_in);
    add_norm(s, e + "norm_out", block_in);
    add_conv(s, e + "conv_out", block_in, 2 * cfg.z_channels, 3);
    if (cfg.has_quant_conv) {
        add_conv(s, prefix + cfg.quant_conv(), 2 * cfg.z_channels, 2 * cfg.z_channels, 1);
    }
    return s;
}

Result<VaeConfig> detect_vae(const TensorIndex& index, const std::string& prefix) {
    VaeConfig cfg;
    Status err;
    const std::string d = prefix + "decoder.";

    const TensorInfo* conv_in = require(index, d + "conv_in.weight", 4, &err);
    if (!conv_in) return err;
    const TensorInfo* conv_out = require(index, d + "conv_out.weight", 4, &err);
    if (!conv_out) return err;
    cfg.z_channels = static_cast<int>(conv_in->shape[1]);
    cfg.out_ch = static_cast<int>(conv_out->shape[0]);
    cfg.ch = static_cast<int>(conv_out->shape[1]);
    if (cfg.ch <= 0 || cfg.ch % 32 != 0) {
        return Status::Error("VAE: " + d + "conv_out.weight has shape " +
                             shape_string(conv_out->shape) +
                             ": base width must be a positive multiple of 32 (GroupNorm 32)");
    }

    // Levels and widths from the decoder's up blocks; resnets per level from up.0.
    cfg.ch_mult.clear();
    for (int i = 0;; ++i) {
        const std::string name = d + "up." + std::to_string(i) + ".block.0.conv2.weight";
        const TensorInfo* t = index.find(name);
        if (!t) break;
        if (t->shape.empty() || t->shape[0] % cfg.ch != 0) {
            return Status::Error("VAE: tensor " + name + " has shape " + shape_string(t->shape) +
                                 ", not a multiple of the base width " + std::to_string(cfg.ch));
        }
        cfg.ch_mult.push_back(static_cast<int>(t->shape[0] / cfg.ch));
    }
    if (cfg.ch_mult.empty())
        return Status::Error("VAE: missing tensor " + d + "up.0.block.0.conv2.weight");
    int blocks = 0;
    while (index.has(d + "up.0.block." + std::to_string(blocks) + ".conv1.weight")) ++blocks;
    cfg.num_res_blocks = blocks - 1;
    if (cfg.num_res_blocks < 1) {
        return Status::Error("VAE: missing tensor " + d + "up.0.block.1.conv1.weight");
    }

    cfg.quant_conv_inside = index.has(prefix + "decoder.post_quant_conv.weight");
    cfg.has_quant_conv = cfg.quant_conv_inside || index.has(prefix + "post_quant_conv.weight");
    cfg.has_encoder = index.has(prefix + "encoder.conv_in.weight");
    if (cfg.has_encoder) {
        const TensorInfo* e_in = require(index, prefix + "encoder.conv_in.weight", 4, &err);
        if (!e_in) return err;
        cfg.in_channels = static_cast<int>(e_in->shape[1]);
    }

    // Latent normalization by latent width; families with the same shapes but other
    // constants (SDXL, SD3) override it in their recipe.
    if (cfg.z_channels == 16) {
        cfg.scale_factor = 0.3611f;  // FLUX.1
        cfg.shift_factor = 0.1159f;
    } else if (cfg.z_channels != 4) {
        cfg.scale_factor = 1.0f;
    }

    // Every tensor the graphs read must be there with the right shape.
    for (const auto& [name, want] : vae_tensor_shapes(cfg, prefix)) {
        const TensorInfo* t = index.find(name);
        if (!t) return Status::Error("VAE: missing tensor " + name);
        if (!shape_matches(t->shape, want)) {
            return Status::Error("VAE: tensor " + name + " has shape " + shape_string(t->shape) +
                                 ", expected " + shape_string(want));
        }
    }
    return cfg;
}

ggml_tensor* build_vae_decode(nn::Ctx& c, const VaeConfig& cfg, ggml_tensor* z,
                              const std::string& prefix) {
    const int levels = static_cast<int>(cfg.ch_mult.size());
    const int64_t top = static_cast<int64_t>(cfg.ch) * cfg.ch_mult.back();
    const std::string d = prefix + "decoder.";

    if (cfg.has_quant_conv) {
        z = nn::conv2d(c, z, prefix + cfg.post_quant_conv(), cfg.z_channels, cfg.z_channels, 1);
    }
    ggml_tensor* h = nn::conv2d(c, z, d + "conv_in", cfg.z_channels, top, 3, 1, 1);
    h = mid_blocks(c, h, d, top);

    int64_t block_in = top;
    for (int i = levels - 1; i >= 0; --i) {
        const int64_t block_out = static_cast<int64_t>(cfg.ch) * cfg.ch_mult[i];
        const std::string up = d + "up." + std::to_string(i) + ".";
        for (int j = 0; j <= cfg.num_res_blocks; ++j) {
            h = resnet_block(c, h, up + "block." + std::to_string(j) + ".", block_in, block_out);
            block_in = block_out;
        }
        if (i != 0) h = upsample(c, h, up + "upsample.", block_in);
    }
    h = nn::group_norm(c, h, d + "norm_out", block_in);
    h = ggml_silu(c.ctx, h);
    return nn::conv2d(c, h, d + "conv_out", block_in, cfg.out_ch, 3, 1, 1);
}

ggml_tensor* build_vae_encode(nn::Ctx& c, const VaeConfig& cfg, ggml_tensor* x,
                              const std::string& prefix) {
    const int levels = static_cast<int>(cfg.ch_mult.size());
    const std::string e = prefix + "encoder.";

    ggml_tensor* h = nn::conv2d(c, x, e + "conv_in", cfg.in_channels, cfg.ch, 3, 1, 1);
    int64_t block_in = cfg.ch;
    for (int i = 0; i < levels; ++i) {
        const int64_t block_out = static_cast<int64_t>(cfg.ch) * cfg.ch_mult[i];
        const std::string down = e + "down." + std::to_string(i) + ".";
        for (int j = 0; j < cfg.num_res_blocks; ++j) {
            h = resnet_block(c, h, down + "block." + std::to_string(j) + ".", block_in, block_out);
            block_in = block_out;
        }
        if (i != levels - 1) h = downsample(c, h, down + "downsample.", block_in);
    }
    h = mid_blocks(c, h, e, block_in);
    h = nn::group_norm(c, h, e + "norm_out", block_in);
    h = ggml_silu(c.ctx, h);
    h = nn::conv2d(c, h, e + "conv_out", block_in, 2 * cfg.z_channels, 3, 1, 1);
    if (cfg.has_quant_conv) {
        h = nn::conv2d(c, h, prefix + cfg.quant_conv(), 2 * cfg.z_channels, 2 * cfg.z_channels, 1);
    }
    return h;
}

}  // namespace ggdiff::models
