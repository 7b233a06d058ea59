#include "families/ltx/denoiser.h"

#include <algorithm>
#include <tuple>

#include "core/log.h"
#include "families/ltx/latents.h"
#include "pipeline/parts/module_setup.h"

namespace ggdiff {

std::vector<ggml_tensor*> LtxDenoiser::build(GraphBuilder& gb, const models::LtxDitConfig& cfg,
                                             const HostTensor& video, const HostTensor* audio,
                                             float sigma, const HostTensor& context, float fps,
                                             const std::vector<float>* frame_mask,
                                             const models::LtxKeyframes& keyframes,
                                             const LtxConnectedText* connected) {
    const int64_t w = video.dim(0), h = video.dim(1), f = video.dim(2);
    const int64_t steps = audio ? audio->dim(1) : 0;
    const int64_t l = context.dim(1);
    models::LtxDitInputs in;
    in.video = gb.input(video);
    in.sigma = gb.input(HostTensor({1}, sigma));
    if (frame_mask) {
        HostTensor ts({w * h * f});
        for (int64_t k = 0; k < f; ++k) {
            std::fill_n(ts.data.begin() + k * w * h, w * h,
                        (*frame_mask)[static_cast<size_t>(k)] * sigma);
        }
        // Moved in: the builder keeps its buffer until the run (no copy).
        in.video_sigma = gb.input(std::move(ts));
    }
    if (connected) {
        in.video_context = gb.input(connected->video);
        if (audio) in.audio_context = gb.input(connected->audio);
    } else {
        in.context = gb.input(context);
    }
    models::LtxRope vr = models::ltx_video_rope(cfg, w, h, f, fps, keyframes);
    in.video_cos = gb.input(std::move(vr.cos));
    in.video_sin = gb.input(std::move(vr.sin));
    if (audio) {
        in.audio = gb.input(*audio);
        models::LtxRope ar = models::ltx_audio_rope(cfg, steps, false);
        models::LtxRope at = models::ltx_audio_rope(cfg, steps, true);
        models::LtxRope vt = models::ltx_video_time_rope(cfg, w, h, f, fps, keyframes);
        in.audio_cos = gb.input(std::move(ar.cos));
        in.audio_sin = gb.input(std::move(ar.sin));
        in.atime_cos = gb.input(std::move(at.cos));
        in.atime_sin = gb.input(std::move(at.sin));
        in.vtime_cos = gb.input(std::move(vt.cos));
        in.vtime_sin = gb.input(std::move(vt.sin));
        if (const int64_t n = models::ltx_connector_length(cfg.audio_connector, l);
            n > 0 && !connected) {
            models::LtxRope ac = models::ltx_connector_rope(cfg.audio_connector, n);
            in.aconn_cos = gb.input(std::move(ac.cos));
            in.aconn_sin = gb.input(std::move(ac.sin));
        }
    }
    if (const int64_t n = models::ltx_connector_length(cfg.video_connector, l);
        n > 0 && !connected) {
        models::LtxRope vc = models::ltx_connector_rope(cfg.video_connector, n);
        in.vconn_cos = gb.input(std::move(vc.cos));
        in.vconn_sin = gb.input(std::move(vc.sin));
    }
    const models::LtxDitOutputs o = models::build_ltx_dit(gb.nn(), cfg, in);
    std::vector<ggml_tensor*> out = {o.video};
    if (o.audio) out.push_back(o.audio);
    if (o.video_context) out.push_back(o.video_context);
    if (o.audio_context) out.push_back(o.audio_context);
    return out;
}

namespace {

// A small item that declares every weight: video and audio, a short text.
std::vector<ggml_tensor*> declare(GraphBuilder& gb, const models::LtxDitConfig& cfg) {
    const HostTensor video({2, 2, 1, cfg.in_channels});
    const HostTensor audio({models::kLtxAudioBins, 2, models::kLtxAudioChannels, 1});
    const HostTensor context({cfg.context + cfg.audio_context, 4, 1});
    return LtxDenoiser::build(gb, cfg, video, &audio, 1.0f, context, 24.0f);
}

}  // namespace

Result<std::unique_ptr<LtxDenoiser>> LtxDenoiser::create(const FamilyContext& ctx,
                                                         const ModuleDevices& where,
                                                         const models::LtxDitConfig& cfg) {
    auto d = std::unique_ptr<LtxDenoiser>(new LtxDenoiser());
    d->cfg_ = cfg;
    auto runner =
        make_module(ctx, where, "DiT", [&cfg](GraphBuilder& gb) { return declare(gb, cfg); });
    if (!runner.ok()) return runner.status();
    d->runner_ = std::move(*runner);
    return d;
}

Status LtxDenoiser::prepare() {
    return runner_->prepare([this](GraphBuilder& gb) { return declare(gb, cfg_); });
}

const LtxConnectedText* LtxDenoiser::find_connected(const HostTensor& text, bool audio) const {
    for (const LtxConnectedText& c : connected_) {
        if (c.audio.data.empty() == audio) continue;
        if (c.text.ne == text.ne && c.text.data == text.data) return &c;
    }
    return nullptr;
}

Result<HostTensor> LtxDenoiser::run(const DenoiseBatch& b) {
    const int64_t w = b.x.dim(0), h = b.x.dim(1), planes = b.x.dim(2), n = b.x.dim(3);
    const int64_t t = layout_.frames, steps = layout_.audio_steps;
    const int64_t c = cfg_.in_channels;
    const int64_t packed = steps > 0 ? models::ltx_packed_channels(w, h, t, c, steps) : c;
    if (planes != packed * t) {
        return Status::Error(string_format(
            "LTX: a latent of %lld planes is not %lld latent frames of %lld video channels "
            "plus %lld audio steps (%lld planes)",
            (long long)planes, (long long)t, (long long)c, (long long)steps,
            (long long)(packed * t)));
    }
    if (b.frame_keep && static_cast<int64_t>(b.frame_keep->size()) != t) {
        return Status::Error(string_format("LTX: %zu held-frame values for %lld latent frames",
                                           b.frame_keep->size(), (long long)t));
    }
    if (cfg_.out_channels != c) {
        return Status::Error("LTX: a DiT whose output channels differ from its input's");
    }
    if (static_cast<int64_t>(b.cond.size()) != n || static_cast<int64_t>(b.timesteps.size()) != n) {
        return Status::Error("LTX: batch of latents and conditionings differ in size");
    }
    const int64_t width = cfg_.context + cfg_.audio_context;
    HostTensor out({w, h, planes, n});
    const int64_t item = w * h * planes;
    for (int64_t i = 0; i < n; ++i) {
        const HostTensor& context = b.cond[static_cast<size_t>(i)]->context;
        if (context.dim(0) != width) {
            return Status::Error(string_format(
                "LTX: the text context is %lld wide; the DiT takes %lld (video %lld + audio %lld)",
                (long long)context.dim(0), (long long)width, (long long)cfg_.context,
                (long long)cfg_.audio_context));
        }
        HostTensor x({w, h, planes, 1});
        std::copy_n(b.x.data.begin() + i * item, item, x.data.begin());
        HostTensor video, audio;
        if (steps > 0) {
            std::tie(video, audio) = models::ltx_unpack(x, c, t, steps);
        } else {
            video = std::move(x);
        }
        video.ne = {w, h, t, c};  // the DiT's [W, H, F, C]: the same memory
        const float sigma = b.timesteps[static_cast<size_t>(i)];
        // A compute probe measures the graph with the connectors: the first step's.
        const bool probe = ComputeProbe::active() != nullptr;
        const LtxConnectedText* connected = probe ? nullptr : find_connected(context, steps > 0);
        auto res = runner_->run([&](GraphBuilder& gb) {
            return build(gb, cfg_, video, steps > 0 ? &audio : nullptr, sigma, context, layout_.fps,
                         b.frame_keep, layout_.keyframes, connected);
        });
        if (!res.ok()) return res.status();
        // The connectors ran: what they made serves the text's later evaluations (not a
        // compute probe's zeros).
        const size_t velocities = steps > 0 ? 2 : 1;
        if (!connected && !probe && res->size() > velocities) {
            LtxConnectedText made;
            made.text = context;
            made.video = std::move((*res)[velocities]);
            if (steps > 0) made.audio = std::move((*res)[velocities + 1]);
            connected_.push_back(std::move(made));
        }
        HostTensor v = std::move((*res)[0]);
        v.ne = {w, h, cfg_.out_channels * t, 1};
        HostTensor packed_out = steps > 0 ? models::ltx_pack(v, t, (*res)[1]) : std::move(v);
        std::copy(packed_out.data.begin(), packed_out.data.end(), out.data.begin() + i * item);
    }
    return out;
}

}  // namespace ggdiff
