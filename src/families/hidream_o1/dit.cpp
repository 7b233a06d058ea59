#include "families/hidream_o1/dit.h"

#include <ggml.h>

#include <algorithm>

#include "core/log.h"
#include "io/tensor_probe.h"
#include "nn/dit.h"
#include "nn/layers.h"
#include "pipeline/parts/module_setup.h"

namespace ggdiff::models {

namespace {

constexpr int kImagePositionBase = 4096;  // the reference's fix_point for the generated image
constexpr int kTimeFeatures = 256, kMaxPeriod = 10000;

}  // namespace

Result<HiDreamO1Config> detect_hidream_o1(const TensorIndex& index) {
    HiDreamO1Config cfg;
    auto llm = detect_qwen_llm(index, cfg.prefix + "language_model.");
    if (!llm.ok()) return llm.status();
    if (!llm->qk_norm || llm->qkv_bias) {
        return Status::Error(cfg.prefix +
                             "language_model: not a Qwen3 (HiDream-O1's language model has q/k "
                             "norms and no q/k/v biases)");
    }
    cfg.llm = *llm;
    cfg.llm.rope_theta = 5000000.0f;
    cfg.llm.mrope_sections = {24, 20, 20, 0};
    if (2 * (24 + 20 + 20) != cfg.llm.head_dim) {
        return Status::Error(cfg.prefix + "language_model: heads of " +
                             std::to_string(cfg.llm.head_dim) +
                             " values, Qwen3-VL's multimodal RoPE covers 128");
    }
    const int64_t h = cfg.llm.hidden;
    const TensorProbe probe{index, cfg.prefix, "HiDream-O1"};
    auto p1 = probe.shape("x_embedder.proj1.weight", 2);
    if (!p1.ok()) return p1.status();
    cfg.bottleneck = (*p1)[0];
    if ((*p1)[1] != cfg.patch_width()) {
        return probe.odd("x_embedder.proj1.weight", "HiDream-O1 embeds 32x32 RGB patches of " +
                                                        std::to_string(cfg.patch_width()) +
                                                        " values");
    }
    GGDIFF_TRY(probe.expect("x_embedder.proj2.weight", {h, cfg.bottleneck}));
    GGDIFF_TRY(probe.expect("x_embedder.proj2.bias", {h}));
    GGDIFF_TRY(probe.expect("t_embedder1.mlp.0.weight", {h, kTimeFeatures}));
    GGDIFF_TRY(probe.expect("t_embedder1.mlp.2.weight", {h, h}));
    GGDIFF_TRY(probe.expect("final_layer2.linear.weight", {cfg.patch_width(), h}));
    GGDIFF_TRY(probe.expect("final_layer2.linear.bias", {cfg.patch_width()}));
    return cfg;
}

std::vector<int32_t> hidream_o1_positions(int64_t text, int64_t grid_h, int64_t grid_w) {
    const int64_t n = text + grid_h * grid_w;
    std::vector<int32_t> pos(static_cast<size_t>(4 * n), 0);
    auto set = [&](int64_t i, int32_t t, int32_t r, int32_t c) {
        pos[i] = t;
        pos[n + i] = r;
        pos[2 * n + i] = c;
    };
    for (int64_t i = 0; i < text; ++i) set(i, i, i, i);
    for (int64_t r = 0; r < grid_h; ++r) {
        for (int64_t c = 0; c < grid_w; ++c) {
            set(text + r * grid_w + c, kImagePositionBase, kImagePositionBase + r,
                kImagePositionBase + c);
        }
    }
    return pos;
}

ggml_tensor* build_hidream_o1(nn::Ctx& c, const HiDreamO1Config& cfg, ggml_tensor* x,
                              ggml_tensor* t, ggml_tensor* text, ggml_tensor* positions,
                              ggml_tensor* inv_sigma, const std::vector<ggml_tensor*>& refs) {
    ggml_context* ctx = c.ctx;
    const std::string& p = cfg.prefix;
    const int64_t h = cfg.llm.hidden, n = x->ne[3], tokens = text->ne[1];
    const int64_t gw = x->ne[0] / cfg.patch, gh = x->ne[1] / cfg.patch;

    // The timestep token.
    ggml_tensor* te =
        ggml_timestep_embedding(ctx, ggml_scale(ctx, t, 1000.0f), kTimeFeatures, kMaxPeriod);
    te = nn::linear(c, te, p + "t_embedder1.mlp.0", kTimeFeatures, h);
    te = nn::linear(c, ggml_silu(ctx, te), p + "t_embedder1.mlp.2", h, h);
    te = ggml_reshape_3d(ctx, te, h, 1, n);
    ggml_tensor* seq = te;
    if (tokens > 1) seq = ggml_concat(ctx, nn::token_range(ctx, text, 0, tokens - 1), te, 1);

    // The patches.
    ggml_tensor* v = nn::patchify(ctx, x, cfg.patch);  // [3072, gw*gh, N]
    for (ggml_tensor* r : refs) {
        ggml_tensor* rp = nn::patchify(ctx, r, cfg.patch);  // [3072, tokens, 1]
        if (n > 1) {
            rp = ggml_repeat(ctx, rp, ggml_new_tensor_3d(ctx, rp->type, rp->ne[0], rp->ne[1], n));
        }
        v = ggml_concat(ctx, v, rp, 1);
    }
    v = nn::linear(c, v, p + "x_embedder.proj1", cfg.patch_width(), cfg.bottleneck, false);
    v = nn::linear(c, v, p + "x_embedder.proj2", cfg.bottleneck, h);
    seq = ggml_concat(ctx, seq, v, 1);

    ggml_tensor* y = build_qwen_llm(c, cfg.llm, seq, positions, {}, 0, tokens - 1);
    y = nn::token_range(ctx, y, tokens, gw * gh);
    y = nn::linear(c, y, p + "final_layer2.linear", h, cfg.patch_width());
    ggml_tensor* x0 = nn::unpatchify(ctx, y, gw, gh, cfg.patch);
    return ggml_mul(ctx, ggml_sub(ctx, x, x0), inv_sigma);
}

}  // namespace ggdiff::models

namespace ggdiff {

Result<std::unique_ptr<HiDreamO1Denoiser>> HiDreamO1Denoiser::create(
    const FamilyContext& ctx, const ModuleDevices& where, const models::HiDreamO1Config& cfg) {
    auto d = std::unique_ptr<HiDreamO1Denoiser>(new HiDreamO1Denoiser());
    d->cfg_ = cfg;
    // A representative graph (one patch, two prompt tokens) declares every weight.
    const int64_t s = cfg.patch, l = 2;
    const std::vector<int32_t> pos = models::hidream_o1_positions(l, 1, 1);
    auto runner = make_module(ctx, where, "HiDream-O1 DiT", [&](GraphBuilder& gb) {
        HostTensor x({s, s, cfg.channels, 1}), t({1}), inv({1, 1, 1, 1});
        HostTensor text({cfg.llm.hidden, l, 1});
        return std::vector<ggml_tensor*>{models::build_hidream_o1(
            gb.nn(), cfg, gb.input(x), gb.input(t), gb.input(text),
            gb.input_i32(pos, {static_cast<int64_t>(pos.size())}), gb.input(inv))};
    });
    if (!runner.ok()) return runner.status();
    d->runner_ = std::move(*runner);
    return d;
}

Result<HostTensor> HiDreamO1Denoiser::run(const DenoiseBatch& b) {
    const int64_t w = b.x.dim(0), h = b.x.dim(1), c = b.x.dim(2), n = b.x.dim(3);
    if (static_cast<int64_t>(b.cond.size()) != n || static_cast<int64_t>(b.timesteps.size()) != n) {
        return Status::Error(string_format("HiDream-O1: batch of %lld images with %zu prompts",
                                           (long long)n, b.cond.size()));
    }
    if (c != cfg_.channels || w % cfg_.patch || h % cfg_.patch) {
        return Status::Error(string_format(
            "HiDream-O1: image [%lld, %lld, %lld], the DiT takes RGB in multiples of %d",
            (long long)w, (long long)h, (long long)c, cfg_.patch));
    }
    if (b.concat) return Status::Error("HiDream-O1: extra input channels are not supported");
    std::vector<const HostTensor*> texts;
    const Conditioning& first = *b.cond[0];
    for (const Conditioning* cond : b.cond) {
        if (!cond->batchable_with(first)) {
            return Status::Error("HiDream-O1: a batch of prompts with different reference images");
        }
        if (cond->context.dim(0) != cfg_.llm.hidden) {
            return Status::Error(string_format(
                "HiDream-O1: prompt embeddings %lld wide, the language model is %lld wide",
                (long long)cond->context.dim(0), (long long)cfg_.llm.hidden));
        }
        texts.push_back(&cond->context);
    }
    const int64_t tokens = texts[0]->dim(1);
    const HostTensor text = HostTensor::stack(texts, cfg_.llm.hidden, tokens);
    // The reference's arithmetic: model time 1 - t/1000, sigma 1 - that (at least 1e-6).
    HostTensor t({n}), inv({1, 1, 1, n});
    for (int64_t i = 0; i < n; ++i) {
        t.data[i] = 1.0f - b.timesteps[i] / 1000.0f;
        inv.data[i] = 1.0f / std::max(1e-6f, 1.0f - t.data[i]);
    }
    // The edit mode's conditioner gives the sequence's positions (prompt with its vision
    // tokens, the image, the references); text to image: the prompt then the image.
    int64_t seq = tokens + (w / cfg_.patch) * (h / cfg_.patch);
    for (const HostTensor& ref : first.images) {
        seq += (ref.dim(0) / cfg_.patch) * (ref.dim(1) / cfg_.patch);
    }
    const std::vector<int32_t> pos =
        first.positions.empty()
            ? models::hidream_o1_positions(tokens, h / cfg_.patch, w / cfg_.patch)
            : first.positions;
    if (static_cast<int64_t>(pos.size()) != 4 * seq) {
        return Status::Error(string_format(
            "HiDream-O1: %zu positions for a sequence of %lld tokens: the conditioning was made "
            "for another image size",
            pos.size() / 4, (long long)seq));
    }
    auto r = runner_->run([&](GraphBuilder& gb) {
        std::vector<ggml_tensor*> refs;
        for (const HostTensor& ref : first.images) refs.push_back(gb.input(ref));
        return std::vector<ggml_tensor*>{models::build_hidream_o1(
            gb.nn(), cfg_, gb.input(b.x), gb.input(t), gb.input(text),
            gb.input_i32(pos, {static_cast<int64_t>(pos.size())}), gb.input(inv), refs)};
    });
    if (!r.ok()) return r.status();
    return std::move((*r)[0]);
}

}  // namespace ggdiff
