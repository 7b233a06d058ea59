#include "pipeline/phase_denoise.h"

#include <algorithm>
#include <utility>

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
    const GeneratePlan& p = c.plan;
    const bool batched = p.use_uncond && c.text.uncond.batchable_with(c.text.cond);
    return [&c, batched](const std::vector<float>& xin, float sigma, sampling::DenoiseStep at,
                         bool need_uncond) -> Result<sampling::DenoiseResult> {
        const GeneratePlan& p = c.plan;
        const DenoiseInputs& in = c.inputs;
        const size_t n = p.latent_numel();
        const sampling::Parameterization::ModelStep ms = p.param.model_step(sigma);
        DenoiseBatch batch;
        batch.guidance = c.options.guidance;
        batch.refs = in.refs.empty() ? nullptr : &in.refs;
        batch.increase_ref_index = c.options.increase_ref_index;
        const int items = batched ? 2 : 1;
        batch.x = HostTensor({p.latent_w, p.latent_h, p.latent_c, items});
        for (int b = 0; b < items; ++b) {
            std::transform(xin.begin(), xin.end(), batch.x.data.begin() + b * n,
                           [&](float v) { return v * ms.s.c_in; });
        }
        batch.timesteps.assign(items, ms.t);
        if (!in.init.inpaint_input.data.empty()) batch.concat = &in.init.inpaint_input;
        if (in.control) batch.control = &*in.control;
        batch.cond = {&c.text.cond};
        if (batched) batch.cond.push_back(&c.text.uncond);
        auto r = c.family.denoiser->run(batch);
        if (!r.ok()) return r.status();
        std::vector<float> out_c, out_u;
        if (batched) {
            out_c = slice(r->data, 0, n);
            out_u = slice(r->data, n, n);
        } else {
            out_c = std::move(r->data);
            if (p.use_uncond) {
                batch.cond = {&c.text.uncond};
                auto ru = c.family.denoiser->run(batch);
                if (!ru.ok()) return ru.status();
                out_u = std::move(ru->data);
            }
        }
        if (out_c.size() != n || (p.use_uncond && out_u.size() != n)) {
            return Status::Error("the denoiser returned a latent of the wrong size");
        }
        std::vector<float> guided;
        if (p.use_img_uncond) {
            // The negative prompt without the reference images (3-conditioning CFG).
            batch.cond = {&c.text.img_uncond};
            batch.refs = nullptr;
            batch.x.ne[3] = 1;
            batch.x.data.resize(n);
            batch.timesteps.assign(1, ms.t);
            auto ri = c.family.denoiser->run(batch);
            if (!ri.ok()) return ri.status().with_context("image guidance pass");
            if (ri->data.size() != n) {
                return Status::Error("the denoiser returned a latent of the wrong size");
            }
            sampling::apply_img_cfg(out_c, out_u, ri->data, p.cfg_scale, p.img_cfg, guided);
            batch.refs = in.refs.empty() ? nullptr : &in.refs;
        } else if (p.use_uncond) {
            sampling::apply_cfg(out_c, out_u, p.cfg_scale, guided);
        } else {
            guided = out_c;
        }
        // Skip-layer guidance: once more on the positive prompt with the blocks skipped, and
        // the guided output pushed away from that prediction (raw outputs, as in sd.cpp).
        if (p.slg.applies(at, in.init.sigmas.size())) {
            batch.x.ne[3] = 1;
            batch.x.data.resize(n);
            batch.timesteps.assign(1, ms.t);
            batch.cond = {&c.text.cond};
            batch.skip_layers = &p.slg.layers;
            auto rs = c.family.denoiser->run(batch);
            if (!rs.ok()) return rs.status().with_context("skip-layer guidance pass");
            if (rs->data.size() != n) {
                return Status::Error("the denoiser returned a latent of the wrong size");
            }
            sampling::apply_slg(out_c, rs->data, p.slg.scale, guided);
        }
        sampling::DenoiseResult res;
        sampling::apply_scalings(guided, xin, ms.s, res.denoised);
        if (!in.init.keep.empty()) blend_latent(res.denoised, in.init.latent, in.init.keep);
        if (need_uncond) {
            sampling::apply_scalings(p.use_uncond ? out_u : out_c, xin, ms.s, res.uncond_denoised);
        }
        return res;
    };
}

std::vector<float> starting_latent(const DenoiseContext& c, sampling::Rng& rng) {
    return c.plan.param.noise_latent(c.inputs.init.latent, rng.randn(c.plan.latent_numel()),
                                     c.inputs.init.sigmas[0]);
}

Status denoise_item(const DenoiseContext& c, const sampling::DenoiseFn& denoise,
                    std::vector<float>& x, sampling::Rng& sampler_rng, int64_t seed,
                    std::function<bool(int step, int total)> on_step) {
    const std::vector<float>& sigmas = c.inputs.init.sigmas;
    sampling::SamplerOptions so;
    so.eta = c.options.eta;
    so.seed = static_cast<uint64_t>(seed);
    so.model = &c.plan.param;
    so.on_step = std::move(on_step);
    GGDIFF_TRY(sampling::sample(c.plan.sampler, denoise, x, sigmas, sampler_rng, so));
    x = c.plan.param.inverse_noise_scaling(sigmas.back(), x);
    return Status::Ok();
}

}  // namespace ggdiff
