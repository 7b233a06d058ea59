#include "models/diffusion/unet.h"


#include "io/checkpoint_file.h"
#include "nn/layers.h"

namespace ggdiff::models {
namespace {

// ---------------------------------------------------------------------------------------
// Detection

// Looks tensors up under the model prefix and turns absence or a wrong rank into an
// error that names the tensor.
class Probe {
  public:
    Probe(const TensorIndex& index, const std::string& prefix) : index_(index), prefix_(prefix) {}

    bool has(const std::string& name) const { return index_.has(prefix_ + name); }

    // Torch-order shape of `name`, which must exist with the given rank.
    Result<std::vector<int64_t>> shape(const std::string& name, size_t rank) const {
        const TensorInfo* t = index_.find(prefix_ + name);
        if (!t) return Status::Error("UNet tensor '" + prefix_ + name + "' is missing");
        if (t->shape.size() != rank) {
            return Status::Error("UNet tensor '" + prefix_ + name + "' has shape " +
                                 shape_string(t->shape) + ", expected " + std::to_string(rank) +
                                 " dimensions");
        }
        return t->shape;
    }

    Status odd(const std::string& name, const std::string& why) const {
        return Status::Error("UNet tensor '" + prefix_ + name + "' " + why);
    }

  private:
    const TensorIndex& index_;
    std::string prefix_;
};

// What one SpatialTransformer says about the model.
struct TransformerInfo {
    int depth = 0;
    int context_dim = 0;
    bool linear_proj = false;
};

// Whether block `b` (e.g. "input_blocks.4.1.") is a SpatialTransformer: any of its
// tensors counts, so a transformer missing proj_in is reported rather than skipped.
bool is_transformer(const Probe& p, const std::string& b) {
    return p.has(b + "proj_in.weight") || p.has(b + "norm.weight") ||
           p.has(b + "transformer_blocks.0.attn1.to_q.weight");
}

Result<TransformerInfo> probe_transformer(const Probe& p, const std::string& block) {
    TransformerInfo info;
    // proj_in is a 1x1 conv [C, C, 1, 1] in SD1 and a linear [C, C] in SD2.
    const std::string proj = block + "proj_in.weight";
    if (!p.has(proj)) return p.shape(proj, 4).status();
    if (!p.shape(proj, 4).ok()) {
        if (!p.shape(proj, 2).ok()) return p.odd(proj, "is neither a 1x1 conv nor a linear weight");
        info.linear_proj = true;
    }
    while (p.has(block + "transformer_blocks." + std::to_string(info.depth) + ".attn1.to_q.weight"))
        ++info.depth;
    auto k = p.shape(block + "transformer_blocks.0.attn2.to_k.weight", 2);
    if (!k.ok()) return k.status();
    info.context_dim = static_cast<int>((*k)[1]);
    return info;
}

// One level of the down path as seen in input_blocks.
struct LevelInfo {
    int width = 0;
    int res_blocks = 0;
    int depth = -1;  // transformer depth, -1 until the first ResBlock of the level
};

// Merges a transformer's findings into the config; every transformer must agree on the
// context width and projection kind.
Status merge_transformer(const Probe& p, const std::string& block, const TransformerInfo& t,
                         UNetConfig& cfg, bool& seen) {
    if (!seen) {
        cfg.context_dim = t.context_dim;
        cfg.linear_proj = t.linear_proj;
        seen = true;
        return Status::Ok();
    }
    if (t.context_dim != cfg.context_dim)
        return p.odd(block + "transformer_blocks.0.attn2.to_k.weight",
                     "has context width " + std::to_string(t.context_dim) + ", others have " +
                         std::to_string(cfg.context_dim));
    if (t.linear_proj != cfg.linear_proj)
        return p.odd(block + "proj_in.weight", "differs in kind from the other proj_in weights");
    return Status::Ok();
}

// Walks input_blocks.1.. : ResBlocks (optionally followed by a transformer) until a
// downsample op closes the level.
Status detect_levels(const Probe& p, UNetConfig& cfg, bool& seen_attn) {
    std::vector<LevelInfo> levels(1);
    int i = 1;
    for (;; ++i) {
        const std::string b = "input_blocks." + std::to_string(i) + ".";
        if (p.has(b + "0.op.weight")) {
            if (levels.back().res_blocks == 0)
                return p.odd(b + "0.op.weight", "downsamples an empty level");
            levels.emplace_back();
            continue;
        }
        if (!p.has(b + "0.in_layers.2.weight")) break;
        auto conv = p.shape(b + "0.in_layers.2.weight", 4);
        if (!conv.ok()) return conv.status();
        const int width = static_cast<int>((*conv)[0]);
        LevelInfo& lv = levels.back();
        if (lv.res_blocks > 0 && width != lv.width)
            return p.odd(b + "0.in_layers.2.weight", "changes the width inside a level");
        lv.width = width;
        int depth = 0;
        if (is_transformer(p, b + "1.")) {
            auto t = probe_transformer(p, b + "1.");
            if (!t.ok()) return t.status();
            GGDIFF_TRY(merge_transformer(p, b + "1.", *t, cfg, seen_attn));
            depth = t->depth;
        }
        if (lv.depth >= 0 && depth != lv.depth)
            return p.odd(b + "1.proj_in.weight", "breaks the level's transformer depth");
        lv.depth = depth;
        ++lv.res_blocks;
    }
    if (levels.back().res_blocks == 0)
        return p.shape("input_blocks." + std::to_string(i) + ".0.in_layers.2.weight", 4).status();

    cfg.num_res_blocks = levels[0].res_blocks;
    cfg.channel_mult.clear();
    cfg.transformer_depth.clear();
    for (size_t l = 0; l < levels.size(); ++l) {
        if (levels[l].res_blocks != cfg.num_res_blocks)
            return Status::Error("UNet level " + std::to_string(l) + " has " +
                                 std::to_string(levels[l].res_blocks) + " ResBlocks, level 0 has " +
                                 std::to_string(cfg.num_res_blocks));
        if (levels[l].width % cfg.model_channels != 0)
            return Status::Error("UNet level " + std::to_string(l) + " width " +
                                 std::to_string(levels[l].width) +
                                 " is not a multiple of model_channels");
        cfg.channel_mult.push_back(levels[l].width / cfg.model_channels);
        cfg.transformer_depth.push_back(levels[l].depth);
    }
    return Status::Ok();
}

Status detect_middle(const Probe& p, UNetConfig& cfg, bool& seen_attn) {
    GGDIFF_TRY(p.shape("middle_block.0.in_layers.2.weight", 4).status());
    cfg.middle_depth = 0;
    if (is_transformer(p, "middle_block.1.")) {
        auto t = probe_transformer(p, "middle_block.1.");
        if (!t.ok()) return t.status();
        GGDIFF_TRY(merge_transformer(p, "middle_block.1.", *t, cfg, seen_attn));
        cfg.middle_depth = t->depth;
    }
    return p
        .shape(
            "middle_block." + std::to_string(cfg.middle_depth > 0 ? 2 : 1) + ".in_layers.2.weight",
            4)
        .status();
}

// The up path mirrors the down path with one extra ResBlock per level.
Status check_output_blocks(const Probe& p, const UNetConfig& cfg) {
    const int n = static_cast<int>(cfg.channel_mult.size()) * (cfg.num_res_blocks + 1);
    GGDIFF_TRY(
        p.shape("output_blocks." + std::to_string(n - 1) + ".0.in_layers.2.weight", 4).status());
    const std::string extra = "output_blocks." + std::to_string(n) + ".0.in_layers.2.weight";
    if (p.has(extra)) return p.odd(extra, "is one output block more than the down path implies");
    return Status::Ok();
}

// Heads are not stored in the weights; these are the values of the original configs.
Status set_heads(UNetConfig& cfg) {
    if (cfg.context_dim == 768) {
        cfg.num_heads = 8;
        cfg.head_dim = -1;
    } else {
        cfg.num_heads = -1;
        cfg.head_dim = 64;
    }
    auto check = [&](int width, bool attention) -> Status {
        if (width % 32 != 0)
            return Status::Error("UNet width " + std::to_string(width) +
                                 " is not a multiple of the 32 norm groups");
        const int split = cfg.num_heads > 0 ? cfg.num_heads : cfg.head_dim;
        if (attention && (split <= 0 || width % split != 0))
            return Status::Error("UNet width " + std::to_string(width) +
                                 " does not split into attention heads");
        return Status::Ok();
    };
    GGDIFF_TRY(check(cfg.model_channels, false));
    for (size_t l = 0; l < cfg.channel_mult.size(); ++l) {
        const bool last = l + 1 == cfg.channel_mult.size();
        const bool attention = cfg.transformer_depth[l] > 0 || (last && cfg.middle_depth > 0);
        GGDIFF_TRY(check(cfg.channel_mult[l] * cfg.model_channels, attention));
    }
    return Status::Ok();
}

// The whole UNet, or with `output_half` false only what a ControlNet copies of it
// (time embedding, input blocks, middle block; out_channels is then 0).
Result<UNetConfig> detect(const TensorIndex& index, const std::string& prefix, bool output_half) {
    const Probe p(index, prefix);
    UNetConfig cfg;
    auto in = p.shape("input_blocks.0.0.weight", 4);
    if (!in.ok()) return in.status();
    cfg.model_channels = static_cast<int>((*in)[0]);
    cfg.in_channels = static_cast<int>((*in)[1]);
    auto te = p.shape("time_embed.0.weight", 2);
    if (!te.ok()) return te.status();
    if ((*te)[1] != cfg.model_channels)
        return p.odd("time_embed.0.weight", "does not take model_channels inputs");
    cfg.time_embed_dim = static_cast<int>((*te)[0]);
    cfg.out_channels = 0;
    if (output_half) {
        auto out = p.shape("out.2.weight", 4);
        if (!out.ok()) return out.status();
        cfg.out_channels = static_cast<int>((*out)[0]);
    }
    cfg.adm_in_channels = 0;
    if (p.has("label_emb.0.0.weight")) {
        auto adm = p.shape("label_emb.0.0.weight", 2);
        if (!adm.ok()) return adm.status();
        cfg.adm_in_channels = static_cast<int>((*adm)[1]);
    }

    bool seen_attn = false;
    GGDIFF_TRY(detect_levels(p, cfg, seen_attn));
    GGDIFF_TRY(detect_middle(p, cfg, seen_attn));
    if (output_half) GGDIFF_TRY(check_output_blocks(p, cfg));
    if (!seen_attn) cfg.context_dim = 0;
    GGDIFF_TRY(set_heads(cfg));
    return cfg;
}

// ---------------------------------------------------------------------------------------
// Graph

// Every GroupNorm in sd.cpp's UNet uses eps 1e-6 (its group-norm helper ignores the
// 1e-5 that LDM's ResBlocks use); the golden images were made that way.
constexpr float kGroupNormEps = 1e-6f;
constexpr float kLayerNormEps = 1e-5f;
constexpr int kMaxPeriod = 10000;

ggml_tensor* silu_norm(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t ch) {
    return ggml_silu(c.ctx, nn::group_norm(c, x, p, ch, 32, kGroupNormEps));
}

// x [W,H,in,N], emb [ted,N] -> [W,H,out,N]
ggml_tensor* resblock(nn::Ctx& c, const UNetConfig& cfg, ggml_tensor* x, ggml_tensor* emb,
                      const std::string& p, int64_t in, int64_t out) {
    ggml_tensor* h = silu_norm(c, x, p + "in_layers.0", in);
    h = nn::conv2d(c, h, p + "in_layers.2", in, out, 3, 1, 1);
    // The timestep embedding shifts each channel: [out, N] broadcast as [1, 1, out, N].
    ggml_tensor* e =
        nn::linear(c, ggml_silu(c.ctx, emb), p + "emb_layers.1", cfg.time_embed_dim, out);
    h = ggml_add(c.ctx, h, ggml_reshape_4d(c.ctx, e, 1, 1, out, e->ne[1]));
    h = silu_norm(c, h, p + "out_layers.0", out);
    h = nn::conv2d(c, h, p + "out_layers.3", out, out, 3, 1, 1);
    if (in != out) x = nn::conv2d(c, x, p + "skip_connection", in, out, 1);
    return ggml_add(c.ctx, h, x);
}

// x [dim,T,N], kv source [kv_dim,S,N] -> [dim,T,N]; q/k/v have no bias, to_out has one.
ggml_tensor* cross_attention(nn::Ctx& c, ggml_tensor* x, ggml_tensor* src, const std::string& p,
                             int64_t dim, int64_t kv_dim, int heads) {
    ggml_tensor* q = nn::linear(c, x, p + "to_q", dim, dim, false);
    ggml_tensor* k = nn::linear(c, src, p + "to_k", kv_dim, dim, false);
    ggml_tensor* v = nn::linear(c, src, p + "to_v", kv_dim, dim, false);
    ggml_tensor* a = nn::attention(c.ctx, q, k, v, heads);
    return nn::linear(c, a, p + "to_out.0", dim, dim);
}

// GEGLU feed-forward: proj gives [value | gate] halves, value * gelu(gate), then net.2.
// The halves are taken as row views of the weight (as sd.cpp does), so no activation
// copies are needed. ggml_gelu is the tanh approximation that sd.cpp uses.
ggml_tensor* feed_forward(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t dim) {
    const int64_t inner = 4 * dim;
    ggml_tensor* w = c.W(p + "net.0.proj.weight", {dim, 2 * inner});
    ggml_tensor* b = c.W(p + "net.0.proj.bias", {2 * inner});
    ggml_tensor* w_val = ggml_view_2d(c.ctx, w, dim, inner, w->nb[1], 0);
    ggml_tensor* w_gate = ggml_view_2d(c.ctx, w, dim, inner, w->nb[1], inner * w->nb[1]);
    ggml_tensor* b_val = ggml_view_1d(c.ctx, b, inner, 0);
    ggml_tensor* b_gate = ggml_view_1d(c.ctx, b, inner, inner * b->nb[0]);
    ggml_tensor* val = ggml_mul_mat(c.ctx, w_val, x);
    ggml_tensor* gate = ggml_mul_mat(c.ctx, w_gate, x);
    // Run-time LoRA updates of the fused projection, split like the weight.
    if (ggml_tensor* d = nn::linear_adapters(c, x, p + "net.0.proj.weight")) {
        val = ggml_add(c.ctx, val,
                       ggml_view_3d(c.ctx, d, inner, d->ne[1], d->ne[2], d->nb[1], d->nb[2], 0));
        gate = ggml_add(c.ctx, gate,
                        ggml_view_3d(c.ctx, d, inner, d->ne[1], d->ne[2], d->nb[1], d->nb[2],
                                     inner * d->nb[0]));
    }
    val = ggml_add(c.ctx, val, b_val);
    gate = ggml_add(c.ctx, gate, b_gate);
    ggml_tensor* h = ggml_mul(c.ctx, val, ggml_gelu(c.ctx, gate));
    return nn::linear(c, h, p + "net.2", inner, dim);
}

// Pre-norm block: self-attention, cross-attention on the text, feed-forward.
ggml_tensor* basic_block(nn::Ctx& c, const UNetConfig& cfg, ggml_tensor* x, ggml_tensor* context,
                         const std::string& p, int64_t dim) {
    const int heads = cfg.heads_for(static_cast<int>(dim));
    ggml_tensor* h = nn::layer_norm(c, x, p + "norm1", dim, kLayerNormEps);
    x = ggml_add(c.ctx, cross_attention(c, h, h, p + "attn1.", dim, dim, heads), x);
    h = nn::layer_norm(c, x, p + "norm2", dim, kLayerNormEps);
    x = ggml_add(c.ctx, cross_attention(c, h, context, p + "attn2.", dim, cfg.context_dim, heads),
                 x);
    h = nn::layer_norm(c, x, p + "norm3", dim, kLayerNormEps);
    return ggml_add(c.ctx, feed_forward(c, h, p + "ff.", dim), x);
}

// SD2 stores proj_in/out as linear weights, SD1 as 1x1 convs; the two are the same map,
// applied here before (conv) or after (linear) the switch to token layout.
ggml_tensor* spatial_transformer(nn::Ctx& c, const UNetConfig& cfg, ggml_tensor* x,
                                 ggml_tensor* context, const std::string& p, int64_t ch,
                                 int depth) {
    const int64_t w = x->ne[0], h = x->ne[1];
    ggml_tensor* t = nn::group_norm(c, x, p + "norm", ch, 32, kGroupNormEps);
    if (cfg.linear_proj) {
        t = nn::linear(c, nn::image_to_tokens(c.ctx, t), p + "proj_in", ch, ch);
    } else {
        t = nn::image_to_tokens(c.ctx, nn::conv2d(c, t, p + "proj_in", ch, ch, 1));
    }
    for (int i = 0; i < depth; ++i)
        t = basic_block(c, cfg, t, context, p + "transformer_blocks." + std::to_string(i) + ".",
                        ch);
    if (cfg.linear_proj) {
        t = nn::tokens_to_image(c.ctx, nn::linear(c, t, p + "proj_out", ch, ch), w, h);
    } else {
        t = nn::conv2d(c, nn::tokens_to_image(c.ctx, t, w, h), p + "proj_out", ch, ch, 1);
    }
    return ggml_add(c.ctx, t, x);
}

// Sinusoidal timestep features (cos half first, as LDM with flip_sin_to_cos), then
// linear -> SiLU -> linear; label_emb adds the SDXL size/pooled-text vector.
ggml_tensor* time_embedding(nn::Ctx& c, const UNetConfig& cfg, ggml_tensor* timesteps,
                            ggml_tensor* y, const std::string& prefix) {
    const int64_t mc = cfg.model_channels, ted = cfg.time_embed_dim;
    ggml_tensor* t = ggml_timestep_embedding(c.ctx, timesteps, cfg.model_channels, kMaxPeriod);
    ggml_tensor* emb = nn::linear(c, t, prefix + "time_embed.0", mc, ted);
    emb = nn::linear(c, ggml_silu(c.ctx, emb), prefix + "time_embed.2", ted, ted);
    if (cfg.adm_in_channels > 0 && y) {
        ggml_tensor* l = nn::linear(c, y, prefix + "label_emb.0.0", cfg.adm_in_channels, ted);
        l = nn::linear(c, ggml_silu(c.ctx, l), prefix + "label_emb.0.2", ted, ted);
        emb = ggml_add(c.ctx, emb, l);
    }
    return emb;
}

// Shared state of one forward pass.
struct Pass {
    nn::Ctx& c;
    const UNetConfig& cfg;
    const std::string& prefix;
    ggml_tensor* emb;
    ggml_tensor* context;
    std::vector<ggml_tensor*> skips;  // input-block outputs, consumed last-first
    ggml_tensor* hint = nullptr;      // added to the output of input_blocks.0 (ControlNet)
    // ControlNet residuals: one per skip, then one for the middle block (or empty).
    std::vector<ggml_tensor*> control;
};

// ResBlock, then the level's transformer if it has one.
ggml_tensor* res_attn(Pass& s, ggml_tensor* h, const std::string& b, int64_t in, int64_t out,
                      int depth) {
    h = resblock(s.c, s.cfg, h, s.emb, b + "0.", in, out);
    if (depth > 0) h = spatial_transformer(s.c, s.cfg, h, s.context, b + "1.", out, depth);
    return h;
}

ggml_tensor* down_path(Pass& s, ggml_tensor* x) {
    const UNetConfig& cfg = s.cfg;
    const int64_t mc = cfg.model_channels;
    ggml_tensor* h =
        nn::conv2d(s.c, x, s.prefix + "input_blocks.0.0", cfg.in_channels, mc, 3, 1, 1);
    if (s.hint) h = ggml_add(s.c.ctx, h, s.hint);
    s.skips.push_back(h);
    int64_t ch = mc;
    int idx = 1;
    const size_t levels = cfg.channel_mult.size();
    for (size_t l = 0; l < levels; ++l) {
        const int64_t out = cfg.channel_mult[l] * mc;
        for (int j = 0; j < cfg.num_res_blocks; ++j, ++idx) {
            const std::string b = s.prefix + "input_blocks." + std::to_string(idx) + ".";
            h = res_attn(s, h, b, ch, out, cfg.transformer_depth[l]);
            ch = out;
            s.skips.push_back(h);
        }
        if (l + 1 < levels) {
            const std::string b = s.prefix + "input_blocks." + std::to_string(idx++) + ".0.op";
            h = nn::conv2d(s.c, h, b, ch, ch, 3, 2, 1);
            s.skips.push_back(h);
        }
    }
    return h;
}

ggml_tensor* middle(Pass& s, ggml_tensor* h) {
    const int64_t ch = s.cfg.channel_mult.back() * s.cfg.model_channels;
    const std::string b = s.prefix + "middle_block.";
    h = resblock(s.c, s.cfg, h, s.emb, b + "0.", ch, ch);
    if (s.cfg.middle_depth > 0)
        h = spatial_transformer(s.c, s.cfg, h, s.context, b + "1.", ch, s.cfg.middle_depth);
    h = resblock(s.c, s.cfg, h, s.emb, b + (s.cfg.middle_depth > 0 ? "2." : "1."), ch, ch);
    if (!s.control.empty()) h = ggml_add(s.c.ctx, h, s.control.back());
    return h;
}

// Each output block concatenates [h, skip] along channels, then ResBlock (+ transformer),
// and the last block of a level upsamples (nearest, 3x3 conv) to the size of the skip
// connection it meets next: 2x when the level's input side was even, else the odd size the
// stride-2 downsampling came from (as diffusers and ComfyUI do), so any latent size works.
ggml_tensor* up_path(Pass& s, ggml_tensor* h) {
    const UNetConfig& cfg = s.cfg;
    const int64_t mc = cfg.model_channels;
    int64_t ch = cfg.channel_mult.back() * mc;
    int idx = 0;
    for (int l = static_cast<int>(cfg.channel_mult.size()) - 1; l >= 0; --l) {
        const int64_t out = cfg.channel_mult[l] * mc;
        const int depth = cfg.transformer_depth[l];
        for (int j = 0; j <= cfg.num_res_blocks; ++j, ++idx) {
            ggml_tensor* skip = s.skips.back();
            s.skips.pop_back();
            if (!s.control.empty()) skip = ggml_add(s.c.ctx, skip, s.control[s.skips.size()]);
            const int64_t in = ch + skip->ne[2];
            h = ggml_concat(s.c.ctx, h, skip, 2);
            const std::string b = s.prefix + "output_blocks." + std::to_string(idx) + ".";
            h = res_attn(s, h, b, in, out, depth);
            ch = out;
            if (l > 0 && j == cfg.num_res_blocks) {
                const ggml_tensor* next = s.skips.back();
                h = nn::upsample_nearest(s.c.ctx, h, next->ne[0], next->ne[1]);
                h = nn::conv2d(s.c, h, b + (depth > 0 ? "2" : "1") + ".conv", ch, ch, 3, 1, 1);
            }
        }
    }
    return h;
}

// One conditioning may serve a whole batch (same prompt for every image).
Pass begin_pass(nn::Ctx& c, const UNetConfig& cfg, ggml_tensor* x, ggml_tensor* timesteps,
                ggml_tensor* context, const std::string& prefix, ggml_tensor* y) {
    const int64_t n = x->ne[3];
    if (context && context->ne[2] != n) {
        context = ggml_repeat(
            c.ctx, context,
            ggml_new_tensor_3d(c.ctx, context->type, context->ne[0], context->ne[1], n));
    }
    return Pass{c,       cfg, prefix,  time_embedding(c, cfg, timesteps, y, prefix),
                context, {},  nullptr, {}};
}

}  // namespace

Result<UNetConfig> detect_unet(const TensorIndex& index, const std::string& prefix) {
    return detect(index, prefix, true);
}

Result<UNetConfig> detect_unet_encoder(const TensorIndex& index, const std::string& prefix) {
    return detect(index, prefix, false);
}

ggml_tensor* build_unet(nn::Ctx& c, const UNetConfig& cfg, ggml_tensor* x, ggml_tensor* timesteps,
                        ggml_tensor* context, const std::string& prefix, ggml_tensor* y,
                        const std::vector<ggml_tensor*>& control) {
    Pass s = begin_pass(c, cfg, x, timesteps, context, prefix, y);
    s.control = control;
    ggml_tensor* h = middle(s, down_path(s, x));
    h = up_path(s, h);
    h = silu_norm(c, h, prefix + "out.0", cfg.model_channels);
    return nn::conv2d(c, h, prefix + "out.2", cfg.model_channels, cfg.out_channels, 3, 1, 1);
}

UNetEncoderOutputs build_unet_encoder(nn::Ctx& c, const UNetConfig& cfg, ggml_tensor* x,
                                      ggml_tensor* timesteps, ggml_tensor* context,
                                      const std::string& prefix, ggml_tensor* y,
                                      ggml_tensor* hint) {
    Pass s = begin_pass(c, cfg, x, timesteps, context, prefix, y);
    s.hint = hint;
    UNetEncoderOutputs out;
    out.middle = middle(s, down_path(s, x));
    out.blocks = std::move(s.skips);
    return out;
}

std::vector<std::string> unet_block_prefixes(const UNetConfig& cfg) {
    std::vector<std::string> out;
    const int levels = static_cast<int>(cfg.channel_mult.size());
    const int inputs = 1 + levels * cfg.num_res_blocks + (levels - 1);
    for (int i = 0; i < inputs; ++i) out.push_back("input_blocks." + std::to_string(i) + ".");
    out.push_back("middle_block.");
    for (int i = 0; i < levels * (cfg.num_res_blocks + 1); ++i)
        out.push_back("output_blocks." + std::to_string(i) + ".");
    return out;
}

}  // namespace ggdiff::models
