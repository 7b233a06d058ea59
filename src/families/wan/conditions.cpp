#include "families/wan/conditions.h"

#include <algorithm>
#include <string>

#include "core/log.h"
#include "image/input_fit.h"
#include "pipeline/latent_image.h"

namespace ggdiff {
namespace {

constexpr int64_t kMaskChannels = 4;
constexpr int64_t kClipTokens = 257;
constexpr int64_t kTi2vChannels = 48;  // Wan 2.2's VAE

}  // namespace

bool wan_takes_images(const models::WanConfig& dit) {
    return dit.in_channels > dit.out_channels;
}

bool wan_holds_frames(const models::WanConfig& dit) {
    return dit.in_channels == dit.out_channels && dit.out_channels == kTi2vChannels;
}

std::function<Result<VideoConditions>(const GenerateOptions&, int, int, int, sampling::Rng&)>
wan_video_conditions(const models::WanConfig& dit, Autoencoder* vae, WanClipVision clip) {
    if (wan_holds_frames(dit)) {
        return [dit, vae](const GenerateOptions& o, int width, int height, int frames,
                          sampling::Rng& rng) -> Result<VideoConditions> {
            VideoConditions vc;
            if (!o.init_image && !o.end_image) return vc;
            vc.used_init_image = true;
            const int64_t t = (frames - 1) / 4 + 1;
            vc.frame_keep.assign(static_cast<size_t>(t), 1.0f);
            auto hold = [&](const Image& img, int64_t frame, const char* what) -> Status {
                auto enc = vae->encode(image_to_tensor(fit_input_image(img, width, height)), rng);
                if (!enc.ok()) return enc.status().with_context(std::string("encoding ") + what);
                const int64_t plane = enc->dim(0) * enc->dim(1), z = dit.out_channels;
                if (enc->dim(2) != z) {
                    return Status::Error(std::string("encoding ") + what +
                                         ": the VAE's latent does not match the DiT's channels");
                }
                if (vc.latent.empty()) vc.latent.assign(static_cast<size_t>(plane * z * t), 0.0f);
                for (int64_t c = 0; c < z; ++c) {
                    std::copy_n(enc->data.begin() + c * plane, plane,
                                vc.latent.begin() + (c * t + frame) * plane);
                }
                vc.frame_keep[static_cast<size_t>(frame)] = 0.0f;
                return Status::Ok();
            };
            if (o.init_image) GGDIFF_TRY(hold(*o.init_image, 0, "the first frame (-i)"));
            if (o.end_image) GGDIFF_TRY(hold(*o.end_image, t - 1, "the last frame (--end-img)"));
            return vc;
        };
    }
    return [dit, vae, clip](const GenerateOptions& o, int width, int height, int frames,
                            sampling::Rng& rng) -> Result<VideoConditions> {
        VideoConditions vc;
        std::optional<Image> first, last;
        if (o.init_image) first = fit_input_image(*o.init_image, width, height);
        if (o.end_image) last = fit_input_image(*o.end_image, width, height);
        vc.used_init_image = true;

        if (dit.image_embedding) {
            if (!clip) return Status::Error("Wan image-to-video needs --clip_vision");
            const int images = dit.image_positions > 0 ? 2 : 1;
            vc.image_context = HostTensor({dit.image_width, kClipTokens * images, 1});
            const std::optional<Image>* sources[2] = {&first, &last};
            for (int i = 0; i < images; ++i) {
                if (!*sources[i]) continue;  // no image: zero tokens, as the reference
                auto tokens = clip(**sources[i]);
                if (!tokens.ok()) {
                    return tokens.status().with_context(i == 0 ? "CLIP vision of -i"
                                                               : "CLIP vision of --end-img");
                }
                if (tokens->dim(0) != dit.image_width || tokens->dim(1) != kClipTokens) {
                    return Status::Error(
                        string_format("CLIP vision gives %lldx%lld tokens; the DiT's img_emb "
                                      "takes %lld x %lld",
                                      (long long)tokens->dim(1), (long long)tokens->dim(0),
                                      (long long)kClipTokens, (long long)dit.image_width));
                }
                std::copy(tokens->data.begin(), tokens->data.end(),
                          vc.image_context.data.begin() + i * kClipTokens * dit.image_width);
            }
        }

        // The video to encode: mid grey, the given first and last frames.
        const int64_t plane = static_cast<int64_t>(width) * height;
        HostTensor video({width, height, 3, frames});
        auto put = [&](const Image& img, int64_t frame) {
            const HostTensor t = image_to_tensor(img);
            std::copy(t.data.begin(), t.data.end(), video.data.begin() + frame * 3 * plane);
        };
        if (first) put(*first, 0);
        if (last) put(*last, frames - 1);
        auto enc = vae->encode(video, rng);
        if (!enc.ok()) return enc.status().with_context("encoding the conditioning frames");
        const int64_t z = dit.out_channels;
        const int64_t lw = enc->dim(0), lh = enc->dim(1), lplane = lw * lh;
        if (enc->dim(2) % z != 0) {
            return Status::Error(
                "encoding the conditioning frames: the VAE's latent does not "
                "match the DiT's channels");
        }
        const int64_t t = enc->dim(2) / z;
        if (kMaskChannels + z != dit.in_channels - dit.out_channels) {
            return Status::Error(string_format(
                "Wan: a DiT taking %lld channels for %lld-channel latents is no image-to-video "
                "layout ggdiff knows (4 mask + %lld image channels)",
                (long long)dit.in_channels, (long long)z, (long long)z));
        }
        vc.concat = HostTensor({lw, lh, (kMaskChannels + z) * t, 1});
        auto mask_plane = [&](int64_t channel, int64_t frame) {
            return vc.concat.data.begin() + (channel * t + frame) * lplane;
        };
        if (first) {
            for (int64_t ch = 0; ch < kMaskChannels; ++ch)
                std::fill_n(mask_plane(ch, 0), lplane, 1.0f);
        }
        if (last) std::fill_n(mask_plane(kMaskChannels - 1, t - 1), lplane, 1.0f);
        std::copy(enc->data.begin(), enc->data.end(),
                  vc.concat.data.begin() + kMaskChannels * t * lplane);
        GGDIFF_LOG_DEBUG("Wan conditions: %s%s%lld latent frames", first ? "first frame, " : "",
                         last ? "last frame, " : "", (long long)t);
        return vc;
    };
}

}  // namespace ggdiff
