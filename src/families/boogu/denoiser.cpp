#include "families/boogu/denoiser.h"

#include <algorithm>

#include "core/log.h"
#include "nn/dit.h"
#include "pipeline/parts/module_setup.h"

namespace ggdiff {

namespace {

struct RopeInputs {
    HostTensor cos, sin;
};

RopeInputs rope_inputs(const models::BooguConfig& cfg, int64_t w, int64_t h, int64_t text,
                       const std::vector<std::pair<int64_t, int64_t>>& refs) {
    const std::vector<float> ids =
        models::boogu_position_ids(models::boogu_tokens(cfg, w, h, text, refs));
    const nn::RopeTable r = nn::rope_table(ids, cfg.axes_dim, cfg.theta);
    RopeInputs in{HostTensor({1, r.pairs, 1, r.tokens}), HostTensor({1, r.pairs, 1, r.tokens})};
    in.cos.data = r.cos;
    in.sin.data = r.sin;
    return in;
}

}  // namespace

Result<std::unique_ptr<BooguDenoiser>> BooguDenoiser::create(const FamilyContext& ctx,
                                                             const ModuleDevices& where,
                                                             const models::BooguConfig& cfg) {
    auto d = std::unique_ptr<BooguDenoiser>(new BooguDenoiser());
    d->cfg_ = cfg;
    // Declares every weight: a call with one reference reaches the reference refiners too.
    auto runner = make_module(ctx, where, "Boogu DiT", [&cfg](GraphBuilder& gb) {
        const int64_t s = 2, text = 4;
        HostTensor x({s, s, cfg.latent_channels, 1});
        HostTensor ref({s, s, cfg.latent_channels, 1});
        HostTensor t({1});
        HostTensor c({cfg.cap_width, text, 1});
        const RopeInputs r = rope_inputs(cfg, s, s, text, {{s, s}});
        return std::vector<ggml_tensor*>{models::build_boogu(gb.nn(), cfg, gb.input(x), gb.input(t),
                                                             gb.input(c), {gb.input(ref)},
                                                             gb.input(r.cos), gb.input(r.sin))};
    });
    if (!runner.ok()) return runner.status();
    d->runner_ = std::move(*runner);
    return d;
}

Result<HostTensor> BooguDenoiser::run(const DenoiseBatch& b) {
    const int64_t w = b.x.dim(0), h = b.x.dim(1), ch = b.x.dim(2), n = b.x.dim(3);
    if (ch != cfg_.latent_channels) {
        return Status::Error(
            string_format("Boogu Image: a latent of %lld channels (the DiT takes %lld)",
                          (long long)ch, (long long)cfg_.latent_channels));
    }
    if (static_cast<int64_t>(b.cond.size()) != n || static_cast<int64_t>(b.timesteps.size()) != n) {
        return Status::Error("Boogu Image: batch of latents and conditionings differ in size");
    }
    std::vector<std::pair<int64_t, int64_t>> ref_sizes;
    if (b.refs) {
        if (!b.refs->empty() && cfg_.ref_refiners == 0) {
            return Status::Error(
                "Boogu Image: this DiT has no ref_image_refiner layers, so it takes no reference "
                "images (-r)");
        }
        for (const HostTensor& r : *b.refs) {
            if (r.dim(2) != ch) {
                return Status::Error("Boogu Image: a reference latent of another channel count");
            }
            ref_sizes.emplace_back(r.dim(0), r.dim(1));
        }
    }
    const int64_t item = w * h * ch;
    HostTensor out(b.x.ne);
    for (int64_t i = 0; i < n; ++i) {
        const HostTensor& context = b.cond[static_cast<size_t>(i)]->context;
        if (context.dim(0) != cfg_.cap_width) {
            return Status::Error(string_format(
                "Boogu Image: the text encoder gives features %lld wide, the DiT takes %lld",
                (long long)context.dim(0), (long long)cfg_.cap_width));
        }
        HostTensor x({w, h, ch, 1});
        std::copy(b.x.data.begin() + i * item, b.x.data.begin() + (i + 1) * item, x.data.begin());
        HostTensor ts({1});
        ts.data[0] = b.timesteps[static_cast<size_t>(i)];
        const RopeInputs rope = rope_inputs(cfg_, w, h, context.dim(1), ref_sizes);
        auto r = runner_->run([&](GraphBuilder& gb) {
            std::vector<ggml_tensor*> refs;
            if (b.refs) {
                for (const HostTensor& ref : *b.refs) refs.push_back(gb.input(ref));
            }
            return std::vector<ggml_tensor*>{
                models::build_boogu(gb.nn(), cfg_, gb.input(x), gb.input(ts), gb.input(context),
                                    refs, gb.input(rope.cos), gb.input(rope.sin))};
        });
        if (!r.ok()) return r.status();
        const HostTensor& o = (*r)[0];
        std::copy(o.data.begin(), o.data.end(), out.data.begin() + i * item);
    }
    return out;
}

}  // namespace ggdiff
