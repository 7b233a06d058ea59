#include "pipeline/phase_preview.h"

#include <algorithm>
#include <utility>

#include "core/log.h"
#include "pipeline/latent_image.h"
#include "pipeline/phase_decode.h"

namespace ggdiff {

Result<Image> make_preview(Family& f, const GeneratePlan& p, PreviewMode mode,
                           const std::vector<float>& latent, const TilingOptions& tiling) {
    if (mode == PreviewMode::Proj) {
        HostTensor x({p.latent_w, p.latent_h, p.latent_c, 1});
        x.data = latent;
        return project_latent_rgb(x, f.latent_rgb, p.frames, 0);
    }
    auto decoded = decode_preview_latent(f, p, latent, tiling);
    if (!decoded.ok()) return decoded.status();
    HostTensor first({decoded->dim(0), decoded->dim(1), decoded->dim(2), 1});
    std::copy_n(decoded->data.begin(), first.numel(), first.data.begin());
    return tensor_to_image(first);
}

sampling::DenoiseFn previewing_denoiser(const DenoiseContext& c, sampling::DenoiseFn denoise,
                                        PreviewMode mode,
                                        std::function<void(const Image& preview, int step)> emit) {
    return [&c, denoise = std::move(denoise), mode, emit = std::move(emit)](
               const std::vector<float>& x, float sigma, sampling::DenoiseStep at,
               bool need_uncond) -> Result<sampling::DenoiseResult> {
        const PreviewOptions& pv = c.options.preview;
        const int step = at.index + 1;
        const bool due = step % std::max(1, pv.interval) == 0;
        auto show = [&](const std::vector<float>& latent) {
            auto img = make_preview(c.family, c.plan, mode, latent, c.options.vae_tiling);
            if (!img.ok()) {
                GGDIFF_LOG_ERROR("preview at step %d failed: %s", step,
                                 img.status().message().c_str());
                return;
            }
            GGDIFF_LOG_DEBUG("preview of step %d: %dx%d", step, img->width, img->height);
            emit(*img, step);
        };
        if (due && pv.noisy) {
            // What the denoiser is fed: the sampler's x scaled by c_in.
            const float c_in = c.plan.param.model_step(sigma).s.c_in;
            std::vector<float> scaled(x.size());
            std::transform(x.begin(), x.end(), scaled.begin(),
                           [c_in](float v) { return v * c_in; });
            show(scaled);
        }
        auto r = denoise(x, sigma, at, need_uncond);
        if (r.ok() && due && !pv.noisy) show(r->denoised);
        return r;
    };
}

}  // namespace ggdiff
