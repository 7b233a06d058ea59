#include "families/z_image/denoiser.h"

#include <algorithm>

#include "core/log.h"
#include "pipeline/parts/module_setup.h"

namespace ggdiff {

namespace {

struct RopeInputs {
    HostTensor cos, sin;
};

RopeInputs rope_inputs(const models::ZImageConfig& cfg, int64_t w, int64_t h, int64_t text,
                       nn::RopeWrap wrap = {}) {
    const models::ZImageRope r = z_image_rope(cfg, z_image_tokens(cfg, w, h, text), wrap);
    RopeInputs in{HostTensor({1, r.pairs, 1, r.tokens}), HostTensor({1, r.pairs, 1, r.tokens})};
    in.cos.data = r.cos;
    in.sin.data = r.sin;
    return in;
}

}  // namespace

Result<std::unique_ptr<ZImageDenoiser>> ZImageDenoiser::create(const FamilyContext& ctx,
                                                               const ModuleDevices& where,
                                                               const models::ZImageConfig& cfg) {
    auto d = std::unique_ptr<ZImageDenoiser>(new ZImageDenoiser());
    d->cfg_ = cfg;
    d->wrap_ = {ctx.options.circular_x(), ctx.options.circular_y()};
    auto runner = make_module(ctx, where, "DiT", [&cfg](GraphBuilder& gb) {
        const int64_t s = 2, text = 4;
        HostTensor x({s, s, cfg.latent_channels, 1});
        HostTensor t({1});
        HostTensor c({cfg.cap_width, text, 1});
        const RopeInputs r = rope_inputs(cfg, s, s, text);
        return std::vector<ggml_tensor*>{models::build_z_image(
            gb.nn(), cfg, gb.input(x), gb.input(t), gb.input(c), gb.input(r.cos), gb.input(r.sin))};
    });
    if (!runner.ok()) return runner.status();
    d->runner_ = std::move(*runner);
    return d;
}

Result<HostTensor> ZImageDenoiser::run(const DenoiseBatch& b) {
    const int64_t w = b.x.dim(0), h = b.x.dim(1), n = b.x.dim(3);
    if (b.x.dim(2) != cfg_.latent_channels) {
        return Status::Error(
            string_format("Z-Image: a latent of %lld channels (the DiT takes %lld)",
                          (long long)b.x.dim(2), (long long)cfg_.latent_channels));
    }
    if (static_cast<int64_t>(b.cond.size()) != n || static_cast<int64_t>(b.timesteps.size()) != n) {
        return Status::Error("Z-Image: batch of latents and conditionings differ in size");
    }
    const int64_t width = b.cond[0]->context.dim(0), tokens = b.cond[0]->context.dim(1);
    if (width != cfg_.cap_width) {
        return Status::Error(
            string_format("Z-Image: the text encoder gives features %lld wide, the DiT takes %lld",
                          (long long)width, (long long)cfg_.cap_width));
    }
    HostTensor context({width, tokens, n});
    for (int64_t i = 0; i < n; ++i) {
        const HostTensor& c = b.cond[static_cast<size_t>(i)]->context;
        if (c.numel() != width * tokens) {
            return Status::Error("Z-Image: batched prompts must have equal token counts");
        }
        std::copy(c.data.begin(), c.data.end(), context.data.begin() + i * width * tokens);
    }
    // The model's time runs from noise (0) to clean (1000).
    HostTensor ts({n});
    for (int64_t i = 0; i < n; ++i) ts.data[i] = 1000.0f - b.timesteps[static_cast<size_t>(i)];
    const RopeInputs rope = rope_inputs(cfg_, w, h, tokens, wrap_);
    auto r = runner_->run([&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{
            models::build_z_image(gb.nn(), cfg_, gb.input(b.x), gb.input(ts), gb.input(context),
                                  gb.input(rope.cos), gb.input(rope.sin))};
    });
    if (!r.ok()) return r.status();
    HostTensor out = std::move((*r)[0]);
    out.ne = b.x.ne;
    return out;
}

}  // namespace ggdiff
