#include "families/krea2/dit.h"

#include <ggml.h>

#include <algorithm>

#include "core/log.h"
#include "nn/dit.h"
#include "nn/layers.h"
#include "pipeline/parts/module_setup.h"

namespace ggdiff::models {

namespace {

// A 1-D or small parameter as f32 (files store them in their own type).
ggml_tensor* as_f32(ggml_context* ctx, ggml_tensor* t) {
    return t->type == GGML_TYPE_F32 ? t : ggml_cast(ctx, t, GGML_TYPE_F32);
}

// Krea's RMSNorm: rms_norm(x) * (1 + scale), over ne[0] of x.
ggml_tensor* rms(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t dim, float eps) {
    ggml_tensor* scale = as_f32(c.ctx, c.W(name, {dim}));
    return ggml_mul(c.ctx, ggml_rms_norm(c.ctx, x, eps), ggml_scale_bias(c.ctx, scale, 1.0f, 1.0f));
}

// Per-head RMSNorm of x [heads*d, T, N].
ggml_tensor* head_rms(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t d, float eps) {
    const int64_t dim = x->ne[0], t = x->ne[1], n = x->ne[2];
    x = ggml_reshape_4d(c.ctx, x, d, dim / d, t, n);
    return ggml_reshape_3d(c.ctx, rms(c, x, name, d, eps), dim, t, n);
}

struct AttnShape {
    int64_t width, head_dim, heads, kv_heads;
};

// Krea attention over x [width, T, N]; RoPE when cos / sin are given.
ggml_tensor* attention(nn::Ctx& c, const std::string& p, const AttnShape& s, float eps,
                       ggml_tensor* x, ggml_tensor* cos, ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const int64_t d = s.head_dim, qw = s.heads * d, kw = s.kv_heads * d;
    ggml_tensor* q = nn::linear(c, x, p + "wq", s.width, qw, false);
    ggml_tensor* k = nn::linear(c, x, p + "wk", s.width, kw, false);
    ggml_tensor* v = nn::linear(c, x, p + "wv", s.width, kw, false);
    q = head_rms(c, q, p + "qknorm.qnorm.scale", d, eps);
    k = head_rms(c, k, p + "qknorm.knorm.scale", d, eps);
    if (cos) {
        q = nn::rope_pairs(ctx, q, cos, sin, static_cast<int>(s.heads));
        k = nn::rope_pairs(ctx, k, cos, sin, static_cast<int>(s.kv_heads));
    }
    k = nn::expand_kv_heads(ctx, k, d, s.kv_heads, s.heads);
    v = nn::expand_kv_heads(ctx, v, d, s.kv_heads, s.heads);
    ggml_tensor* o = nn::attention(ctx, q, k, v, static_cast<int>(s.heads));
    o = ggml_mul(ctx, o, ggml_sigmoid(ctx, nn::linear(c, x, p + "gate", s.width, qw, false)));
    return nn::linear(c, o, p + "wo", qw, s.width, false);
}

ggml_tensor* swiglu(nn::Ctx& c, const std::string& p, int64_t width, int64_t hidden,
                    ggml_tensor* x) {
    ggml_tensor* g = ggml_silu(c.ctx, nn::linear(c, x, p + "gate", width, hidden, false));
    ggml_tensor* u = nn::linear(c, x, p + "up", width, hidden, false);
    return nn::linear(c, ggml_mul(c.ctx, g, u), p + "down", hidden, width, false);
}

// A text fusion block (no modulation, no RoPE) over x [text_width, T, N].
ggml_tensor* fusion_block(nn::Ctx& c, const Krea2Config& cfg, const std::string& p,
                          ggml_tensor* x) {
    const int64_t w = cfg.text_width;
    const AttnShape s{w, cfg.text_head_dim, cfg.text_heads, cfg.text_kv_heads};
    x = ggml_add(c.ctx, x,
                 attention(c, p + "attn.", s, cfg.eps, rms(c, x, p + "prenorm.scale", w, cfg.eps),
                           nullptr, nullptr));
    return ggml_add(
        c.ctx, x,
        swiglu(c, p + "mlp.", w, cfg.text_mlp, rms(c, x, p + "postnorm.scale", w, cfg.eps)));
}

// The stacked states [text_width * states, T, N] -> fused text [text_width, T, N].
ggml_tensor* text_fusion(nn::Ctx& c, const Krea2Config& cfg, ggml_tensor* context) {
    ggml_context* ctx = c.ctx;
    const std::string p = cfg.prefix + "txtfusion.";
    const int64_t w = cfg.text_width, s = cfg.text_states;
    const int64_t t = context->ne[1], n = context->ne[2];
    // Each token's states are a sequence of s vectors.
    ggml_tensor* x = ggml_reshape_3d(ctx, ggml_cont(ctx, context), w, s, t * n);
    for (int64_t i = 0; i < cfg.layerwise_blocks; ++i) {
        x = fusion_block(c, cfg, p + "layerwise_blocks." + std::to_string(i) + ".", x);
    }
    x = ggml_cont(ctx, ggml_permute(ctx, x, 1, 0, 2, 3));  // [s, w, t*n]
    x = nn::linear(c, x, p + "projector", s, 1, false);    // [1, w, t*n]
    x = ggml_reshape_3d(ctx, x, w, t, n);
    for (int64_t i = 0; i < cfg.refiner_blocks; ++i) {
        x = fusion_block(c, cfg, p + "refiner_blocks." + std::to_string(i) + ".", x);
    }
    return x;
}

// Chunk i of `count` [width] chunks of v [count * width, 1, N], contiguous.
ggml_tensor* chunk(ggml_context* ctx, ggml_tensor* v, int64_t width, int64_t i) {
    return ggml_cont(ctx, ggml_view_3d(ctx, v, width, 1, v->ne[2], v->nb[1], v->nb[2],
                                       static_cast<size_t>(i * width) * ggml_element_size(v)));
}

ggml_tensor* single_block(nn::Ctx& c, const Krea2Config& cfg, int64_t index, ggml_tensor* x,
                          ggml_tensor* tvec, ggml_tensor* cos, ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const std::string p = cfg.prefix + "blocks." + std::to_string(index) + ".";
    const int64_t w = cfg.width;
    ggml_tensor* m = ggml_add(ctx, tvec, as_f32(ctx, c.W(p + "mod.lin", {6 * w})));
    ggml_tensor* mod[6];
    for (int i = 0; i < 6; ++i) mod[i] = chunk(ctx, m, w, i);
    const AttnShape s{w, cfg.head_dim, cfg.heads, cfg.kv_heads};
    ggml_tensor* a = nn::modulate(ctx, rms(c, x, p + "prenorm.scale", w, cfg.eps), mod[1], mod[0]);
    a = attention(c, p + "attn.", s, cfg.eps, a, cos, sin);
    x = ggml_add(ctx, x, ggml_mul(ctx, a, mod[2]));
    ggml_tensor* f = nn::modulate(ctx, rms(c, x, p + "postnorm.scale", w, cfg.eps), mod[4], mod[3]);
    f = swiglu(c, p + "mlp.", w, cfg.mlp, f);
    return ggml_add(ctx, x, ggml_mul(ctx, f, mod[5]));
}

const TensorInfo* find(const TensorIndex& index, const std::string& name, size_t dims) {
    const TensorInfo* t = index.find(name);
    return t && t->shape.size() == dims ? t : nullptr;
}

int64_t count_blocks(const TensorIndex& index, const std::string& base, const char* probe) {
    int64_t n = 0;
    while (index.has(base + std::to_string(n) + probe)) ++n;
    return n;
}

// Heads of an attention under `p` ("....attn."): head size from its q norm, heads from wq,
// key/value heads from wk, for a stream `width` wide.
Status attention_shape(const TensorIndex& index, const std::string& p, int64_t width,
                       int64_t* head_dim, int64_t* heads, int64_t* kv_heads) {
    const TensorInfo* qn = find(index, p + "qknorm.qnorm.scale", 1);
    const TensorInfo* wq = find(index, p + "wq.weight", 2);
    const TensorInfo* wk = find(index, p + "wk.weight", 2);
    for (const auto& [t, n] : {std::pair{qn, "qknorm.qnorm.scale"}, std::pair{wq, "wq.weight"},
                               std::pair{wk, "wk.weight"}}) {
        if (!t) return Status::Error("missing tensor " + p + n);
    }
    *head_dim = qn->shape[0];
    if (wq->shape[1] != width || wq->shape[0] != width || width % *head_dim ||
        wk->shape[0] % *head_dim) {
        return Status::Error(string_format(
            "%swq.weight / wk.weight: [%lld, %lld] and [%lld, %lld] are not heads of %lld over a "
            "stream %lld wide",
            p.c_str(), (long long)wq->shape[0], (long long)wq->shape[1], (long long)wk->shape[0],
            (long long)wk->shape[1], (long long)*head_dim, (long long)width));
    }
    *heads = width / *head_dim;
    *kv_heads = wk->shape[0] / *head_dim;
    if (*kv_heads == 0 || *heads % *kv_heads) {
        return Status::Error(
            string_format("%swk.weight: %lld query heads cannot share %lld "
                          "key/value heads",
                          p.c_str(), (long long)*heads, (long long)*kv_heads));
    }
    return Status::Ok();
}

}  // namespace

std::vector<int> Krea2Config::axes_dim() const {
    const int d = static_cast<int>(head_dim), u = d / 16;
    return {d - 12 * u, 6 * u, 6 * u};
}

bool is_krea2(const TensorIndex& index, const std::string& prefix) {
    return index.has(prefix + "txtfusion.projector.weight");
}

Result<Krea2Config> detect_krea2(const TensorIndex& index, const std::string& prefix) {
    Krea2Config cfg;
    cfg.prefix = prefix;
    const TensorInfo* first = find(index, prefix + "first.weight", 2);
    const TensorInfo* last = find(index, prefix + "last.linear.weight", 2);
    const TensorInfo* proj = find(index, prefix + "txtfusion.projector.weight", 2);
    const TensorInfo* t0 = find(index, prefix + "tmlp.0.weight", 2);
    const TensorInfo* tn = find(index, prefix + "txtfusion.layerwise_blocks.0.prenorm.scale", 1);
    const TensorInfo* mlp = find(index, prefix + "blocks.0.mlp.gate.weight", 2);
    const TensorInfo* tmlp =
        find(index, prefix + "txtfusion.layerwise_blocks.0.mlp.gate.weight", 2);
    const TensorInfo* txt1 = find(index, prefix + "txtmlp.1.weight", 2);
    for (const auto& [t, n] :
         {std::pair{first, "first.weight"}, std::pair{last, "last.linear.weight"},
          std::pair{proj, "txtfusion.projector.weight"}, std::pair{t0, "tmlp.0.weight"},
          std::pair{tn, "txtfusion.layerwise_blocks.0.prenorm.scale"},
          std::pair{mlp, "blocks.0.mlp.gate.weight"},
          std::pair{tmlp, "txtfusion.layerwise_blocks.0.mlp.gate.weight"},
          std::pair{txt1, "txtmlp.1.weight"}}) {
        if (!t) return Status::Error("missing tensor " + prefix + n);
    }
    const int64_t pp = static_cast<int64_t>(cfg.patch) * cfg.patch;
    cfg.width = first->shape[0];
    if (first->shape[1] % pp || last->shape[0] != first->shape[1] || last->shape[1] != cfg.width) {
        return Status::Error(string_format(
            "%sfirst.weight [%lld, %lld] / last.linear.weight [%lld, %lld]: not the same 2x2 "
            "latent patches in and out of one width",
            prefix.c_str(), (long long)first->shape[0], (long long)first->shape[1],
            (long long)last->shape[0], (long long)last->shape[1]));
    }
    cfg.channels = first->shape[1] / pp;
    cfg.t_features = t0->shape[1];
    cfg.text_width = tn->shape[0];
    cfg.text_states = proj->shape[1];
    if (proj->shape[0] != 1) {
        return Status::Error(prefix +
                             "txtfusion.projector.weight: " + std::to_string(proj->shape[0]) +
                             " outputs (Krea2's folds the " + "stacked states into 1)");
    }
    if (txt1->shape[1] != cfg.text_width || txt1->shape[0] != cfg.width) {
        return Status::Error(string_format(
            "%stxtmlp.1.weight: maps %lld to %lld, the text is %lld wide and the model %lld",
            prefix.c_str(), (long long)txt1->shape[1], (long long)txt1->shape[0],
            (long long)cfg.text_width, (long long)cfg.width));
    }
    GGDIFF_TRY(attention_shape(index, prefix + "blocks.0.attn.", cfg.width, &cfg.head_dim,
                               &cfg.heads, &cfg.kv_heads));
    if (cfg.head_dim < 16 || cfg.head_dim % 16) {
        return Status::Error(prefix + "blocks.0.attn.qknorm.qnorm.scale: heads of " +
                             std::to_string(cfg.head_dim) +
                             " (Krea2's 3-axis RoPE splits them in 16ths)");
    }
    GGDIFF_TRY(attention_shape(index, prefix + "txtfusion.layerwise_blocks.0.attn.", cfg.text_width,
                               &cfg.text_head_dim, &cfg.text_heads, &cfg.text_kv_heads));
    cfg.mlp = mlp->shape[0];
    cfg.text_mlp = tmlp->shape[0];
    cfg.layers = count_blocks(index, prefix + "blocks.", ".attn.wq.weight");
    cfg.layerwise_blocks =
        count_blocks(index, prefix + "txtfusion.layerwise_blocks.", ".attn.wq.weight");
    cfg.refiner_blocks =
        count_blocks(index, prefix + "txtfusion.refiner_blocks.", ".attn.wq.weight");
    if (!index.has(prefix + "last.modulation.lin") || !index.has(prefix + "tproj.1.weight")) {
        return Status::Error(
            "missing tensor " + prefix +
            (index.has(prefix + "tproj.1.weight") ? "last.modulation.lin" : "tproj.1.weight"));
    }
    return cfg;
}

Krea2Rope krea2_rope(const Krea2Config& cfg, int64_t text, int64_t grid_h, int64_t grid_w) {
    // Text tokens at (0, 0, 0); image patch (y, x) at (0, y, x).
    std::vector<float> ids(static_cast<size_t>(3 * (text + grid_h * grid_w)), 0.0f);
    for (int64_t y = 0; y < grid_h; ++y) {
        for (int64_t x = 0; x < grid_w; ++x) {
            const size_t k = 3 * static_cast<size_t>(text + y * grid_w + x);
            ids[k + 1] = static_cast<float>(y);
            ids[k + 2] = static_cast<float>(x);
        }
    }
    const nn::RopeTable tab = nn::rope_table(ids, cfg.axes_dim(), cfg.theta);
    Krea2Rope r{HostTensor({1, tab.pairs, 1, tab.tokens}),
                HostTensor({1, tab.pairs, 1, tab.tokens})};
    r.cos.data = tab.cos;
    r.sin.data = tab.sin;
    return r;
}

ggml_tensor* build_krea2_block(nn::Ctx& c, const Krea2Config& cfg, int64_t index, ggml_tensor* x,
                               ggml_tensor* mods, ggml_tensor* cos, ggml_tensor* sin) {
    return single_block(c, cfg, index, x, mods, cos, sin);
}

ggml_tensor* build_krea2(nn::Ctx& c, const Krea2Config& cfg, ggml_tensor* x, ggml_tensor* timesteps,
                         ggml_tensor* context, ggml_tensor* cos, ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const std::string& p = cfg.prefix;
    const int64_t W = x->ne[0], H = x->ne[1], w = cfg.width;
    ggml_tensor* img = nn::pad_to_patch(ctx, x, cfg.patch);
    const int64_t gw = img->ne[0] / cfg.patch, gh = img->ne[1] / cfg.patch;
    img = nn::patchify(ctx, img, cfg.patch);
    img = nn::linear(c, img, p + "first", img->ne[0], w);

    ggml_tensor* t = ggml_timestep_embedding(ctx, ggml_scale(ctx, timesteps, 1000.0f),
                                             static_cast<int>(cfg.t_features), 10000);
    t = ggml_gelu(ctx, nn::linear(c, t, p + "tmlp.0", cfg.t_features, w));
    t = nn::linear(c, t, p + "tmlp.2", w, w);
    t = ggml_reshape_3d(ctx, t, w, 1, t->ne[1]);
    ggml_tensor* tvec = nn::linear(c, ggml_gelu(ctx, t), p + "tproj.1", w, 6 * w);

    ggml_tensor* txt = text_fusion(c, cfg, context);
    txt = rms(c, txt, p + "txtmlp.0.scale", cfg.text_width, cfg.eps);
    txt = ggml_gelu(ctx, nn::linear(c, txt, p + "txtmlp.1", cfg.text_width, w));
    txt = nn::linear(c, txt, p + "txtmlp.3", w, w);
    const int64_t text = txt->ne[1], image = img->ne[1];

    ggml_tensor* h = ggml_concat(ctx, txt, img, 1);
    for (int64_t i = 0; i < cfg.layers; ++i) h = single_block(c, cfg, i, h, tvec, cos, sin);

    // last: its two vectors (scale, shift) plus t.
    ggml_tensor* lin = as_f32(ctx, c.W(p + "last.modulation.lin", {w, 2}));
    ggml_tensor* scale = ggml_add(ctx, t, ggml_view_1d(ctx, lin, w, 0));
    ggml_tensor* shift = ggml_add(ctx, t, ggml_view_1d(ctx, lin, w, lin->nb[1]));
    h = nn::token_range(ctx, h, text, image);
    h = nn::modulate(ctx, rms(c, h, p + "last.norm.scale", w, cfg.eps), shift, scale);
    h = nn::linear(c, h, p + "last.linear", w, cfg.patch * cfg.patch * cfg.channels);
    return nn::crop_latent(ctx, nn::unpatchify(ctx, h, gw, gh, cfg.patch), W, H);
}

}  // namespace ggdiff::models

namespace ggdiff {

namespace {

// The stacked states of every item, one token count.
Result<HostTensor> stack_contexts(const models::Krea2Config& cfg, const DenoiseBatch& b) {
    const int64_t n = static_cast<int64_t>(b.cond.size());
    const int64_t width = cfg.text_width * cfg.text_states;
    const int64_t tokens = b.cond[0]->context.dim(1);
    HostTensor context({width, tokens, n});
    for (int64_t i = 0; i < n; ++i) {
        const HostTensor& c = b.cond[static_cast<size_t>(i)]->context;
        if (c.dim(0) != width || c.numel() != width * tokens) {
            return Status::Error(string_format(
                "Krea2: text states [%lld, %lld] for a DiT that reads %lld states %lld wide per "
                "token (batched prompts need one token count)",
                (long long)c.dim(0), (long long)c.dim(1), (long long)cfg.text_states,
                (long long)cfg.text_width));
        }
        std::copy(c.data.begin(), c.data.end(), context.data.begin() + i * width * tokens);
    }
    return context;
}

}  // namespace

Result<std::unique_ptr<Krea2Denoiser>> Krea2Denoiser::create(const FamilyContext& ctx,
                                                             const ModuleDevices& where,
                                                             const models::Krea2Config& cfg) {
    auto d = std::unique_ptr<Krea2Denoiser>(new Krea2Denoiser());
    d->cfg_ = cfg;
    // A representative graph (one patch, two prompt tokens) declares every weight.
    auto runner = make_module(ctx, where, "Krea2 DiT", [&cfg](GraphBuilder& gb) {
        const int64_t s = cfg.patch, l = 2;
        const models::Krea2Rope r = models::krea2_rope(cfg, l, 1, 1);
        return std::vector<ggml_tensor*>{models::build_krea2(
            gb.nn(), cfg, gb.input(HostTensor({s, s, cfg.channels, 1})), gb.input(HostTensor({1})),
            gb.input(HostTensor({cfg.text_width * cfg.text_states, l, 1})), gb.input(r.cos),
            gb.input(r.sin))};
    });
    if (!runner.ok()) return runner.status();
    d->runner_ = std::move(*runner);
    return d;
}

Result<HostTensor> Krea2Denoiser::run(const DenoiseBatch& b) {
    const int64_t w = b.x.dim(0), h = b.x.dim(1), n = b.x.dim(3);
    if (b.x.dim(2) != cfg_.channels) {
        return Status::Error(string_format("Krea2: a latent of %lld channels (the DiT takes %lld)",
                                           (long long)b.x.dim(2), (long long)cfg_.channels));
    }
    if (static_cast<int64_t>(b.cond.size()) != n || static_cast<int64_t>(b.timesteps.size()) != n) {
        return Status::Error("Krea2: batch of latents and conditionings differ in size");
    }
    if (b.concat || (b.refs && !b.refs->empty())) {
        return Status::Error("Krea2: extra inputs (reference images, channels) are not taken");
    }
    auto context = stack_contexts(cfg_, b);
    if (!context.ok()) return context.status();
    HostTensor ts({n});
    for (int64_t i = 0; i < n; ++i) ts.data[i] = b.timesteps[static_cast<size_t>(i)];
    const int64_t gw = (w + cfg_.patch - 1) / cfg_.patch, gh = (h + cfg_.patch - 1) / cfg_.patch;
    const models::Krea2Rope rope = models::krea2_rope(cfg_, context->dim(1), gh, gw);
    auto r = runner_->run([&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{
            models::build_krea2(gb.nn(), cfg_, gb.input(b.x), gb.input(ts), gb.input(*context),
                                gb.input(rope.cos), gb.input(rope.sin))};
    });
    if (!r.ok()) return r.status();
    HostTensor out = std::move((*r)[0]);
    out.ne = b.x.ne;
    return out;
}

}  // namespace ggdiff
