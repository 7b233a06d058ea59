#include "families/anima/denoiser.h"

#include <algorithm>

#include "core/log.h"
#include "pipeline/parts/module_setup.h"

namespace ggdiff {

Result<std::unique_ptr<AnimaDenoiser>> AnimaDenoiser::create(const FamilyContext& ctx,
                                                             const ModuleDevices& where,
                                                             const models::AnimaConfig& cfg) {
    auto d = std::unique_ptr<AnimaDenoiser>(new AnimaDenoiser());
    d->cfg_ = cfg;
    auto runner = make_module(ctx, where, "DiT", [&cfg](GraphBuilder& gb) {
        const int64_t s = 2;
        HostTensor x({s, s, cfg.latent_channels, 1});
        HostTensor t({1});
        HostTensor c({cfg.text_width, 4, 1});
        const models::AnimaRope r = models::anima_image_rope(cfg, s, s);
        return std::vector<ggml_tensor*>{models::build_anima(
            gb.nn(), cfg, gb.input(x), gb.input(t), gb.input(c), gb.input(r.cos), gb.input(r.sin))};
    });
    if (!runner.ok()) return runner.status();
    d->runner_ = std::move(*runner);
    return d;
}

Result<HostTensor> AnimaDenoiser::run(const DenoiseBatch& b) {
    const int64_t w = b.x.dim(0), h = b.x.dim(1), n = b.x.dim(3);
    if (b.x.dim(2) != cfg_.latent_channels) {
        return Status::Error(string_format("Anima: a latent of %lld channels (the DiT takes %lld)",
                                           (long long)b.x.dim(2), (long long)cfg_.latent_channels));
    }
    if (static_cast<int64_t>(b.cond.size()) != n || static_cast<int64_t>(b.timesteps.size()) != n) {
        return Status::Error("Anima: batch of latents and conditionings differ in size");
    }
    const int64_t width = b.cond[0]->context.dim(0), tokens = b.cond[0]->context.dim(1);
    if (width != cfg_.text_width) {
        return Status::Error(
            string_format("Anima: a context %lld wide, the DiT's cross attention reads %lld",
                          (long long)width, (long long)cfg_.text_width));
    }
    HostTensor context({width, tokens, n});
    for (int64_t i = 0; i < n; ++i) {
        const HostTensor& c = b.cond[static_cast<size_t>(i)]->context;
        if (c.numel() != width * tokens) {
            return Status::Error("Anima: batched prompts must have equal token counts");
        }
        std::copy(c.data.begin(), c.data.end(), context.data.begin() + i * width * tokens);
    }
    HostTensor sigmas({n});
    for (int64_t i = 0; i < n; ++i) sigmas.data[i] = b.timesteps[static_cast<size_t>(i)] / 1000.0f;
    const models::AnimaRope rope = models::anima_image_rope(cfg_, w, h);
    auto r = runner_->run([&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{
            models::build_anima(gb.nn(), cfg_, gb.input(b.x), gb.input(sigmas), gb.input(context),
                                gb.input(rope.cos), gb.input(rope.sin))};
    });
    if (!r.ok()) return r.status();
    HostTensor out = std::move((*r)[0]);
    out.ne = b.x.ne;
    return out;
}

}  // namespace ggdiff
