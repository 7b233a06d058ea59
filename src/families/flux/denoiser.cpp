#include "families/flux/denoiser.h"

#include <algorithm>

#include "core/log.h"
#include "pipeline/parts/module_setup.h"

namespace ggdiff {
Result<std::unique_ptr<FluxDenoiser>> FluxDenoiser::create(
    const FamilyContext& ctx, const ModuleDevices& where, const models::FluxConfig& cfg,
    const std::optional<models::PulidConfig>& pulid) {
    auto d = std::unique_ptr<FluxDenoiser>(new FluxDenoiser());
    d->cfg_ = cfg;
    d->pulid_ = pulid;
    d->wrap_ = {ctx.options.circular_x(), ctx.options.circular_y()};
    // A representative graph (2x2 latent, 2 text tokens) declares every weight.
    const int64_t s = 2, l = 2;
    const models::FluxPositions pe = models::flux_positions(cfg, s, s, l);
    auto runner = make_module(ctx, where, "FLUX DiT", [&](GraphBuilder& gb) {
        HostTensor x({s, s, cfg.latent_channels(), 1});
        HostTensor t({1}), g({1});
        HostTensor c({cfg.context_dim, l, 1});
        HostTensor y({std::max<int64_t>(1, cfg.vec_in_dim), 1});
        HostTensor idt({d->pulid_ ? d->pulid_->id_dim : 1, 2, 1});
        models::FluxIdentity id;
        if (d->pulid_) id = {&*d->pulid_, gb.input(idt), 1.0f};
        return std::vector<ggml_tensor*>{models::build_flux(
            gb.nn(), cfg, gb.input(x), gb.input(t), gb.input(c),
            cfg.vec_in_dim > 0 ? gb.input(y) : nullptr, gb.input(g), gb.input(pe.cos),
            gb.input(pe.sin), nullptr, {}, d->pulid_ ? &id : nullptr)};
    });
    if (!runner.ok()) return runner.status();
    d->runner_ = std::move(*runner);
    return d;
}

Result<HostTensor> FluxDenoiser::run(const DenoiseBatch& b) {
    const int64_t w = b.x.dim(0), h = b.x.dim(1), c = b.x.dim(2), n = b.x.dim(3);
    if (static_cast<int64_t>(b.cond.size()) != n || static_cast<int64_t>(b.timesteps.size()) != n) {
        return Status::Error(string_format("FLUX: batch of %lld latents with %zu conditionings",
                                           (long long)n, b.cond.size()));
    }
    if (c != cfg_.latent_channels()) {
        return Status::Error(string_format("FLUX: latent of %lld channels, the DiT takes %lld",
                                           (long long)c, (long long)cfg_.latent_channels()));
    }
    if (b.concat) return Status::Error("FLUX.1: extra input channels are not supported");
    std::vector<models::FluxRefSize> ref_sizes;
    if (b.refs) {
        for (const HostTensor& r : *b.refs) {
            if (r.dim(2) != c || r.dim(3) != 1) {
                return Status::Error(
                    string_format("FLUX: reference latent [%lld, %lld, %lld, %lld], the DiT takes "
                                  "[w, h, %lld, 1]",
                                  (long long)r.dim(0), (long long)r.dim(1), (long long)r.dim(2),
                                  (long long)r.dim(3), (long long)c));
            }
            ref_sizes.emplace_back(r.dim(0), r.dim(1));
        }
    }
    std::vector<const HostTensor*> contexts, pooled;
    for (const Conditioning* cond : b.cond) {
        if (cond->context.dim(0) != cfg_.context_dim) {
            return Status::Error(
                string_format("FLUX: text context of width %lld, the DiT's txt_in takes %lld",
                              (long long)cond->context.dim(0), (long long)cfg_.context_dim));
        }
        if (cfg_.vec_in_dim > 0 && cond->pooled.numel() != cfg_.vec_in_dim) {
            return Status::Error(string_format(
                "FLUX: pooled text vector of %lld values, the DiT's vector_in takes %lld",
                (long long)cond->pooled.numel(), (long long)cfg_.vec_in_dim));
        }
        contexts.push_back(&cond->context);
        pooled.push_back(&cond->pooled);
    }
    const int64_t l = contexts[0]->dim(1);
    const HostTensor context = HostTensor::stack(contexts, cfg_.context_dim, l);
    HostTensor y;
    if (cfg_.vec_in_dim > 0) {
        y = HostTensor::stack(pooled, cfg_.vec_in_dim, 1);
        y.ne = {cfg_.vec_in_dim, n};
    }
    HostTensor ts({n});
    ts.data = b.timesteps;
    HostTensor g({n}, b.guidance);
    if (w != pe_w_ || h != pe_h_ || l != pe_l_ || ref_sizes != pe_refs_ ||
        b.increase_ref_index != pe_increase_) {
        pe_ = models::flux_positions(cfg_, w, h, l, ref_sizes, b.increase_ref_index, wrap_);
        pe_w_ = w;
        pe_h_ = h;
        pe_l_ = l;
        pe_refs_ = ref_sizes;
        pe_increase_ = b.increase_ref_index;
    }
    // PuLID: weight 0 adds nothing (the reference adds zeros); a skip-layer pass runs without it
    // (as the reference's, whose module order would not survive skipped blocks).
    bool identity = pulid_ && b.identity && b.identity_weight != 0.0f;
    if (identity && b.skip_layers && !b.skip_layers->empty()) {
        if (!warned_pulid_slg_) {
            GGDIFF_LOG_WARN(
                "PuLID and skip-layer guidance: the skip-layer pass runs without "
                "the identity (as in stable-diffusion.cpp)");
            warned_pulid_slg_ = true;
        }
        identity = false;
    }
    auto r = runner_->run([&](GraphBuilder& gb) {
        ggml_tensor* yt = cfg_.vec_in_dim > 0 ? gb.input(y) : nullptr;
        // schnell has no guidance_in: an input the graph never reads would get no buffer.
        ggml_tensor* gt = cfg_.guidance_embed ? gb.input(g) : nullptr;
        std::vector<ggml_tensor*> refs;
        if (b.refs) {
            for (const HostTensor& ref : *b.refs) refs.push_back(gb.input(ref));
        }
        models::FluxIdentity id;
        if (identity) id = {&*pulid_, gb.input(*b.identity), b.identity_weight};
        return std::vector<ggml_tensor*>{models::build_flux(
            gb.nn(), cfg_, gb.input(b.x), gb.input(ts), gb.input(context), yt, gt,
            gb.input(pe_.cos), gb.input(pe_.sin), b.skip_layers, refs, identity ? &id : nullptr)};
    });
    if (!r.ok()) return r.status();
    return std::move((*r)[0]);
}

}  // namespace ggdiff
