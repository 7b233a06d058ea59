#include "families/wan/denoiser.h"

#include <algorithm>

#include "core/log.h"
#include "pipeline/parts/module_setup.h"

namespace ggdiff {

namespace {

struct RopeInputs {
    HostTensor cos, sin;
};

RopeInputs rope_inputs(const models::WanConfig& cfg, int64_t frames, int64_t w, int64_t h) {
    const models::WanRope r = models::wan_rope(cfg, frames, (h + 1) / 2, (w + 1) / 2);
    RopeInputs in{HostTensor({1, r.pairs, 1, r.tokens}), HostTensor({1, r.pairs, 1, r.tokens})};
    in.cos.data = r.cos;
    in.sin.data = r.sin;
    return in;
}

}  // namespace

Result<std::unique_ptr<WanDenoiser>> WanDenoiser::create(const FamilyContext& ctx,
                                                         const ModuleDevices& where,
                                                         const models::WanConfig& cfg) {
    auto d = std::unique_ptr<WanDenoiser>(new WanDenoiser());
    d->cfg_ = cfg;
    auto runner = make_module(ctx, where, "DiT", [&cfg](GraphBuilder& gb) {
        const int64_t s = 2, text = 4, frames = 1;
        HostTensor x({s, s, cfg.in_channels * frames, 1});
        HostTensor t({1});
        HostTensor c({cfg.text_width, text, 1});
        const RopeInputs r = rope_inputs(cfg, frames, s, s);
        HostTensor image({cfg.image_width, 2, 1});
        HostTensor vace({s, s, cfg.vace_in_channels * frames, 1});
        HostTensor mask({text, 1});
        models::WanExtras extras;
        extras.context_mask = gb.input(mask);
        if (cfg.image_embedding) extras.image = gb.input(image);
        if (cfg.vace_layers > 0) extras.vace = gb.input(vace);
        return std::vector<ggml_tensor*>{
            models::build_wan(gb.nn(), cfg, gb.input(x), frames, gb.input(t), gb.input(c),
                              gb.input(r.cos), gb.input(r.sin), extras)};
    });
    if (!runner.ok()) return runner.status();
    d->runner_ = std::move(*runner);
    return d;
}

Result<HostTensor> WanDenoiser::run(const DenoiseBatch& b) {
    const int64_t w = b.x.dim(0), h = b.x.dim(1), n = b.x.dim(3);
    const int64_t c = cfg_.out_channels;  // the latent's channels
    if (b.x.dim(2) % c != 0) {
        return Status::Error(
            string_format("Wan: a latent of %lld channels is not whole frames of %lld",
                          (long long)b.x.dim(2), (long long)c));
    }
    const int64_t frames = b.x.dim(2) / c;
    // Image-to-video DiTs take mask and image-latent channels after the latent's.
    const int64_t extra = cfg_.in_channels - c;
    const int64_t given = b.concat ? b.concat->dim(2) : 0;
    if (given != extra * frames || (b.concat && (b.concat->dim(0) != w || b.concat->dim(1) != h))) {
        return Status::Error(string_format(
            "Wan: the DiT takes %lld input channels per frame, %lld of them conditions (an "
            "image-to-video DiT's mask and image latent), but %lld were given",
            (long long)cfg_.in_channels, (long long)extra, (long long)(given / frames)));
    }
    if (static_cast<int64_t>(b.cond.size()) != n || static_cast<int64_t>(b.timesteps.size()) != n) {
        return Status::Error("Wan: batch of latents and conditionings differ in size");
    }
    const int64_t width = b.cond[0]->context.dim(0), tokens = b.cond[0]->context.dim(1);
    if (width != cfg_.text_width) {
        return Status::Error(string_format(
            "Wan: the text encoder gives features %lld wide, the DiT's text_embedding takes %lld",
            (long long)width, (long long)cfg_.text_width));
    }
    std::vector<const std::vector<float>*> texts;
    for (int64_t i = 0; i < n; ++i) {
        const HostTensor& ci = b.cond[static_cast<size_t>(i)]->context;
        if (ci.numel() != width * tokens) {
            return Status::Error("Wan: batched prompts must have equal token counts");
        }
        texts.push_back(&ci.data);
    }
    models::WanContext compact = models::compact_wan_context(texts, width);
    HostTensor context({width, compact.rows, n});
    context.data = std::move(compact.tokens);
    HostTensor context_mask({compact.rows, n});
    context_mask.data = std::move(compact.mask);
    // Each item's latent planes, then the conditions' (the same for every item).
    const HostTensor* x = &b.x;
    HostTensor joined;
    if (given > 0) {
        const int64_t xs = b.x.numel() / n, cs = b.concat->numel();
        joined = HostTensor({w, h, b.x.dim(2) + given, n});
        for (int64_t i = 0; i < n; ++i) {
            auto out = joined.data.begin() + i * (xs + cs);
            std::copy_n(b.x.data.begin() + i * xs, xs, out);
            std::copy_n(b.concat->data.begin(), cs, out + xs);
        }
        x = &joined;
    }
    // The image tokens: CLIP features for img_emb DiTs, repeated over the batch.
    HostTensor image;
    if (cfg_.image_embedding) {
        if (!b.image_context || b.image_context->dim(0) != cfg_.image_width) {
            return Status::Error(
                string_format("Wan: this image-to-video DiT needs %lld-wide CLIP vision features",
                              (long long)cfg_.image_width));
        }
        const int64_t it = b.image_context->dim(1), is = b.image_context->numel();
        image = HostTensor({cfg_.image_width, it, n});
        for (int64_t i = 0; i < n; ++i) {
            std::copy_n(b.image_context->data.begin(), is, image.data.begin() + i * is);
        }
    }
    // VACE DiTs take their control context, laid out as the latent's frames.
    if (cfg_.vace_layers > 0) {
        const HostTensor* v = b.vace_context;
        if (!v || v->dim(0) != w || v->dim(1) != h || v->dim(2) != cfg_.vace_in_channels * frames) {
            return Status::Error(string_format(
                "Wan VACE: the DiT takes a control context of %lld channels per frame for %lld "
                "frames of %lldx%lld latent pixels%s",
                (long long)cfg_.vace_in_channels, (long long)frames, (long long)w, (long long)h,
                v ? "; the one given differs" : "; none was given"));
        }
    } else if (b.vace_context) {
        return Status::Error("Wan: a VACE control context for a DiT without vace_blocks");
    }
    // One timestep per item, or per frame with held frames (at 0).
    HostTensor ts({n});
    ts.data = b.timesteps;
    if (b.frame_keep) {
        if (static_cast<int64_t>(b.frame_keep->size()) != frames) {
            return Status::Error("Wan: held frames given for another frame count");
        }
        ts = HostTensor({frames * n});
        for (int64_t i = 0; i < n; ++i) {
            for (int64_t f = 0; f < frames; ++f) {
                ts.data[i * frames + f] = (*b.frame_keep)[f] == 0.0f ? 0.0f : b.timesteps[i];
            }
        }
    }
    const RopeInputs rope = rope_inputs(cfg_, frames, w, h);
    auto r = runner_->run([&](GraphBuilder& gb) {
        models::WanExtras extras;
        extras.context_mask = gb.input(context_mask);
        if (!image.data.empty()) extras.image = gb.input(image);
        if (cfg_.vace_layers > 0) {
            extras.vace = gb.input(*b.vace_context);
            extras.vace_strength = b.vace_strength;
        }
        return std::vector<ggml_tensor*>{
            models::build_wan(gb.nn(), cfg_, gb.input(*x), frames, gb.input(ts), gb.input(context),
                              gb.input(rope.cos), gb.input(rope.sin), extras)};
    });
    if (!r.ok()) return r.status();
    HostTensor out = std::move((*r)[0]);
    out.ne = b.x.ne;
    return out;
}

}  // namespace ggdiff
