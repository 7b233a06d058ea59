#include "families/wan/vace.h"

#include <algorithm>
#include <string>

#include "core/log.h"
#include "image/input_fit.h"
#include "pipeline/latent_image.h"

namespace ggdiff {
int wan_vace_latent_frames(const GenerateOptions& o, int video_latent_frames) {
    return video_latent_frames + (o.init_image ? 1 : 0);
}

std::function<Result<VideoConditions>(const GenerateOptions&, int, int, int, sampling::Rng&)>
wan_vace_conditions(const models::WanConfig& dit, Autoencoder* vae) {
    return [dit, vae](const GenerateOptions& o, int width, int height, int frames,
                      sampling::Rng& rng) -> Result<VideoConditions> {
        VideoConditions vc;
        vc.used_init_image = true;
        vc.vace_strength = o.vace_strength;
        const int64_t z = dit.out_channels, d = vae->downscale();
        if (dit.vace_in_channels != 2 * z + d * d) {
            return Status::Error(string_format(
                "Wan VACE: a control context of %lld channels is no layout ggdiff knows (2 x %lld "
                "latent channels + %lld mask pixels)",
                (long long)dit.vace_in_channels, (long long)z, (long long)(d * d)));
        }
        // The reference image (-i): one frame through the VAE on its own, as the reference
        // engine encodes it before the control video.
        HostTensor ref;
        if (o.init_image) {
            auto enc =
                vae->encode(image_to_tensor(fit_input_image(*o.init_image, width, height)), rng);
            if (!enc.ok())
                return enc.status().with_context("encoding the VACE reference image (-i)");
            ref = std::move(*enc);
        }
        // The control video in [-1, 1]: mid grey (0) where no frame is given.
        const int64_t plane = static_cast<int64_t>(width) * height;
        HostTensor control({width, height, 3, frames});
        const int given = std::min<int>(frames, static_cast<int>(o.control_frames.size()));
        for (int i = 0; i < given; ++i) {
            const HostTensor t =
                image_to_tensor(fit_input_image(o.control_frames[i], width, height));
            std::copy(t.data.begin(), t.data.end(), control.data.begin() + i * 3 * plane);
        }
        if (given < frames && !o.control_frames.empty()) {
            GGDIFF_LOG_WARN("--control-video: %d frames for a video of %d; the rest are grey",
                            given, frames);
        }
        // The mask is all ones: the inactive video is all grey, the reactive one the control.
        auto inactive = vae->encode(HostTensor({width, height, 3, frames}), rng);
        if (!inactive.ok()) return inactive.status().with_context("encoding the VACE context");
        auto reactive = vae->encode(control, rng);
        if (!reactive.ok()) return reactive.status().with_context("encoding the control video");
        const int64_t lw = inactive->dim(0), lh = inactive->dim(1), lplane = lw * lh;
        if (inactive->dim(2) % z != 0 || reactive->ne != inactive->ne) {
            return Status::Error("Wan VACE: the VAE's latent does not match the DiT's channels");
        }
        const int64_t t = inactive->dim(2) / z;
        const int64_t lead = ref.data.empty() ? 0 : 1, tt = t + lead;
        if (lead && (ref.dim(0) != lw || ref.dim(1) != lh || ref.dim(2) != z)) {
            return Status::Error("Wan VACE: the reference image's latent is not one frame");
        }
        // [lw, lh, k * tt]: channel k of latent frame f in plane k * tt + f.
        vc.vace_context = HostTensor({lw, lh, dit.vace_in_channels * tt, 1});
        auto out_plane = [&](int64_t channel, int64_t frame) {
            return vc.vace_context.data.begin() + (channel * tt + frame) * lplane;
        };
        for (int64_t ch = 0; ch < z; ++ch) {
            if (lead) std::copy_n(ref.data.begin() + ch * lplane, lplane, out_plane(ch, 0));
            for (int64_t f = 0; f < t; ++f) {
                const int64_t src = (ch * t + f) * lplane;
                std::copy_n(inactive->data.begin() + src, lplane, out_plane(ch, lead + f));
                std::copy_n(reactive->data.begin() + src, lplane, out_plane(z + ch, lead + f));
            }
        }
        for (int64_t ch = 2 * z; ch < dit.vace_in_channels; ++ch) {
            std::fill_n(out_plane(ch, lead), t * lplane, 1.0f);
        }
        vc.leading_frames = static_cast<int>(lead);
        GGDIFF_LOG_DEBUG("Wan VACE: %d control frames, %s%lld latent frames, strength %g", given,
                         lead ? "a reference image, " : "", (long long)tt, o.vace_strength);
        return vc;
    };
}

}  // namespace ggdiff
