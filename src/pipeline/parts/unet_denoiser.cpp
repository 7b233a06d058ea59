#include "pipeline/parts/unet_denoiser.h"

#include <algorithm>

#include "core/log.h"
#include "pipeline/parts/module_setup.h"
#include "tokenizers/token_windows.h"

namespace ggdiff {
namespace {

// Stacks same-shaped tensors on a new outer axis: n x [a, b] -> [a, b, n].
HostTensor stack(const std::vector<const HostTensor*>& items) {
    const HostTensor& first = *items.front();
    HostTensor out({first.dim(0), first.dim(1), static_cast<int64_t>(items.size())});
    auto dst = out.data.begin();
    for (const HostTensor* t : items) dst = std::copy(t->data.begin(), t->data.end(), dst);
    return out;
}

}  // namespace

Result<std::unique_ptr<UNetDenoiser>> UNetDenoiser::create(const FamilyContext& ctx,
                                                           const ModuleDevices& where,
                                                           const models::UNetConfig& cfg) {
    auto d = std::unique_ptr<UNetDenoiser>(new UNetDenoiser());
    d->cfg_ = cfg;
    auto runner = make_module(ctx, where, "UNet", [&cfg](GraphBuilder& gb) {
        const int64_t s = 1 << std::max<int>(0, static_cast<int>(cfg.channel_mult.size()) - 1);
        HostTensor x({s, s, cfg.in_channels, 1});
        HostTensor t({1});
        HostTensor c({cfg.context_dim, kClipWindowLength, 1});
        ggml_tensor* y = nullptr;
        if (cfg.adm_in_channels > 0) y = gb.input(HostTensor({cfg.adm_in_channels, 1}));
        return std::vector<ggml_tensor*>{models::build_unet(
            gb.nn(), cfg, gb.input(x), gb.input(t), gb.input(c), "model.diffusion_model.", y)};
    });
    if (!runner.ok()) return runner.status();
    d->runner_ = std::move(*runner);
    return d;
}

Result<HostTensor> UNetDenoiser::run(const DenoiseBatch& b) {
    const int64_t w = b.x.dim(0), h = b.x.dim(1), c = b.x.dim(2), n = b.x.dim(3);
    if (static_cast<int64_t>(b.cond.size()) != n || static_cast<int64_t>(b.timesteps.size()) != n) {
        return Status::Error(string_format("UNet: batch of %lld latents with %zu conditionings",
                                           (long long)n, b.cond.size()));
    }
    // Extra input channels (inpainting: mask + masked-image latent) go after the latent.
    HostTensor input;
    const HostTensor* x = &b.x;
    if (b.concat) {
        const int64_t k = b.concat->dim(2), plane = w * h;
        input = HostTensor({w, h, c + k, n});
        for (int64_t i = 0; i < n; ++i) {
            std::copy_n(b.x.data.begin() + i * c * plane, c * plane,
                        input.data.begin() + i * (c + k) * plane);
            std::copy_n(b.concat->data.begin(), k * plane,
                        input.data.begin() + (i * (c + k) + c) * plane);
        }
        x = &input;
    }
    std::vector<const HostTensor*> contexts, pooled;
    for (const Conditioning* cond : b.cond) {
        contexts.push_back(&cond->context);
        pooled.push_back(&cond->pooled);
    }
    const HostTensor context = n == 1 ? *contexts[0] : stack(contexts);
    HostTensor y;
    if (cfg_.adm_in_channels > 0) {
        for (const HostTensor* p : pooled) {
            if (p->numel() != cfg_.adm_in_channels) {
                return Status::Error(
                    string_format("UNet: label input of %lld values, the weights take %d",
                                  (long long)p->numel(), cfg_.adm_in_channels));
            }
        }
        y = stack(pooled);
        y.ne = {cfg_.adm_in_channels, n};
    }
    HostTensor ts({n});
    ts.data = b.timesteps;
    // The ControlNet sees the noisy latent without the inpainting channels.
    std::vector<HostTensor> residuals;
    if (b.control && control_) {
        auto r =
            control_->run(b.x, ts, context, cfg_.adm_in_channels > 0 ? &y : nullptr, *b.control);
        if (!r.ok()) return r.status();
        residuals = std::move(*r);
    }
    auto r = runner_->run([&](GraphBuilder& gb) {
        ggml_tensor* yt = cfg_.adm_in_channels > 0 ? gb.input(y) : nullptr;
        std::vector<ggml_tensor*> control;
        for (const HostTensor& t : residuals) control.push_back(gb.input(t));
        return std::vector<ggml_tensor*>{models::build_unet(gb.nn(), cfg_, gb.input(*x),
                                                            gb.input(ts), gb.input(context),
                                                            "model.diffusion_model.", yt, control)};
    });
    if (!r.ok()) return r.status();
    return std::move((*r)[0]);
}

void UNetDenoiser::end_phase() {
    runner_->end_phase();
    if (control_) control_->end_phase();
}

}  // namespace ggdiff
