#include "families/sd3/denoiser.h"

#include <algorithm>

#include "core/log.h"
#include "pipeline/parts/module_setup.h"

namespace ggdiff {
Result<std::unique_ptr<Sd3Denoiser>> Sd3Denoiser::create(const FamilyContext& ctx,
                                                         const ModuleDevices& where,
                                                         const models::Sd3Config& cfg) {
    auto d = std::unique_ptr<Sd3Denoiser>(new Sd3Denoiser());
    d->cfg_ = cfg;
    // A representative graph (2x2 latent, 2 text tokens) declares every weight.
    auto runner = make_module(ctx, where, "MMDiT", [&cfg](GraphBuilder& gb) {
        const int64_t s = 2, l = 2;
        HostTensor x({s, s, cfg.in_channels, 1});
        HostTensor t({1});
        HostTensor c({cfg.context_dim, l, 1});
        HostTensor y({std::max<int64_t>(1, cfg.pooled_dim), 1});
        return std::vector<ggml_tensor*>{
            models::build_sd3(gb.nn(), cfg, gb.input(x), gb.input(t), gb.input(c),
                              cfg.pooled_dim > 0 ? gb.input(y) : nullptr)};
    });
    if (!runner.ok()) return runner.status();
    d->runner_ = std::move(*runner);
    return d;
}

Result<HostTensor> Sd3Denoiser::run(const DenoiseBatch& b) {
    const int64_t w = b.x.dim(0), h = b.x.dim(1), c = b.x.dim(2), n = b.x.dim(3);
    if (static_cast<int64_t>(b.cond.size()) != n || static_cast<int64_t>(b.timesteps.size()) != n) {
        return Status::Error(string_format("SD3: batch of %lld latents with %zu conditionings",
                                           (long long)n, b.cond.size()));
    }
    if (c != cfg_.in_channels) {
        return Status::Error(string_format("SD3: latent of %lld channels, the MMDiT takes %lld",
                                           (long long)c, (long long)cfg_.in_channels));
    }
    if (b.concat || (b.refs && !b.refs->empty()) || b.control) {
        return Status::Error(
            "SD3: extra input channels, reference images and ControlNet are not supported");
    }
    GGDIFF_TRY(models::check_sd3_size(cfg_, w, h));
    std::vector<const HostTensor*> contexts, pooled;
    for (const Conditioning* cond : b.cond) {
        if (cond->context.dim(0) != cfg_.context_dim) {
            return Status::Error(string_format(
                "SD3: text context of width %lld, the MMDiT's context_embedder takes %lld",
                (long long)cond->context.dim(0), (long long)cfg_.context_dim));
        }
        if (cond->context.dim(1) != b.cond[0]->context.dim(1)) {
            return Status::Error("SD3: batched prompts must have equal token counts");
        }
        if (cfg_.pooled_dim > 0 && cond->pooled.numel() != cfg_.pooled_dim) {
            return Status::Error(string_format(
                "SD3: pooled text vector of %lld values, the MMDiT's y_embedder takes %lld",
                (long long)cond->pooled.numel(), (long long)cfg_.pooled_dim));
        }
        contexts.push_back(&cond->context);
        pooled.push_back(&cond->pooled);
    }
    const int64_t l = contexts[0]->dim(1);
    const HostTensor context = HostTensor::stack(contexts, cfg_.context_dim, l);
    HostTensor y;
    if (cfg_.pooled_dim > 0) {
        y = HostTensor::stack(pooled, cfg_.pooled_dim, 1);
        y.ne = {cfg_.pooled_dim, n};
    }
    HostTensor ts({n});
    ts.data = b.timesteps;
    static const std::vector<int> kNone;
    const std::vector<int>& skip = b.skip_layers ? *b.skip_layers : kNone;
    auto r = runner_->run([&](GraphBuilder& gb) {
        ggml_tensor* yt = cfg_.pooled_dim > 0 ? gb.input(y) : nullptr;
        return std::vector<ggml_tensor*>{models::build_sd3(
            gb.nn(), cfg_, gb.input(b.x), gb.input(ts), gb.input(context), yt, skip)};
    });
    if (!r.ok()) return r.status();
    HostTensor out = std::move((*r)[0]);
    out.ne = b.x.ne;
    return out;
}

}  // namespace ggdiff
