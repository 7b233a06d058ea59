#include "families/lens/denoiser.h"

#include "core/log.h"
#include "pipeline/parts/module_setup.h"

namespace ggdiff {

Result<std::unique_ptr<LensDenoiser>> LensDenoiser::create(const FamilyContext& ctx,
                                                           const ModuleDevices& where,
                                                           const models::LensConfig& cfg) {
    auto d = std::unique_ptr<LensDenoiser>(new LensDenoiser());
    d->cfg_ = cfg;
    d->wrap_ = {ctx.options.circular_x(), ctx.options.circular_y()};
    // A representative graph (2x2 latent, 2 text tokens) declares every weight.
    const int64_t s = 2, l = 2;
    const models::LensRope pe = models::lens_rope(cfg, s, s, l);
    auto runner = make_module(ctx, where, "DiT", [&](GraphBuilder& gb) {
        HostTensor x({s, s, cfg.channels, 1});
        HostTensor t({1});
        HostTensor c({cfg.text_width * cfg.text_states, l, 1});
        return std::vector<ggml_tensor*>{models::build_lens(gb.nn(), cfg, gb.input(x), gb.input(t),
                                                            gb.input(c), gb.input(pe.cos),
                                                            gb.input(pe.sin))};
    });
    if (!runner.ok()) return runner.status();
    d->runner_ = std::move(*runner);
    return d;
}

Result<HostTensor> LensDenoiser::run(const DenoiseBatch& b) {
    const int64_t w = b.x.dim(0), h = b.x.dim(1), c = b.x.dim(2), n = b.x.dim(3);
    if (static_cast<int64_t>(b.cond.size()) != n || static_cast<int64_t>(b.timesteps.size()) != n) {
        return Status::Error(string_format("Lens: batch of %lld latents with %zu conditionings",
                                           (long long)n, b.cond.size()));
    }
    if (c != cfg_.channels) {
        return Status::Error(string_format("Lens: latent of %lld channels, the DiT takes %lld",
                                           (long long)c, (long long)cfg_.channels));
    }
    if (b.concat) return Status::Error("Lens: extra input channels are not supported");
    if (b.refs && !b.refs->empty()) {
        return Status::Error("Lens: reference images (-r) are not supported");
    }
    const int64_t width = cfg_.text_width * cfg_.text_states;
    std::vector<const HostTensor*> contexts;
    for (const Conditioning* cond : b.cond) {
        if (cond->context.dim(0) != width) {
            return Status::Error(string_format("Lens: text features %lld wide, the DiT takes %lld",
                                               (long long)cond->context.dim(0), (long long)width));
        }
        contexts.push_back(&cond->context);
    }
    const int64_t l = contexts[0]->dim(1);
    for (const HostTensor* t : contexts) {
        if (t->dim(1) != l) {
            return Status::Error(
                string_format("Lens: text contexts of %lld and %lld tokens in one batch",
                              (long long)l, (long long)t->dim(1)));
        }
    }
    const HostTensor context = HostTensor::stack(contexts, width, l);
    HostTensor ts({n});
    ts.data = b.timesteps;
    if (w != pe_w_ || h != pe_h_ || l != pe_l_) {
        pe_ = models::lens_rope(cfg_, w, h, l, wrap_);
        pe_w_ = w;
        pe_h_ = h;
        pe_l_ = l;
    }
    auto r = runner_->run([&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{models::build_lens(gb.nn(), cfg_, gb.input(b.x),
                                                            gb.input(ts), gb.input(context),
                                                            gb.input(pe_.cos), gb.input(pe_.sin))};
    });
    if (!r.ok()) return r.status();
    HostTensor out = std::move((*r)[0]);
    out.ne = b.x.ne;
    return out;
}

}  // namespace ggdiff
