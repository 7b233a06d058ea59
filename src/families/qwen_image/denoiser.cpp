#include "families/qwen_image/denoiser.h"

#include <algorithm>

#include "core/log.h"
#include "pipeline/parts/module_setup.h"

namespace ggdiff {

namespace {

struct RopeInputs {
    HostTensor cos, sin;
};

RopeInputs rope_inputs(const models::QwenImageRope& r) {
    RopeInputs in{HostTensor({1, r.pairs, 1, r.tokens}), HostTensor({1, r.pairs, 1, r.tokens})};
    in.cos.data = r.cos;
    in.sin.data = r.sin;
    return in;
}

}  // namespace

Result<std::unique_ptr<QwenImageDenoiser>> QwenImageDenoiser::create(
    const FamilyContext& ctx, const ModuleDevices& where, const models::QwenImageConfig& cfg) {
    auto d = std::unique_ptr<QwenImageDenoiser>(new QwenImageDenoiser());
    d->cfg_ = cfg;
    d->wrap_ = {ctx.options.circular_x(), ctx.options.circular_y()};
    auto runner = make_module(ctx, where, "DiT", [&cfg](GraphBuilder& gb) {
        const int64_t s = 2, text = 4;
        HostTensor x({s, s, cfg.latent_channels, 1});
        HostTensor t({1});
        HostTensor c({cfg.text_width, text, 1});
        const RopeInputs r = rope_inputs(
            models::qwen_image_rope(cfg, 1, s, s, text, {}, models::QwenRefIndex::Fixed));
        return std::vector<ggml_tensor*>{
            models::build_qwen_image(gb.nn(), cfg, gb.input(x), 1, gb.input(t), gb.input(c),
                                     gb.input(r.cos), gb.input(r.sin))};
    });
    if (!runner.ok()) return runner.status();
    d->runner_ = std::move(*runner);
    return d;
}

Result<HostTensor> QwenImageDenoiser::run(const DenoiseBatch& b) {
    const int64_t w = b.x.dim(0), h = b.x.dim(1), n = b.x.dim(3);
    const int64_t c = cfg_.latent_channels;
    if (b.x.dim(2) % c != 0) {
        return Status::Error(
            string_format("Qwen Image: a latent of %lld channels is not whole "
                          "frames of %lld",
                          (long long)b.x.dim(2), (long long)c));
    }
    const int64_t frames = b.x.dim(2) / c;
    if (static_cast<int64_t>(b.cond.size()) != n || static_cast<int64_t>(b.timesteps.size()) != n) {
        return Status::Error("Qwen Image: batch of latents and conditionings differ in size");
    }
    const int64_t width = b.cond[0]->context.dim(0), tokens = b.cond[0]->context.dim(1);
    if (width != cfg_.text_width) {
        return Status::Error(
            string_format("Qwen Image: the text encoder gives states %lld wide, the DiT takes %lld",
                          (long long)width, (long long)cfg_.text_width));
    }
    HostTensor context({width, tokens, n});
    for (int64_t i = 0; i < n; ++i) {
        const HostTensor& ctx = b.cond[static_cast<size_t>(i)]->context;
        if (ctx.numel() != width * tokens) {
            return Status::Error("Qwen Image: batched prompts must have equal token counts");
        }
        std::copy(ctx.data.begin(), ctx.data.end(), context.data.begin() + i * width * tokens);
    }
    std::vector<models::QwenImageRef> refs;
    if (b.refs) {
        for (const HostTensor& r : *b.refs) {
            if (r.dim(2) != c) {
                return Status::Error("Qwen Image: a reference latent must have " +
                                     std::to_string(c) + " channels");
            }
            refs.push_back({r.dim(0), r.dim(1)});
        }
    }
    const RopeInputs rope =
        rope_inputs(models::qwen_image_rope(cfg_, frames, w, h, tokens, refs,
                                            cfg_.layered           ? models::QwenRefIndex::Decrease
                                            : b.increase_ref_index ? models::QwenRefIndex::Increase
                                                                   : models::QwenRefIndex::Fixed,
                                            wrap_));
    HostTensor ts({n});
    ts.data = b.timesteps;
    auto r = runner_->run([&](GraphBuilder& gb) {
        std::vector<ggml_tensor*> ref_in;
        if (b.refs) {
            for (const HostTensor& ref : *b.refs) ref_in.push_back(gb.input(ref));
        }
        return std::vector<ggml_tensor*>{models::build_qwen_image(
            gb.nn(), cfg_, gb.input(b.x), frames, gb.input(ts), gb.input(context),
            gb.input(rope.cos), gb.input(rope.sin), ref_in)};
    });
    if (!r.ok()) return r.status();
    HostTensor out = std::move((*r)[0]);
    out.ne = b.x.ne;
    return out;
}

}  // namespace ggdiff
