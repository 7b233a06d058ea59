#include "families/chroma/denoiser.h"

#include <algorithm>

#include "core/log.h"
#include "pipeline/parts/module_setup.h"

namespace ggdiff {

Result<std::unique_ptr<ChromaDenoiser>> ChromaDenoiser::create(const FamilyContext& ctx,
                                                               const ModuleDevices& where,
                                                               const models::ChromaConfig& cfg) {
    auto d = std::unique_ptr<ChromaDenoiser>(new ChromaDenoiser());
    d->cfg_ = cfg;
    d->wrap_ = {ctx.options.circular_x(), ctx.options.circular_y()};
    d->mod_index_ = HostTensor({models::kChromaModRows});
    d->mod_index_.data = models::chroma_mod_index();
    if (cfg.radiance) {
        const int64_t f = cfg.rad.max_freqs, p = cfg.rad.patch;
        d->dct_ = HostTensor({f * f, p * p});
        d->dct_.data = models::radiance_dct(cfg.rad.patch, static_cast<int>(f));
    }
    // A representative graph (one patch, 2 text tokens) declares every weight.
    const int64_t s = cfg.flux.patch, l = 2;
    const models::FluxPositions pe = models::flux_positions(cfg.flux, s, s, l);
    ChromaDenoiser* self = d.get();
    auto runner = make_module(ctx, where, "Chroma DiT", [&](GraphBuilder& gb) {
        HostTensor x({s, s, cfg.flux.latent_channels(), 1});
        HostTensor t({1});
        HostTensor c({cfg.flux.context_dim, l, 1});
        return std::vector<ggml_tensor*>{
            models::build_chroma(gb.nn(), cfg, gb.input(x), gb.input(t), gb.input(self->mod_index_),
                                 gb.input(c), nullptr, gb.input(pe.cos), gb.input(pe.sin), nullptr,
                                 cfg.radiance ? gb.input(self->dct_) : nullptr)};
    });
    if (!runner.ok()) return runner.status();
    d->runner_ = std::move(*runner);
    return d;
}

Result<HostTensor> ChromaDenoiser::run(const DenoiseBatch& b) {
    const models::FluxConfig& f = cfg_.flux;
    const int64_t w = b.x.dim(0), h = b.x.dim(1), c = b.x.dim(2), n = b.x.dim(3);
    if (static_cast<int64_t>(b.cond.size()) != n || static_cast<int64_t>(b.timesteps.size()) != n) {
        return Status::Error(string_format("Chroma: batch of %lld latents with %zu conditionings",
                                           (long long)n, b.cond.size()));
    }
    if (c != f.latent_channels()) {
        return Status::Error(string_format("Chroma: latent of %lld channels, the DiT takes %lld",
                                           (long long)c, (long long)f.latent_channels()));
    }
    if (b.concat) return Status::Error("Chroma: extra input channels are not supported");
    // Chroma takes no reference images (the recipe's ref_image_multiple is 0).
    if (b.refs && !b.refs->empty()) {
        return Status::Error(std::string(cfg_.radiance ? "Chroma1-Radiance" : "Chroma") +
                             " takes no reference images");
    }
    std::vector<const HostTensor*> contexts;
    const bool masked = !b.cond[0]->key_mask.data.empty();
    for (const Conditioning* cond : b.cond) {
        if (cond->context.dim(0) != f.context_dim) {
            return Status::Error(
                string_format("Chroma: text context of width %lld, the DiT's txt_in takes %lld",
                              (long long)cond->context.dim(0), (long long)f.context_dim));
        }
        if (cond->key_mask.data.empty() != !masked ||
            (masked && cond->key_mask.numel() != cond->context.dim(1))) {
            return Status::Error("Chroma: the batch's text masks do not match its contexts");
        }
        contexts.push_back(&cond->context);
    }
    const int64_t l = contexts[0]->dim(1);
    const HostTensor context = HostTensor::stack(contexts, f.context_dim, l);
    // The key mask of every item: its text mask, then 0 for each image token.
    HostTensor mask;
    if (masked) {
        const int64_t total = l + ((w + f.patch - 1) / f.patch) * ((h + f.patch - 1) / f.patch);
        mask = HostTensor({total, n});
        for (int64_t i = 0; i < n; ++i) {
            const HostTensor& m = b.cond[static_cast<size_t>(i)]->key_mask;
            std::copy(m.data.begin(), m.data.end(), mask.data.begin() + i * total);
        }
    }
    // One approximator pass when the batch shares its timestep (the usual case).
    const bool shared = std::all_of(b.timesteps.begin(), b.timesteps.end(),
                                    [&](float t) { return t == b.timesteps[0]; });
    HostTensor ts({shared ? 1 : n});
    ts.data.assign(b.timesteps.begin(), b.timesteps.begin() + (shared ? 1 : n));
    if (w != pe_w_ || h != pe_h_ || l != pe_l_) {
        // The patch grid of the padded input (Radiance's 16-pixel patches).
        const int64_t pw = (w + f.patch - 1) / f.patch * f.patch;
        const int64_t ph = (h + f.patch - 1) / f.patch * f.patch;
        pe_ = models::flux_positions(f, pw, ph, l, {}, false, wrap_);
        pe_w_ = w;
        pe_h_ = h;
        pe_l_ = l;
    }
    auto r = runner_->run([&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{models::build_chroma(
            gb.nn(), cfg_, gb.input(b.x), gb.input(ts), gb.input(mod_index_), gb.input(context),
            masked ? gb.input(mask) : nullptr, gb.input(pe_.cos), gb.input(pe_.sin), b.skip_layers,
            cfg_.radiance ? gb.input(dct_) : nullptr)};
    });
    if (!r.ok()) return r.status();
    return std::move((*r)[0]);
}

}  // namespace ggdiff
