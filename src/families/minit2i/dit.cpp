#include "families/minit2i/dit.h"

#include <ggml.h>

#include <algorithm>
#include <cmath>

#include "core/log.h"
#include "io/tensor_probe.h"
#include "nn/dit.h"
#include "nn/layers.h"
#include "pipeline/parts/module_setup.h"

namespace ggdiff::models {

namespace {

constexpr float kEps = 1e-6f;
constexpr float kTheta = 10000.0f;

ggml_tensor* rms(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t dim) {
    return nn::rms_norm(c, x, name, dim, kEps);
}

// Per-head RMSNorm of x [heads*d, T, N] (a view) by the weight `name` [d].
ggml_tensor* head_rms(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t d) {
    const int64_t dim = x->ne[0], t = x->ne[1], n = x->ne[2];
    x = ggml_reshape_4d(c.ctx, ggml_cont(c.ctx, x), d, dim / d, t, n);
    x = ggml_mul(c.ctx, ggml_rms_norm(c.ctx, x, kEps), c.W(name, {d}));
    return ggml_reshape_3d(c.ctx, x, dim, t, n);
}

// w2(silu(w1 x) * w3 x), no biases.
ggml_tensor* swiglu(nn::Ctx& c, ggml_tensor* x, const std::string& p, int64_t dim, int64_t hidden) {
    ggml_tensor* gate = ggml_silu(c.ctx, nn::linear(c, x, p + "w1", dim, hidden, false));
    ggml_tensor* up = nn::linear(c, x, p + "w3", dim, hidden, false);
    return nn::linear(c, ggml_mul(c.ctx, gate, up), p + "w2", hidden, dim, false);
}

// q, k (per-head normalized) and v of a stream x [dim, T, N] from its fused qkv linear.
nn::QkvHeads qkv(nn::Ctx& c, const MiniT2IConfig& cfg, ggml_tensor* x, const std::string& linear,
                 const std::string& norms, int64_t dim) {
    const int64_t inner = cfg.inner();
    ggml_tensor* y = nn::linear(c, x, linear, dim, 3 * inner);
    nn::QkvHeads h;
    h.q = head_rms(c, nn::feature_rows(c.ctx, y, 0, inner), norms + "q_norm.weight", cfg.head_dim);
    h.k = head_rms(c, nn::feature_rows(c.ctx, y, inner, inner), norms + "k_norm.weight",
                   cfg.head_dim);
    h.v = ggml_cont(c.ctx, nn::feature_rows(c.ctx, y, 2 * inner, inner));
    return h;
}

// RoPE on the halves of q's and k's heads (the reference's rope_interleaved = false), then
// attention over every token.
ggml_tensor* attend(ggml_context* ctx, const MiniT2IConfig& cfg, ggml_tensor* q, ggml_tensor* k,
                    ggml_tensor* v, ggml_tensor* cos, ggml_tensor* sin) {
    const int heads = static_cast<int>(cfg.heads);
    return nn::attention(ctx, nn::rope_halves(ctx, q, cos, sin, heads),
                         nn::rope_halves(ctx, k, cos, sin, heads), v, heads);
}

ggml_tensor* text_block(nn::Ctx& c, const MiniT2IConfig& cfg, const std::string& p,
                        ggml_tensor* txt, ggml_tensor* cos, ggml_tensor* sin) {
    const int64_t w = cfg.text_width;
    const nn::QkvHeads h = qkv(c, cfg, rms(c, txt, p + "norm1.weight", w), p + "qkv", p, w);
    ggml_tensor* o = attend(c.ctx, cfg, h.q, h.k, h.v, cos, sin);
    txt = ggml_add(c.ctx, txt, nn::linear(c, o, p + "attn_proj", cfg.inner(), w));
    return ggml_add(c.ctx, txt,
                    swiglu(c, rms(c, txt, p + "norm2.weight", w), p + "mlp.", w, cfg.text_mlp));
}

// Image tokens [C*p*p, w*h, N] with features (row in patch, column in patch, channel), the
// channel fastest -> image [w*p, h*p, C, N].
ggml_tensor* unpatchify_channel_last(ggml_context* ctx, ggml_tensor* x, int64_t w, int64_t h,
                                     int p) {
    const int64_t C = x->ne[0] / (p * p), T = x->ne[1], N = x->ne[2];
    x = ggml_cont(ctx, ggml_permute(ctx, ggml_reshape_4d(ctx, x, C, p * p, T, N), 1, 0, 2, 3));
    return nn::unpatchify(ctx, ggml_reshape_3d(ctx, x, p * p * C, T, N), w, h, p);
}

// One double block on the image and text streams, in place.
void double_block(nn::Ctx& c, const MiniT2IConfig& cfg, int64_t index, ggml_tensor** img,
                  ggml_tensor** txt, ggml_tensor* cos, ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const std::string p = cfg.prefix + "double_blocks." + std::to_string(index) + ".";
    const int64_t W = cfg.width, T = cfg.text_width, lt = (*txt)->ne[1], li = (*img)->ne[1];
    const nn::QkvHeads hi =
        qkv(c, cfg, rms(c, *img, p + "img_norm1.weight", W), p + "img_qkv", p, W);
    const nn::QkvHeads ht =
        qkv(c, cfg, rms(c, *txt, p + "txt_norm1.weight", T), p + "txt_qkv", p, T);
    ggml_tensor* o =
        attend(ctx, cfg, ggml_concat(ctx, ht.q, hi.q, 1), ggml_concat(ctx, ht.k, hi.k, 1),
               ggml_concat(ctx, ht.v, hi.v, 1), cos, sin);
    ggml_tensor* x = ggml_add(
        ctx, *img,
        nn::linear(c, nn::token_range(ctx, o, lt, li), p + "img_attn_proj", cfg.inner(), W));
    ggml_tensor* t = ggml_add(
        ctx, *txt,
        nn::linear(c, nn::token_range(ctx, o, 0, lt), p + "txt_attn_proj", cfg.inner(), T));
    *img = ggml_add(ctx, x,
                    swiglu(c, rms(c, x, p + "img_norm2.weight", W), p + "img_mlp.", W, cfg.mlp));
    *txt = ggml_add(
        ctx, t, swiglu(c, rms(c, t, p + "txt_norm2.weight", T), p + "txt_mlp.", T, cfg.text_mlp));
}

}  // namespace

bool is_minit2i(const TensorIndex& index, const std::string& prefix) {
    return index.has(prefix + "img_embedder.proj1.weight");
}

Result<MiniT2IConfig> detect_minit2i(const TensorIndex& index, const std::string& prefix) {
    MiniT2IConfig cfg;
    cfg.prefix = prefix;
    const TensorProbe p{index, prefix, "MiniT2I"};
    auto p1 = p.shape("img_embedder.proj1.weight", 4);
    if (!p1.ok()) return p1.status();
    if ((*p1)[2] != (*p1)[3]) return p.odd("img_embedder.proj1.weight", "patches are square");
    cfg.bottleneck = (*p1)[0];
    cfg.channels = (*p1)[1];
    cfg.patch = static_cast<int>((*p1)[2]);
    if (cfg.channels != 3) return p.odd("img_embedder.proj1.weight", "MiniT2I embeds RGB pixels");
    auto p2 = p.shape("img_embedder.proj2.weight", 4);
    if (!p2.ok()) return p2.status();
    cfg.width = (*p2)[0];
    GGDIFF_TRY(p.expect("img_embedder.proj2.weight", {cfg.width, cfg.bottleneck, 1, 1}));
    GGDIFF_TRY(p.expect("img_embedder.proj2.bias", {cfg.width}));
    auto te = p.shape("txt_embedder.weight", 2);
    if (!te.ok()) return te.status();
    cfg.text_width = (*te)[0];
    cfg.text_input = (*te)[1];
    auto q = p.shape("double_blocks.0.img_qkv.weight", 2);
    if (!q.ok()) return q.status();
    if ((*q)[1] != cfg.width || (*q)[0] % 3) {
        return p.odd("double_blocks.0.img_qkv.weight", "not a fused q/k/v of the image stream");
    }
    const int64_t inner = (*q)[0] / 3;
    // The reference's head layout: 768 wide is 12 heads of 64, 1248 is 24 of 52, anything
    // else heads of 64.
    if (cfg.width == 768) {
        cfg.heads = 12, cfg.head_dim = 64;
    } else if (cfg.width == 1248) {
        cfg.heads = 24, cfg.head_dim = 52;
    } else {
        cfg.head_dim = 64;
        cfg.heads = std::max<int64_t>(1, inner / 64);
    }
    if (cfg.inner() != inner || cfg.head_dim % 4) {
        return p.odd("double_blocks.0.img_qkv.weight",
                     "q/k/v of " + std::to_string(inner) + " features are not " +
                         std::to_string(cfg.heads) + " heads of " + std::to_string(cfg.head_dim));
    }
    if (cfg.width % 4) return p.odd("img_embedder.proj2.weight", "width not a multiple of 4");
    cfg.depth = 0, cfg.text_depth = 0;
    while (p.has("double_blocks." + std::to_string(cfg.depth) + ".img_qkv.weight")) ++cfg.depth;
    while (p.has("txt_preamble_blocks." + std::to_string(cfg.text_depth) + ".qkv.weight")) {
        ++cfg.text_depth;
    }
    if (cfg.text_depth < 1) return p.missing("txt_preamble_blocks.0.qkv.weight");
    auto m = p.shape("double_blocks.0.img_mlp.w1.weight", 2);
    if (!m.ok()) return m.status();
    cfg.mlp = (*m)[0];
    auto tm = p.shape("double_blocks.0.txt_mlp.w1.weight", 2);
    if (!tm.ok()) return tm.status();
    cfg.text_mlp = (*tm)[0];
    const int64_t W = cfg.width, T = cfg.text_width, I = inner, hd = cfg.head_dim;
    for (int64_t i = 0; i < cfg.depth; ++i) {
        const std::string b = "double_blocks." + std::to_string(i) + ".";
        for (const auto& [n, shape] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
                 {"img_norm1.weight", {W}},
                 {"img_norm2.weight", {W}},
                 {"txt_norm1.weight", {T}},
                 {"txt_norm2.weight", {T}},
                 {"img_qkv.weight", {3 * I, W}},
                 {"img_qkv.bias", {3 * I}},
                 {"txt_qkv.weight", {3 * I, T}},
                 {"txt_qkv.bias", {3 * I}},
                 {"q_norm.weight", {hd}},
                 {"k_norm.weight", {hd}},
                 {"img_attn_proj.weight", {W, I}},
                 {"txt_attn_proj.weight", {T, I}},
                 {"img_mlp.w2.weight", {W, cfg.mlp}},
                 {"txt_mlp.w2.weight", {T, cfg.text_mlp}}}) {
            GGDIFF_TRY(p.expect(b + n, shape));
        }
    }
    for (int64_t i = 0; i < cfg.text_depth; ++i) {
        const std::string b = "txt_preamble_blocks." + std::to_string(i) + ".";
        GGDIFF_TRY(p.expect(b + "qkv.weight", {3 * I, T}));
        GGDIFF_TRY(p.expect(b + "q_norm.weight", {hd}));
    }
    const int64_t out = cfg.patch * cfg.patch * cfg.channels;
    GGDIFF_TRY(p.expect("final_layer.linear.weight", {out, W}));
    GGDIFF_TRY(p.expect("final_layer.norm_final.weight", {W}));
    const TensorInfo* mask = index.find(prefix + "mask_token");
    if (!mask) return p.missing("mask_token");
    int64_t numel = 1;
    for (int64_t d : mask->shape) numel *= d;
    if (numel != cfg.text_input || mask->shape.empty() || mask->shape.back() != cfg.text_input) {
        return p.odd("mask_token",
                     "one token of the text input (" + std::to_string(cfg.text_input) + " wide)");
    }
    return cfg;
}

MiniT2IRope minit2i_rope(const MiniT2IConfig& cfg, int64_t text, int64_t grid_h, int64_t grid_w) {
    const int64_t pairs = cfg.head_dim / 2, tokens = text + grid_h * grid_w;
    MiniT2IRope r{HostTensor({pairs, 1, tokens, 1}), HostTensor({pairs, 1, tokens, 1})};
    // Text: position i on every pair of the head; image: row on the first half, column on
    // the second (FLUX-style axes of head_dim / 2 each).
    std::vector<float> text_ids(static_cast<size_t>(text));
    for (int64_t i = 0; i < text; ++i) text_ids[static_cast<size_t>(i)] = static_cast<float>(i);
    const nn::RopeTable tt = nn::rope_table(text_ids, {static_cast<int>(cfg.head_dim)}, kTheta);
    std::copy(tt.cos.begin(), tt.cos.end(), r.cos.data.begin());
    std::copy(tt.sin.begin(), tt.sin.end(), r.sin.data.begin());
    if (grid_h * grid_w == 0) return r;
    std::vector<float> ids;
    for (int64_t y = 0; y < grid_h; ++y) {
        for (int64_t x = 0; x < grid_w; ++x) {
            ids.push_back(static_cast<float>(y));
            ids.push_back(static_cast<float>(x));
        }
    }
    const int half = static_cast<int>(cfg.head_dim / 2);
    const nn::RopeTable it = nn::rope_table(ids, {half, half}, kTheta);
    std::copy(it.cos.begin(), it.cos.end(), r.cos.data.begin() + text * pairs);
    std::copy(it.sin.begin(), it.sin.end(), r.sin.data.begin() + text * pairs);
    return r;
}

HostTensor minit2i_pos_embed(const MiniT2IConfig& cfg, int64_t grid_h, int64_t grid_w) {
    const int64_t dim = cfg.width, quarter = dim / 4, half = dim / 2;
    HostTensor out({dim, grid_h * grid_w});
    std::vector<float> omega(static_cast<size_t>(quarter));
    for (int64_t i = 0; i < quarter; ++i) {
        omega[static_cast<size_t>(i)] =
            1.0f / std::pow(10000.0f, static_cast<float>(i) / static_cast<float>(quarter));
    }
    for (int64_t y = 0; y < grid_h; ++y) {
        for (int64_t x = 0; x < grid_w; ++x) {
            float* e = out.ptr() + (y * grid_w + x) * dim;
            for (int64_t i = 0; i < quarter; ++i) {
                const float ax = static_cast<float>(x) * omega[static_cast<size_t>(i)];
                const float ay = static_cast<float>(y) * omega[static_cast<size_t>(i)];
                e[i] = std::sin(ax);
                e[quarter + i] = std::cos(ax);
                e[half + i] = std::sin(ay);
                e[half + quarter + i] = std::cos(ay);
            }
        }
    }
    return out;
}

ggml_tensor* build_minit2i_double_block(nn::Ctx& c, const MiniT2IConfig& cfg, int64_t index,
                                        ggml_tensor* img, ggml_tensor* txt, ggml_tensor* cos,
                                        ggml_tensor* sin) {
    double_block(c, cfg, index, &img, &txt, cos, sin);
    return ggml_concat(c.ctx, txt, img, 1);
}

ggml_tensor* build_minit2i(nn::Ctx& c, const MiniT2IConfig& cfg, const MiniT2IInputs& in) {
    ggml_context* ctx = c.ctx;
    const std::string& p = cfg.prefix;
    const int64_t gw = in.x->ne[0] / cfg.patch, gh = in.x->ne[1] / cfg.patch;

    // The prompt: masked tokens become mask_token.
    ggml_tensor* keep = ggml_repeat(ctx, in.keep, in.context);
    ggml_tensor* token = ggml_repeat(ctx, c.W(p + "mask_token", {cfg.text_input}), in.context);
    ggml_tensor* context =
        ggml_add(ctx, ggml_mul(ctx, in.context, keep),
                 ggml_mul(ctx, token, ggml_sub(ctx, ggml_scale_bias(ctx, keep, 0.0f, 1.0f), keep)));
    ggml_tensor* txt =
        nn::linear(c, context, p + "txt_embedder", cfg.text_input, cfg.text_width, false);
    for (int64_t i = 0; i < cfg.text_depth; ++i) {
        txt = text_block(c, cfg, p + "txt_preamble_blocks." + std::to_string(i) + ".", txt,
                         in.text_cos, in.text_sin);
    }

    // The image.
    ggml_tensor* x = nn::conv2d(c, in.x, p + "img_embedder.proj1", cfg.channels, cfg.bottleneck,
                                cfg.patch, cfg.patch, 0, false);
    x = nn::conv2d(c, x, p + "img_embedder.proj2", cfg.bottleneck, cfg.width, 1);
    x = ggml_add(ctx, nn::image_to_tokens(ctx, x), in.pos);

    for (int64_t i = 0; i < cfg.depth; ++i) {
        double_block(c, cfg, i, &x, &txt, in.joint_cos, in.joint_sin);
    }
    x = rms(c, x, p + "final_layer.norm_final.weight", cfg.width);
    x = nn::linear(c, x, p + "final_layer.linear", cfg.width, cfg.patch * cfg.patch * cfg.channels);
    return unpatchify_channel_last(ctx, x, gw, gh, cfg.patch);
}

}  // namespace ggdiff::models

namespace ggdiff {

Result<std::unique_ptr<MiniT2IDenoiser>> MiniT2IDenoiser::create(const FamilyContext& ctx,
                                                                 const ModuleDevices& where,
                                                                 const models::MiniT2IConfig& cfg) {
    auto d = std::unique_ptr<MiniT2IDenoiser>(new MiniT2IDenoiser());
    d->cfg_ = cfg;
    // A representative graph (one patch, two prompt tokens) declares every weight.
    auto runner = make_module(ctx, where, "MiniT2I DiT", [&cfg](GraphBuilder& gb) {
        const int64_t s = cfg.patch, l = 2;
        const models::MiniT2IRope text = models::minit2i_rope(cfg, l, 0, 0);
        const models::MiniT2IRope joint = models::minit2i_rope(cfg, l, 1, 1);
        models::MiniT2IInputs in;
        in.x = gb.input(HostTensor({s, s, cfg.channels, 1}));
        in.context = gb.input(HostTensor({cfg.text_input, l, 1}));
        in.keep = gb.input(HostTensor({1, l, 1}));
        in.pos = gb.input(models::minit2i_pos_embed(cfg, 1, 1));
        in.text_cos = gb.input(text.cos);
        in.text_sin = gb.input(text.sin);
        in.joint_cos = gb.input(joint.cos);
        in.joint_sin = gb.input(joint.sin);
        return std::vector<ggml_tensor*>{models::build_minit2i(gb.nn(), cfg, in)};
    });
    if (!runner.ok()) return runner.status();
    d->runner_ = std::move(*runner);
    return d;
}

Result<HostTensor> MiniT2IDenoiser::run(const DenoiseBatch& b) {
    const int64_t w = b.x.dim(0), h = b.x.dim(1), c = b.x.dim(2), n = b.x.dim(3);
    if (static_cast<int64_t>(b.cond.size()) != n) {
        return Status::Error(string_format("MiniT2I: batch of %lld images with %zu prompts",
                                           (long long)n, b.cond.size()));
    }
    if (c != cfg_.channels || w % cfg_.patch || h % cfg_.patch) {
        return Status::Error(
            string_format("MiniT2I: image [%lld, %lld, %lld], the DiT takes RGB in multiples of %d",
                          (long long)w, (long long)h, (long long)c, cfg_.patch));
    }
    if (b.concat || (b.refs && !b.refs->empty())) {
        return Status::Error("MiniT2I: extra inputs (reference images, channels) are not taken");
    }
    const int64_t tokens = b.cond[0]->context.dim(1);
    HostTensor context({cfg_.text_input, tokens, n}), keep({1, tokens, n});
    for (int64_t i = 0; i < n; ++i) {
        const Conditioning& cond = *b.cond[static_cast<size_t>(i)];
        if (cond.context.dim(0) != cfg_.text_input || cond.context.dim(1) != tokens ||
            cond.pooled.numel() != tokens) {
            return Status::Error(string_format(
                "MiniT2I: prompt states [%lld, %lld] with a mask of %lld, the DiT reads %lld-wide "
                "T5 states of one length with their mask",
                (long long)cond.context.dim(0), (long long)cond.context.dim(1),
                (long long)cond.pooled.numel(), (long long)cfg_.text_input));
        }
        std::copy(cond.context.data.begin(), cond.context.data.end(),
                  context.data.begin() + i * cfg_.text_input * tokens);
        std::copy(cond.pooled.data.begin(), cond.pooled.data.end(), keep.data.begin() + i * tokens);
    }
    const int64_t gw = w / cfg_.patch, gh = h / cfg_.patch;
    const models::MiniT2IRope text = models::minit2i_rope(cfg_, tokens, 0, 0);
    const models::MiniT2IRope joint = models::minit2i_rope(cfg_, tokens, gh, gw);
    const HostTensor pos = models::minit2i_pos_embed(cfg_, gh, gw);
    auto r = runner_->run([&](GraphBuilder& gb) {
        models::MiniT2IInputs in;
        in.x = gb.input(b.x);
        in.context = gb.input(context);
        in.keep = gb.input(keep);
        in.pos = gb.input(pos);
        in.text_cos = gb.input(text.cos);
        in.text_sin = gb.input(text.sin);
        in.joint_cos = gb.input(joint.cos);
        in.joint_sin = gb.input(joint.sin);
        return std::vector<ggml_tensor*>{models::build_minit2i(gb.nn(), cfg_, in)};
    });
    if (!r.ok()) return r.status();
    HostTensor out = std::move((*r)[0]);
    out.ne = b.x.ne;
    return out;
}

}  // namespace ggdiff
