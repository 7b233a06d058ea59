#include "families/ideogram4/dit.h"

#include <ggml.h>

#include <algorithm>
#include <cmath>

#include "core/log.h"
#include "nn/dit.h"
#include "nn/layers.h"
#include "pipeline/parts/module_setup.h"

namespace ggdiff::models {

namespace {

constexpr int kImagePositionOffset = 65536;
constexpr int kMropeSections[3] = {24, 20, 20};
constexpr float kTimeFactor = 10.0f;

// Per-head RMSNorm of x [heads*d, T, N] by the weight `name` [d].
ggml_tensor* head_rms(nn::Ctx& c, ggml_tensor* x, const std::string& name, int64_t d, float eps) {
    const int64_t dim = x->ne[0], t = x->ne[1], n = x->ne[2];
    x = ggml_reshape_4d(c.ctx, ggml_cont(c.ctx, x), d, dim / d, t, n);
    return ggml_reshape_3d(c.ctx, nn::rms_norm(c, x, name, d, eps), dim, t, n);
}

// Chunk i of v [count * width, 1, N], contiguous.
ggml_tensor* chunk(ggml_context* ctx, ggml_tensor* v, int64_t width, int64_t i) {
    return ggml_cont(ctx, ggml_view_3d(ctx, v, width, 1, v->ne[2], v->nb[1], v->nb[2],
                                       static_cast<size_t>(i * width) * ggml_element_size(v)));
}

// x * (1 + scale), scale [dim, 1, N].
ggml_tensor* scale_only(ggml_context* ctx, ggml_tensor* x, ggml_tensor* scale) {
    return ggml_add(ctx, x, ggml_mul(ctx, x, scale));
}

ggml_tensor* attention(nn::Ctx& c, const Ideogram4Config& cfg, const std::string& p, ggml_tensor* x,
                       ggml_tensor* cos, ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const int64_t w = cfg.width, d = cfg.head_dim;
    ggml_tensor* qkv = nn::linear(c, x, p + "qkv", w, 3 * w, false);
    ggml_tensor* q = head_rms(c, nn::feature_rows(ctx, qkv, 0, w), p + "norm_q.weight", d, cfg.eps);
    ggml_tensor* k = head_rms(c, nn::feature_rows(ctx, qkv, w, w), p + "norm_k.weight", d, cfg.eps);
    ggml_tensor* v = ggml_cont(ctx, nn::feature_rows(ctx, qkv, 2 * w, w));
    const int heads = static_cast<int>(cfg.heads);
    q = nn::rope_halves(ctx, q, cos, sin, heads);
    k = nn::rope_halves(ctx, k, cos, sin, heads);
    ggml_tensor* o = nn::attention(ctx, q, k, v, heads);
    return nn::linear(c, o, p + "o", w, w, false);
}

ggml_tensor* swiglu(nn::Ctx& c, const Ideogram4Config& cfg, const std::string& p, ggml_tensor* x) {
    ggml_tensor* g = ggml_silu(c.ctx, nn::linear(c, x, p + "w1", cfg.width, cfg.mlp, false));
    ggml_tensor* u = nn::linear(c, x, p + "w3", cfg.width, cfg.mlp, false);
    return nn::linear(c, ggml_mul(c.ctx, g, u), p + "w2", cfg.mlp, cfg.width, false);
}

ggml_tensor* layer(nn::Ctx& c, const Ideogram4Config& cfg, int64_t index, ggml_tensor* x,
                   ggml_tensor* adaln, ggml_tensor* cos, ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const std::string p = cfg.prefix + "layers." + std::to_string(index) + ".";
    const int64_t w = cfg.width;
    ggml_tensor* mod = nn::linear(c, adaln, p + "adaln_modulation", cfg.adaln, 4 * w);
    ggml_tensor* scale_msa = chunk(ctx, mod, w, 0);
    ggml_tensor* gate_msa = ggml_tanh(ctx, chunk(ctx, mod, w, 1));
    ggml_tensor* scale_mlp = chunk(ctx, mod, w, 2);
    ggml_tensor* gate_mlp = ggml_tanh(ctx, chunk(ctx, mod, w, 3));

    ggml_tensor* a = nn::rms_norm(c, x, p + "attention_norm1.weight", w, cfg.eps);
    a = attention(c, cfg, p + "attention.", scale_only(ctx, a, scale_msa), cos, sin);
    a = nn::rms_norm(c, a, p + "attention_norm2.weight", w, cfg.eps);
    x = ggml_add(ctx, x, ggml_mul(ctx, a, gate_msa));

    ggml_tensor* f = nn::rms_norm(c, x, p + "ffn_norm1.weight", w, cfg.eps);
    f = swiglu(c, cfg, p + "feed_forward.", scale_only(ctx, f, scale_mlp));
    f = nn::rms_norm(c, f, p + "ffn_norm2.weight", w, cfg.eps);
    return ggml_add(ctx, x, ggml_mul(ctx, f, gate_mlp));
}

const TensorInfo* find(const TensorIndex& index, const std::string& name, size_t dims) {
    const TensorInfo* t = index.find(name);
    return t && t->shape.size() == dims ? t : nullptr;
}

}  // namespace

std::vector<int> ideogram4_llm_layers() {
    // The reference's out_layers {1, 4, ..., 34, 36}: the outputs after that many layers.
    std::vector<int> out;
    for (int l = 1; l <= 34; l += 3) out.push_back(l - 1);
    out.push_back(35);
    return out;
}

bool is_ideogram4(const TensorIndex& index, const std::string& prefix) {
    return index.has(prefix + "embed_image_indicator.weight");
}

Result<Ideogram4Config> detect_ideogram4(const TensorIndex& index, const std::string& prefix) {
    Ideogram4Config cfg;
    cfg.prefix = prefix;
    const TensorInfo* in = find(index, prefix + "input_proj.weight", 2);
    const TensorInfo* norm = find(index, prefix + "llm_cond_norm.weight", 1);
    const TensorInfo* proj = find(index, prefix + "llm_cond_proj.weight", 2);
    const TensorInfo* ada = find(index, prefix + "adaln_proj.weight", 2);
    const TensorInfo* ind = find(index, prefix + "embed_image_indicator.weight", 2);
    const TensorInfo* nq = find(index, prefix + "layers.0.attention.norm_q.weight", 1);
    const TensorInfo* w1 = find(index, prefix + "layers.0.feed_forward.w1.weight", 2);
    const TensorInfo* out = find(index, prefix + "final_layer.linear.weight", 2);
    for (const auto& [t, n] :
         {std::pair{in, "input_proj.weight"}, std::pair{norm, "llm_cond_norm.weight"},
          std::pair{proj, "llm_cond_proj.weight"}, std::pair{ada, "adaln_proj.weight"},
          std::pair{ind, "embed_image_indicator.weight"},
          std::pair{nq, "layers.0.attention.norm_q.weight"},
          std::pair{w1, "layers.0.feed_forward.w1.weight"},
          std::pair{out, "final_layer.linear.weight"}}) {
        if (!t) return Status::Error("missing tensor " + prefix + n);
    }
    cfg.width = in->shape[0];
    cfg.channels = in->shape[1];
    if (out->shape[0] != cfg.channels || out->shape[1] != cfg.width) {
        return Status::Error(string_format(
            "%sfinal_layer.linear.weight [%lld, %lld]: input_proj takes %lld channels into %lld",
            prefix.c_str(), (long long)out->shape[0], (long long)out->shape[1],
            (long long)cfg.channels, (long long)cfg.width));
    }
    if (cfg.channels != 128) {
        return Status::Error(string_format(
            "%sinput_proj.weight: %lld latent channels (Ideogram 4 takes FLUX.2's 128)",
            prefix.c_str(), (long long)cfg.channels));
    }
    cfg.head_dim = nq->shape[0];
    if (cfg.head_dim < 2 || cfg.head_dim % 2 || cfg.width % cfg.head_dim) {
        return Status::Error(
            string_format("%slayers.0.attention.norm_q.weight: heads of %lld in "
                          "a width of %lld",
                          prefix.c_str(), (long long)cfg.head_dim, (long long)cfg.width));
    }
    cfg.heads = cfg.width / cfg.head_dim;
    cfg.mlp = w1->shape[0];
    cfg.adaln = ada->shape[0];
    const int64_t features = norm->shape[0];
    if (features % cfg.text_states || proj->shape[1] != features || proj->shape[0] != cfg.width) {
        return Status::Error(string_format(
            "%sllm_cond_proj.weight [%lld, %lld] / llm_cond_norm.weight [%lld]: not %lld stacked "
            "LLM states mapped to the width %lld",
            prefix.c_str(), (long long)proj->shape[0], (long long)proj->shape[1],
            (long long)features, (long long)cfg.text_states, (long long)cfg.width));
    }
    cfg.text_width = features / cfg.text_states;
    if (ind->shape[0] != 2 || ind->shape[1] != cfg.width) {
        return Status::Error(prefix + "embed_image_indicator.weight: not 2 rows of the width");
    }
    cfg.layers = 0;
    while (index.has(prefix + "layers." + std::to_string(cfg.layers) + ".attention.qkv.weight")) {
        ++cfg.layers;
    }
    return cfg;
}

Ideogram4Rope ideogram4_rope(const Ideogram4Config& cfg, int64_t text, int64_t grid_h,
                             int64_t grid_w) {
    const int64_t tokens = text + grid_h * grid_w;
    const int half = static_cast<int>(cfg.head_dim / 2);
    // The reference's frequencies, in its float arithmetic: theta^-(linspace(0, (d-2)/d)).
    const float end = (static_cast<float>(cfg.head_dim) - 2.0f) / static_cast<float>(cfg.head_dim);
    const float step = half > 1 ? end / static_cast<float>(half - 1) : 0.0f;
    std::vector<float> omega(static_cast<size_t>(half));
    std::vector<int> axis(static_cast<size_t>(half), 0);
    for (int j = 0; j < half; ++j) {
        omega[static_cast<size_t>(j)] = 1.0f / std::pow(cfg.theta, static_cast<float>(j) * step);
    }
    for (int a = 1; a < 3; ++a) {
        for (int j = a; j < std::min(kMropeSections[a] * 3, half); j += 3) {
            axis[static_cast<size_t>(j)] = a;
        }
    }
    Ideogram4Rope r{HostTensor({half, 1, tokens, 1}), HostTensor({half, 1, tokens, 1})};
    for (int64_t t = 0; t < tokens; ++t) {
        float pos[3];
        if (t < text) {
            pos[0] = pos[1] = pos[2] = static_cast<float>(t);
        } else {
            const int64_t i = t - text;
            pos[0] = static_cast<float>(kImagePositionOffset);
            pos[1] = static_cast<float>(kImagePositionOffset + i / grid_w);
            pos[2] = static_cast<float>(kImagePositionOffset + i % grid_w);
        }
        for (int j = 0; j < half; ++j) {
            const float angle = pos[axis[static_cast<size_t>(j)]] * omega[static_cast<size_t>(j)];
            r.cos.data[static_cast<size_t>(t * half + j)] = std::cos(angle);
            r.sin.data[static_cast<size_t>(t * half + j)] = std::sin(angle);
        }
    }
    return r;
}

ggml_tensor* build_ideogram4_layer(nn::Ctx& c, const Ideogram4Config& cfg, int64_t index,
                                   ggml_tensor* x, ggml_tensor* adaln, ggml_tensor* cos,
                                   ggml_tensor* sin) {
    return layer(c, cfg, index, x, adaln, cos, sin);
}

ggml_tensor* build_ideogram4(nn::Ctx& c, const Ideogram4Config& cfg, ggml_tensor* x,
                             ggml_tensor* time, ggml_tensor* context, ggml_tensor* indicator,
                             ggml_tensor* cos, ggml_tensor* sin) {
    ggml_context* ctx = c.ctx;
    const std::string& p = cfg.prefix;
    const int64_t W = x->ne[0], H = x->ne[1], w = cfg.width, C = cfg.channels;
    const int64_t ae = C / 4;
    // Channels (ae, row, column) -> token features (row, column, ae).
    ggml_tensor* img = ggml_reshape_4d(ctx, ggml_cont(ctx, x), W * H, 2, 2, ae);
    img = ggml_cont(ctx, ggml_permute(ctx, img, 3, 1, 2, 0));
    img = ggml_reshape_3d(ctx, img, C, W * H, 1);
    img = nn::linear(c, img, p + "input_proj", C, w);

    ggml_tensor* h = img;
    int64_t text = 0;
    if (context) {
        const int64_t s = cfg.text_states, tw = cfg.text_width;
        text = context->ne[1];
        // [tw * s] per token, state-major -> feature h * s + l.
        ggml_tensor* txt = ggml_reshape_3d(ctx, ggml_cont(ctx, context), tw, s, text);
        txt = ggml_cont(ctx, ggml_permute(ctx, txt, 1, 0, 2, 3));
        txt = ggml_reshape_3d(ctx, txt, tw * s, text, 1);
        txt = nn::rms_norm(c, txt, p + "llm_cond_norm.weight", tw * s, 1e-6f);
        txt = nn::linear(c, txt, p + "llm_cond_proj", tw * s, w);
        h = ggml_concat(ctx, txt, img, 1);
    }
    ggml_tensor* table = c.W(p + "embed_image_indicator.weight", {w, 2});
    h = ggml_add(ctx, h, ggml_get_rows(ctx, table, indicator));

    // Sine half first.
    ggml_tensor* t = ggml_timestep_embedding(ctx, ggml_scale(ctx, time, kTimeFactor),
                                             static_cast<int>(w), 10000);
    const size_t half = static_cast<size_t>(w / 2) * ggml_element_size(t);
    t = ggml_concat(ctx, ggml_view_2d(ctx, t, w / 2, t->ne[1], t->nb[1], half),
                    ggml_view_2d(ctx, t, w / 2, t->ne[1], t->nb[1], 0), 0);
    t = ggml_silu(ctx, nn::linear(c, t, p + "t_embedding.mlp_in", w, w));
    t = nn::linear(c, t, p + "t_embedding.mlp_out", w, w);
    ggml_tensor* adaln = ggml_silu(ctx, nn::linear(c, t, p + "adaln_proj", w, cfg.adaln));
    adaln = ggml_reshape_3d(ctx, adaln, cfg.adaln, 1, 1);

    for (int64_t i = 0; i < cfg.layers; ++i) h = layer(c, cfg, i, h, adaln, cos, sin);

    ggml_tensor* scale =
        nn::linear(c, ggml_silu(ctx, adaln), p + "final_layer.adaln_modulation", cfg.adaln, w);
    h = nn::token_range(ctx, h, text, W * H);
    h = scale_only(ctx, nn::layer_norm_plain(ctx, h, 1e-6f), scale);
    h = nn::linear(c, h, p + "final_layer.linear", w, C);
    // Token features (row, column, ae) -> channels (ae, row, column); negated.
    h = ggml_reshape_4d(ctx, h, ae, 2, 2, W * H);
    h = ggml_cont(ctx, ggml_permute(ctx, h, 3, 1, 2, 0));
    h = ggml_reshape_4d(ctx, h, W, H, C, 1);
    return ggml_scale(ctx, h, -1.0f);
}

}  // namespace ggdiff::models

namespace ggdiff {

Result<std::unique_ptr<Ideogram4Denoiser>> Ideogram4Denoiser::create(
    const FamilyContext& ctx, const ModuleDevices& where, const models::Ideogram4Config& cfg,
    const models::Ideogram4Config* uncond) {
    auto d = std::unique_ptr<Ideogram4Denoiser>(new Ideogram4Denoiser());
    d->cfg_ = cfg;
    // A representative graph (one patch, two prompt tokens; or none) declares every weight.
    auto declare = [](const models::Ideogram4Config& c, bool text) {
        return [c, text](GraphBuilder& gb) {
            const int64_t l = text ? 2 : 0;
            const models::Ideogram4Rope r = models::ideogram4_rope(c, l, 1, 1);
            std::vector<int32_t> ind(static_cast<size_t>(l + 1), 1);
            for (int64_t i = 0; i < l; ++i) ind[static_cast<size_t>(i)] = 0;
            ggml_tensor* context =
                text ? gb.input(HostTensor({c.text_width * c.text_states, l, 1})) : nullptr;
            return std::vector<ggml_tensor*>{models::build_ideogram4(
                gb.nn(), c, gb.input(HostTensor({1, 1, c.channels, 1})), gb.input(HostTensor({1})),
                context, gb.input_i32(ind, {l + 1}), gb.input(r.cos), gb.input(r.sin))};
        };
    };
    auto runner = make_module(ctx, where, "Ideogram 4 DiT", declare(cfg, true));
    if (!runner.ok()) return runner.status();
    d->runner_ = std::move(*runner);
    if (uncond) {
        d->uncond_cfg_ = *uncond;
        // The unconditional pass never reads the text projection.
        auto u = make_module(ctx, where, "Ideogram 4 uncond DiT", declare(*uncond, false));
        if (!u.ok()) return u.status();
        d->uncond_runner_ = std::move(*u);
    }
    return d;
}

void Ideogram4Denoiser::end_phase() {
    runner_->end_phase();
    if (uncond_runner_) uncond_runner_->end_phase();
}

Result<HostTensor> Ideogram4Denoiser::run_one(const HostTensor& x, float time,
                                              const HostTensor* context) {
    const bool uncond = context == nullptr;
    ModuleRunner& runner = uncond && uncond_runner_ ? *uncond_runner_ : *runner_;
    const models::Ideogram4Config& cfg = uncond && uncond_runner_ ? uncond_cfg_ : cfg_;
    const int64_t w = x.dim(0), h = x.dim(1);
    const int64_t text = uncond ? 0 : context->dim(1);
    const models::Ideogram4Rope rope = models::ideogram4_rope(cfg, text, h, w);
    std::vector<int32_t> ind(static_cast<size_t>(text + w * h), 1);
    std::fill(ind.begin(), ind.begin() + text, 0);
    HostTensor ts({1});
    ts.data[0] = time;
    auto r = runner.run([&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{models::build_ideogram4(
            gb.nn(), cfg, gb.input(x), gb.input(ts), uncond ? nullptr : gb.input(*context),
            gb.input_i32(ind, {text + w * h}), gb.input(rope.cos), gb.input(rope.sin))};
    });
    if (!r.ok()) return r.status();
    return std::move((*r)[0]);
}

Result<HostTensor> Ideogram4Denoiser::run(const DenoiseBatch& b) {
    const int64_t w = b.x.dim(0), h = b.x.dim(1), ch = b.x.dim(2), n = b.x.dim(3);
    if (ch != cfg_.channels) {
        return Status::Error(
            string_format("Ideogram 4: a latent of %lld channels (the DiT takes %lld)",
                          (long long)ch, (long long)cfg_.channels));
    }
    if (static_cast<int64_t>(b.cond.size()) != n || static_cast<int64_t>(b.timesteps.size()) != n) {
        return Status::Error("Ideogram 4: batch of latents and conditionings differ in size");
    }
    if (b.concat || (b.refs && !b.refs->empty())) {
        return Status::Error("Ideogram 4: extra inputs (reference images, channels) are not taken");
    }
    HostTensor out(b.x.ne);
    const int64_t item = w * h * ch;
    for (int64_t i = 0; i < n; ++i) {
        const HostTensor& context = b.cond[static_cast<size_t>(i)]->context;
        const bool uncond = context.numel() == 0;
        if (!uncond && context.dim(0) != cfg_.text_width * cfg_.text_states) {
            return Status::Error(string_format(
                "Ideogram 4: text states %lld wide for a DiT that reads %lld states %lld wide",
                (long long)context.dim(0), (long long)cfg_.text_states,
                (long long)cfg_.text_width));
        }
        HostTensor xi({w, h, ch, 1});
        std::copy(b.x.data.begin() + i * item, b.x.data.begin() + (i + 1) * item, xi.data.begin());
        // The model's time runs from noise (0) to clean (1000).
        const float time = 1000.0f - b.timesteps[static_cast<size_t>(i)];
        auto r = run_one(xi, time, uncond ? nullptr : &context);
        if (!r.ok()) return r.status();
        std::copy(r->data.begin(), r->data.end(), out.data.begin() + i * item);
    }
    return out;
}

}  // namespace ggdiff
