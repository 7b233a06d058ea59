#include "pipeline/phase_denoise.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/log.h"
#include "pipeline/image_conditions.h"
#include "sampling/guidance.h"
#include "sampling/parameterization.h"

namespace ggdiff {
namespace {

std::vector<float> slice(const std::vector<float>& v, size_t offset, size_t n) {
    return std::vector<float>(v.begin() + static_cast<long>(offset),
                              v.begin() + static_cast<long>(offset + n));
}

}  // namespace

sampling::DenoiseFn guided_denoiser(const DenoiseContext& c) {
    return [&c](const std::vector<float>& xin, float sigma, sampling::DenoiseStep at,
                bool need_uncond) -> Result<sampling::DenoiseResult> {
        const GeneratePlan& p = c.plan;
        // The positive prompt's conditioning (PhotoMaker's identity one from its step on).
        const Conditioning& cond = c.text.positive(at);
        const bool batched = p.use_uncond && c.text.uncond.batchable_with(cond);
        const DenoiseInputs& in = c.inputs;
        sampling::StepCache* cache = c.cache;
        const size_t n = p.latent_numel();
        sampling::DenoiseResult res;
        // Spectrum: a forecast evaluation runs nothing.
        if (cache && cache->forecast(res.denoised)) {
            if (res.denoised.size() != n) {
                return Status::Error("the step cache forecast a latent of the wrong size");
            }
            if (!in.init.keep.empty()) blend_latent(res.denoised, in.init.latent, in.init.keep);
            if (need_uncond) res.uncond_denoised = res.denoised;
            return res;
        }
        const sampling::Parameterization::ModelStep ms = p.param.model_step(sigma);
        std::vector<float> x_in(n);  // what the network gets: x * c_in
        std::transform(xin.begin(), xin.end(), x_in.begin(),
                       [&](float v) { return v * ms.s.c_in; });
        // Held video frames go in as given (Wan 2.2 TI2V's first frame).
        if (!in.video.frame_keep.empty()) blend_latent(x_in, in.init.latent, in.init.keep);
        DenoiseBatch batch;
        batch.guidance = c.options.guidance;
        batch.refs = in.refs.empty() ? nullptr : &in.refs;
        batch.increase_ref_index = c.options.increase_ref_index;
        if (!in.init.inpaint_input.data.empty()) batch.concat = &in.init.inpaint_input;
        if (!in.video.concat.data.empty()) batch.concat = &in.video.concat;
        if (!in.video.image_context.data.empty()) batch.image_context = &in.video.image_context;
        if (!in.video.frame_keep.empty()) batch.frame_keep = &in.video.frame_keep;
        if (!in.video.vace_context.data.empty()) {
            batch.vace_context = &in.video.vace_context;
            batch.vace_strength = in.video.vace_strength;
        }
        if (in.control) batch.control = &*in.control;
        if (!in.identity.data.empty()) {
            batch.identity = &in.identity;
            batch.identity_weight = c.options.pulid_id_weight;
        }
        // Runs the network on `conds` (batchable with each other), one output each.
        auto run = [&](std::vector<const Conditioning*> conds,
                       const char* what) -> Result<std::vector<std::vector<float>>> {
            const int items = static_cast<int>(conds.size());
            batch.x = HostTensor({p.latent_w, p.latent_h, p.latent_c, items});
            for (int b = 0; b < items; ++b) {
                std::copy(x_in.begin(), x_in.end(), batch.x.data.begin() + b * n);
            }
            batch.timesteps.assign(items, ms.t);
            batch.cond = std::move(conds);
            auto r = (c.denoiser ? c.denoiser : c.family.denoiser.get())->run(batch);
            if (!r.ok()) return what ? r.status().with_context(what) : r.status();
            if (r->data.size() != n * static_cast<size_t>(items)) {
                return Status::Error("the denoiser returned a latent of the wrong size");
            }
            std::vector<std::vector<float>> out;
            for (int b = 0; b < items; ++b) out.push_back(slice(r->data, b * n, n));
            return out;
        };
        // Step caching: a condition whose output the cache can give is not run.
        if (cache) cache->begin_step(at, sigma);
        auto reuse = [&](const Conditioning& which, std::vector<float>& out) {
            return cache && cache->reuse(&which, x_in, out);
        };
        auto store = [&](const Conditioning& which, const std::vector<float>& out) {
            if (cache) cache->store(&which, x_in, out);
        };
        std::vector<float> out_c, out_u;
        const bool have_c = reuse(cond, out_c);
        const bool have_u = p.use_uncond && reuse(c.text.uncond, out_u);
        if (!have_c && !have_u && batched) {
            auto r = run({&cond, &c.text.uncond}, nullptr);
            if (!r.ok()) return r.status();
            out_c = std::move((*r)[0]);
            out_u = std::move((*r)[1]);
        } else {
            if (!have_c) {
                auto r = run({&cond}, nullptr);
                if (!r.ok()) return r.status();
                out_c = std::move((*r)[0]);
            }
            if (p.use_uncond && !have_u) {
                auto r = run({&c.text.uncond}, nullptr);
                if (!r.ok()) return r.status();
                out_u = std::move((*r)[0]);
            }
        }
        if (!have_c) store(cond, out_c);
        if (p.use_uncond && !have_u) store(c.text.uncond, out_u);
        std::vector<float> guided;
        if (p.use_img_uncond) {
            // The negative prompt without the reference images (3-conditioning CFG).
            std::vector<float> out_i;
            if (!reuse(c.text.img_uncond, out_i)) {
                batch.refs = nullptr;
                auto r = run({&c.text.img_uncond}, "image guidance pass");
                if (!r.ok()) return r.status();
                out_i = std::move((*r)[0]);
                store(c.text.img_uncond, out_i);
                batch.refs = in.refs.empty() ? nullptr : &in.refs;
            }
            sampling::apply_img_cfg(out_c, out_u, out_i, p.cfg_scale, p.img_cfg, guided);
        } else if (p.use_uncond) {
            sampling::apply_cfg(out_c, out_u, p.cfg_scale, guided);
        } else {
            guided = out_c;
        }
        // Skip-layer guidance: once more on the positive prompt with the blocks skipped, and
        // the guided output pushed away from that prediction (raw outputs, as in sd.cpp). Not
        // on a step the cache skips; otherwise the pass goes through the cache as the
        // positive prompt's, as in sd.cpp.
        if (p.slg.applies(at, in.init.sigmas.size()) && !(cache && cache->step_skipped())) {
            std::vector<float> out_s;
            if (!reuse(cond, out_s)) {
                batch.skip_layers = &p.slg.layers;
                auto r = run({&cond}, "skip-layer guidance pass");
                if (!r.ok()) return r.status();
                out_s = std::move((*r)[0]);
                batch.skip_layers = nullptr;
                store(cond, out_s);
            }
            sampling::apply_slg(out_c, out_s, p.slg.scale, guided);
        }
        sampling::apply_scalings(guided, xin, ms.s, res.denoised);
        if (cache) cache->record(res.denoised);
        if (!in.init.keep.empty()) blend_latent(res.denoised, in.init.latent, in.init.keep);
        if (need_uncond) {
            sampling::apply_scalings(p.use_uncond ? out_u : out_c, xin, ms.s, res.uncond_denoised);
        }
        return res;
    };
}

float sampler_eta(const DenoiseContext& c) {
    if (c.eta) return *c.eta;
    if (!std::isnan(c.options.eta)) return c.options.eta;
    return c.family.defaults.eta.value_or(c.options.eta);
}

std::vector<float> starting_latent(const DenoiseContext& c, sampling::Rng& rng) {
    std::vector<float> noise = rng.randn(c.plan.latent_numel());
    if (c.family.eta_scales_noise) {
        const float eta = sampler_eta(c);
        if (!std::isnan(eta)) {
            for (float& v : noise) v *= eta;
        }
    }
    return c.plan.param.noise_latent(c.inputs.init.latent, noise, c.inputs.init.sigmas[0]);
}

Status denoise_item(const DenoiseContext& c, const sampling::DenoiseFn& denoise,
                    std::vector<float>& x, sampling::Rng& sampler_rng, int64_t seed,
                    std::function<bool(int step, int total)> on_step, bool finish,
                    const std::vector<float>* steps) {
    const std::vector<float>& sigmas = steps ? *steps : c.inputs.init.sigmas;
    sampling::SamplerOptions so;
    so.eta = sampler_eta(c);
    so.seed = static_cast<uint64_t>(seed);
    so.model = &c.plan.param;
    so.on_step = std::move(on_step);
    if (c.cache) c.cache->begin(sigmas);
    if (c.family.own_sampler) {
        GGDIFF_TRY(c.family.own_sampler->run(denoise, x, sigmas, so));
    } else {
        GGDIFF_TRY(sampling::sample(c.plan.sampler, denoise, x, sigmas, sampler_rng, so));
    }
    if (c.cache && c.cache->enabled()) {
        GGDIFF_LOG_INFO("%s", c.cache->summary(sigmas.size() - 1).c_str());
    }
    if (finish) x = c.plan.param.inverse_noise_scaling(sigmas.back(), x);
    return Status::Ok();
}

}  // namespace ggdiff
