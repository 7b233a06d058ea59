#include "pipeline/phase_decode.h"

#include <algorithm>
#include <utility>

#include "core/log.h"
#include "models/vae/tiling.h"
#include "pipeline/latent_image.h"
#include "sampling/samplers.h"
#include "sampling/schedules.h"

namespace ggdiff {
namespace {

// One decode as `tiling` says, every frame of the latent at once when untiled; `preview`
// decodes with the autoencoder's preview decoder.
Result<HostTensor> decode_once(Family& f, const GeneratePlan& p, const HostTensor& latent,
                               const TilingOptions& tiling, bool preview = false) {
    auto decode = [&f, preview](const HostTensor& z) {
        return preview ? f.vae->decode_preview(z) : f.vae->decode(z);
    };
    // A VAE that tiles its own decode (LTX-2's packed video and sound) gets the latent whole.
    if (!tiling.enabled || f.vae->tiles_itself()) return decode(latent);
    models::TileOptions to = tile_options(tiling);
    // Seamless tiling wraps the VAE's convolutions around the tile, so a tile must span the
    // whole image on a wrapping axis (as the reference engine, which keeps the wrap only
    // where one tile covers the axis).
    if (f.circular_x && to.tile_w < p.latent_w) {
        GGDIFF_LOG_INFO("VAE tiling with --circular(x): tiles span the whole width (%lld)",
                        static_cast<long long>(p.latent_w));
        to.tile_w = static_cast<int>(p.latent_w);
    }
    if (f.circular_y && to.tile_h < p.latent_h) {
        GGDIFF_LOG_INFO("VAE tiling with --circular(y): tiles span the whole height (%lld)",
                        static_cast<long long>(p.latent_h));
        to.tile_h = static_cast<int>(p.latent_h);
    }
    auto tiled = [&](const HostTensor& in_latent, HostTensor& img) -> Status {
        return models::run_tiled(in_latent, img, static_cast<float>(f.vae->downscale()), to,
                                 [&](const HostTensor& in, HostTensor& out) -> Status {
                                     auto r = decode(in);
                                     if (!r.ok()) return r.status();
                                     out = std::move(*r);
                                     return Status::Ok();
                                 });
    };
    HostTensor img;
    if (f.output_frames) {
        // A video: each tile is a whole video of that region, decoded causally over time, as
        // the reference engine tiles a video.
        GGDIFF_TRY(models::run_tiled_video(latent, img, static_cast<float>(f.vae->downscale()), to,
                                           [&](const HostTensor& in, HostTensor& out) {
                                               auto r = decode(in);
                                               if (!r.ok()) return r.status();
                                               out = std::move(*r);
                                               return Status::Ok();
                                           }));
        return img;
    }
    if (p.frames == 1) {
        GGDIFF_TRY(tiled(latent, img));
        return img;
    }
    // Several frames: tiles of one frame at a time (plane c * F + fr of the latent).
    const int64_t plane = p.latent_w * p.latent_h, ch = f.latent_channels;
    for (int64_t fr = 0; fr < p.frames; ++fr) {
        HostTensor one({p.latent_w, p.latent_h, ch, 1});
        for (int64_t c = 0; c < ch; ++c) {
            std::copy_n(latent.data.begin() + (c * p.frames + fr) * plane, plane,
                        one.data.begin() + c * plane);
        }
        HostTensor out;
        GGDIFF_TRY(tiled(one, out));
        if (fr == 0) img = HostTensor({out.dim(0), out.dim(1), out.dim(2), p.frames});
        std::copy(out.data.begin(), out.data.end(), img.data.begin() + fr * out.numel());
    }
    return img;
}

}  // namespace

models::TileOptions tile_options(const TilingOptions& tiling) {
    models::TileOptions to;
    to.tile_w = tiling.tile_w;
    to.tile_h = tiling.tile_h;
    // As the reference's VAE: overlaps past half a tile are taken as half, and tiles are at
    // least 4 latent pixels.
    to.overlap = std::clamp(tiling.overlap, 0.0f, 0.5f);
    to.min_tile = 4;
    return to;
}

std::vector<float> drop_leading_frames(GeneratePlan& p, int latent_channels, int drop,
                                       const std::vector<float>& latent) {
    const int64_t plane = p.latent_w * p.latent_h, frames = p.frames, kept = frames - drop;
    std::vector<float> out(static_cast<size_t>(latent_channels * kept * plane));
    for (int64_t c = 0; c < latent_channels; ++c) {
        std::copy_n(latent.begin() + (c * frames + drop) * plane, kept * plane,
                    out.begin() + c * kept * plane);
    }
    p.frames = static_cast<int>(kept);
    p.latent_c = latent_channels * kept;
    return out;
}

Result<HostTensor> decode_latent(Family& f, const GeneratePlan& p, std::vector<float> latent,
                                 const TilingOptions& tiling, bool auto_fit) {
    HostTensor x({p.latent_w, p.latent_h, p.latent_c, 1});
    x.data = std::move(latent);
    Result<HostTensor> img = decode_once(f, p, x, tiling);
    if (!img.ok() && auto_fit && !tiling.enabled && !f.output_frames) {
        GGDIFF_LOG_WARN("VAE decode failed (%s); retrying with 256x256 tiles",
                        img.status().message().c_str());
        TilingOptions tiles;
        tiles.enabled = true;
        img = decode_once(f, p, x, tiles);
    }
    return img;
}

Result<HostTensor> decode_preview_latent(Family& f, const GeneratePlan& p,
                                         const std::vector<float>& latent,
                                         const TilingOptions& tiling) {
    HostTensor x({p.latent_w, p.latent_h, p.latent_c, 1});
    x.data = latent;
    return decode_once(f, p, x, tiling, true);
}

GenerationInfo generation_info(const Family& f, const GeneratePlan& p, const GenerateOptions& o,
                               const std::string& model_name, const std::string& lora_hashes) {
    GenerationInfo info;
    info.prompt = o.prompt;
    info.negative_prompt = o.negative_prompt;
    info.steps = o.steps;
    info.sampler = sampling::sampler_a1111_name(p.sampler);
    if (p.schedule) info.schedule = sampling::schedule_a1111_name(*p.schedule);
    info.cfg_scale = p.cfg_scale;
    if (f.uses_guidance) info.guidance = o.guidance;
    info.width = p.width;
    info.height = p.height;
    info.model = o.output_model_name.empty() ? model_name : o.output_model_name;
    if (o.clip_skip > 0) info.clip_skip = o.clip_skip;
    if (o.init_image) info.denoising_strength = o.strength;
    info.rng = sampling::rng_name(p.rng);
    // A1111's key for image guidance (instruct-pix2pix there; reference images here).
    if (p.use_img_uncond) info.extra.emplace_back("Image CFG scale", infotext_float(p.img_cfg));
    if (!lora_hashes.empty()) info.extra.emplace_back("Lora hashes", lora_hashes);
    return info;
}

std::vector<GeneratedImage> decoded_images(const HostTensor& decoded, int64_t seed,
                                           GenerationInfo info) {
    info.seed = seed;
    const std::string infotext = format_infotext(info);
    std::vector<GeneratedImage> images;
    const int64_t frames = decoded.dim(3);
    const int64_t frame_numel = decoded.numel() / std::max<int64_t>(1, frames);
    for (int64_t fr = 0; fr < frames; ++fr) {
        HostTensor one({decoded.dim(0), decoded.dim(1), decoded.dim(2), 1});
        std::copy_n(decoded.data.begin() + fr * frame_numel, frame_numel, one.data.begin());
        GeneratedImage g;
        g.image = tensor_to_image(one);
        g.seed = seed;
        g.infotext = infotext;
        images.push_back(std::move(g));
    }
    return images;
}

}  // namespace ggdiff
