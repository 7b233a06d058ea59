#include "families/flux2/denoiser.h"

#include "core/log.h"
#include "pipeline/parts/module_setup.h"

namespace ggdiff {

Result<std::unique_ptr<Flux2Denoiser>> Flux2Denoiser::create(
    const FamilyContext& ctx, const ModuleDevices& where, const models::Flux2Config& cfg,
    std::shared_ptr<const Flux2DualTimesteps> dual) {
    if (cfg.dual_time && !dual) {
        return Status::Error("FLUX.2 DiT: a dual-time DiT needs its sampler's timesteps");
    }
    auto d = std::unique_ptr<Flux2Denoiser>(new Flux2Denoiser());
    d->cfg_ = cfg;
    d->dual_ = std::move(dual);
    d->wrap_ = {ctx.options.circular_x(), ctx.options.circular_y()};
    // A representative graph (2x2 latent, 2 text tokens, no reference) declares every weight.
    const int64_t s = 2, l = 2;
    const models::Flux2Positions pe = models::flux2_positions(cfg, s, s, l);
    auto runner = make_module(ctx, where, "FLUX.2 DiT", [&](GraphBuilder& gb) {
        HostTensor x({s, s, cfg.in_channels, 1});
        HostTensor t({cfg.dual_time ? 2 : 1}), g({1});
        HostTensor c({cfg.context_dim, l, 1});
        return std::vector<ggml_tensor*>{models::build_flux2(
            gb.nn(), cfg, gb.input(x), gb.input(t), gb.input(c), {},
            cfg.guidance_embed ? gb.input(g) : nullptr, gb.input(pe.cos), gb.input(pe.sin))};
    });
    if (!runner.ok()) return runner.status();
    d->runner_ = std::move(*runner);
    return d;
}

Result<HostTensor> Flux2Denoiser::run(const DenoiseBatch& b) {
    const int64_t w = b.x.dim(0), h = b.x.dim(1), c = b.x.dim(2), n = b.x.dim(3);
    if (static_cast<int64_t>(b.cond.size()) != n || static_cast<int64_t>(b.timesteps.size()) != n) {
        return Status::Error(string_format("FLUX.2: batch of %lld latents with %zu conditionings",
                                           (long long)n, b.cond.size()));
    }
    if (c != cfg_.in_channels) {
        return Status::Error(string_format("FLUX.2: latent of %lld channels, the DiT takes %lld",
                                           (long long)c, (long long)cfg_.in_channels));
    }
    if (b.concat) return Status::Error("FLUX.2: extra input channels are not supported");
    std::vector<models::Flux2RefSize> ref_sizes;
    if (b.refs) {
        for (const HostTensor& r : *b.refs) {
            if (r.dim(2) != cfg_.in_channels || r.dim(3) != 1) {
                return Status::Error(string_format(
                    "FLUX.2: reference latent [%lld, %lld, %lld, %lld], the DiT takes "
                    "[w, h, %lld, 1]",
                    (long long)r.dim(0), (long long)r.dim(1), (long long)r.dim(2),
                    (long long)r.dim(3), (long long)cfg_.in_channels));
            }
            ref_sizes.emplace_back(r.dim(0), r.dim(1));
        }
    }
    std::vector<const HostTensor*> contexts;
    for (const Conditioning* cond : b.cond) {
        if (cond->context.dim(0) != cfg_.context_dim) {
            return Status::Error(
                string_format("FLUX.2: text context of width %lld, the DiT's txt_in takes %lld",
                              (long long)cond->context.dim(0), (long long)cfg_.context_dim));
        }
        contexts.push_back(&cond->context);
    }
    const int64_t l = contexts[0]->dim(1);
    for (const HostTensor* t : contexts) {
        if (t->dim(1) != l) {
            return Status::Error(
                string_format("FLUX.2: text contexts of %lld and %lld tokens in one batch",
                              (long long)l, (long long)t->dim(1)));
        }
    }
    const HostTensor context = HostTensor::stack(contexts, cfg_.context_dim, l);
    HostTensor ts({n});
    ts.data = b.timesteps;
    if (cfg_.dual_time) {
        ts = HostTensor({2});
        ts.data = {dual_->semantic, dual_->texture};
    }
    HostTensor g({n}, b.guidance);
    if (w != pe_w_ || h != pe_h_ || l != pe_l_ || ref_sizes != pe_refs_) {
        pe_ = models::flux2_positions(cfg_, w, h, l, ref_sizes, wrap_);
        pe_w_ = w;
        pe_h_ = h;
        pe_l_ = l;
        pe_refs_ = ref_sizes;
    }
    auto r = runner_->run([&](GraphBuilder& gb) {
        std::vector<ggml_tensor*> refs;
        if (b.refs) {
            for (const HostTensor& ref : *b.refs) refs.push_back(gb.input(ref));
        }
        // klein has no guidance_in: an input the graph never reads would get no buffer.
        ggml_tensor* gt = cfg_.guidance_embed ? gb.input(g) : nullptr;
        return std::vector<ggml_tensor*>{
            models::build_flux2(gb.nn(), cfg_, gb.input(b.x), gb.input(ts), gb.input(context), refs,
                                gt, gb.input(pe_.cos), gb.input(pe_.sin), b.skip_layers)};
    });
    if (!r.ok()) return r.status();
    return std::move((*r)[0]);
}

}  // namespace ggdiff
