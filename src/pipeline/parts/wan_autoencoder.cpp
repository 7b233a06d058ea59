#include "pipeline/parts/wan_autoencoder.h"

#include "core/log.h"
#include "pipeline/parts/module_setup.h"

namespace ggdiff {

Result<models::WanVaeConfig> detect_wan21_image_vae(const FamilyContext& ctx,
                                                    const std::string& prefix, const char* family,
                                                    int64_t latent_channels) {
    if (!models::is_wan_vae(ctx.index, prefix)) {
        return Status::Error(std::string(family) +
                             " needs the Wan 2.1 VAE: pass --vae qwen_image_vae.safetensors (or "
                             "wan_2.1_vae.safetensors)");
    }
    auto vae = models::detect_wan_vae(ctx.index, prefix);
    if (!vae.ok()) return vae.status().with_context("--vae");
    if (vae->z_dim != latent_channels || vae->image_channels != 3) {
        return Status::Error(string_format(
            "--vae: a Wan VAE of %lld latent / %lld image channels; %s takes the Wan 2.1 VAE "
            "(%lld latent channels, RGB)",
            (long long)vae->z_dim, (long long)vae->image_channels, family,
            (long long)latent_channels));
    }
    return vae;
}

Result<std::unique_ptr<WanAutoencoder>> WanAutoencoder::create(const FamilyContext& ctx,
                                                               const ModuleDevices& where,
                                                               const models::WanVaeConfig& cfg,
                                                               bool video) {
    auto a = std::unique_ptr<WanAutoencoder>(new WanAutoencoder());
    a->cfg_ = cfg;
    a->video_ = video;
    auto runner = make_module(ctx, where, "VAE", [&cfg, video](GraphBuilder& gb) {
        // A video declares a later chunk: it reads the temporal resamplers as well.
        HostTensor z({4, 4, cfg.z_dim, 1});
        std::vector<ggml_tensor*> outs;
        models::WanCausalCache dec, enc;
        outs.push_back(video ? models::build_wan_decode_chunk(gb.nn(), cfg, gb.input(z), 1, dec)
                             : models::build_wan_decode(gb.nn(), cfg, gb.input(z)));
        if (cfg.has_encoder) {
            const int64_t s = 4 * cfg.downscale();
            HostTensor img({s, s, cfg.encoder_channels, video ? 4 : 1});
            outs.push_back(video
                               ? models::build_wan_encode_chunk(gb.nn(), cfg, gb.input(img), 1, enc)
                               : models::build_wan_encode(gb.nn(), cfg, gb.input(img)));
        }
        return outs;
    });
    if (!runner.ok()) return runner.status();
    a->runner_ = std::move(*runner);
    return a;
}

models::WanGraphRun WanAutoencoder::graph_run() {
    return [this](const models::WanGraphBuild& build) {
        return runner_->run([&build](GraphBuilder& gb) {
            return build(gb.nn(), [&gb](const HostTensor& t) { return gb.input(t); });
        });
    };
}

Result<HostTensor> WanAutoencoder::decode(const HostTensor& latent) {
    const int64_t w = latent.dim(0), h = latent.dim(1), z = cfg_.z_dim;
    if (latent.dim(2) % z != 0 || latent.dim(3) != 1) {
        return Status::Error("Wan VAE: a latent of " + std::to_string(latent.dim(2)) +
                             " channels is not whole frames of " + std::to_string(z));
    }
    const int64_t frames = latent.dim(2) / z, plane = w * h;
    if (video_) {
        // [w, h, z, T] in VAE space, frame t at index t of dim 3.
        HostTensor zv({w, h, z, frames});
        for (int64_t f = 0; f < frames; ++f) {
            for (int64_t c = 0; c < z; ++c) {
                const float* src = latent.ptr() + (c * frames + f) * plane;
                float* dst = zv.ptr() + (f * z + c) * plane;
                for (int64_t i = 0; i < plane; ++i) dst[i] = src[i] * cfg_.std[c] + cfg_.mean[c];
            }
        }
        return models::wan_decode_video(cfg_, zv, graph_run());
    }
    HostTensor images;
    for (int64_t f = 0; f < frames; ++f) {
        HostTensor frame({w, h, z, 1});
        for (int64_t c = 0; c < z; ++c) {
            const float* src = latent.ptr() + (c * frames + f) * plane;
            float* dst = frame.ptr() + c * plane;
            for (int64_t i = 0; i < plane; ++i) dst[i] = src[i] * cfg_.std[c] + cfg_.mean[c];
        }
        auto r = runner_->run([&](GraphBuilder& gb) {
            return std::vector<ggml_tensor*>{
                models::build_wan_decode(gb.nn(), cfg_, gb.input(frame))};
        });
        if (!r.ok()) return r.status();
        HostTensor& img = (*r)[0];
        if (f == 0) images = HostTensor({img.dim(0), img.dim(1), img.dim(2), frames});
        std::copy(img.data.begin(), img.data.end(), images.data.begin() + f * img.numel());
    }
    return images;
}

Result<HostTensor> WanAutoencoder::encode(const HostTensor& image, sampling::Rng&) {
    if (!cfg_.has_encoder) {
        return Status::Error("this VAE has no encoder weights: img2img needs a full VAE");
    }
    if (image.dim(2) != cfg_.encoder_channels) {
        return Status::Error("Wan VAE: the encoder takes " + std::to_string(cfg_.encoder_channels) +
                             " image channels, got " + std::to_string(image.dim(2)));
    }
    if (image.dim(0) % cfg_.patch != 0 || image.dim(1) % cfg_.patch != 0) {
        return Status::Error("Wan VAE: the encoder takes whole " + std::to_string(cfg_.patch) +
                             "x" + std::to_string(cfg_.patch) + " patches, got " +
                             std::to_string(image.dim(0)) + "x" + std::to_string(image.dim(1)));
    }
    if (video_) {
        auto r = models::wan_encode_video(cfg_, image, graph_run());
        if (!r.ok()) return r.status();
        // [w, h, z, T] -> planes c * T + t, diffusion space.
        const HostTensor& zv = *r;
        const int64_t frames = zv.dim(3), plane = zv.dim(0) * zv.dim(1), zc = cfg_.z_dim;
        HostTensor out({zv.dim(0), zv.dim(1), zc * frames, 1});
        for (int64_t f = 0; f < frames; ++f) {
            for (int64_t c = 0; c < zc; ++c) {
                const float* src = zv.ptr() + (f * zc + c) * plane;
                float* dst = out.ptr() + (c * frames + f) * plane;
                for (int64_t i = 0; i < plane; ++i) dst[i] = (src[i] - cfg_.mean[c]) / cfg_.std[c];
            }
        }
        return out;
    }
    auto r = runner_->run([&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{models::build_wan_encode(gb.nn(), cfg_, gb.input(image))};
    });
    if (!r.ok()) return r.status();
    HostTensor& z = (*r)[0];
    const int64_t plane = z.dim(0) * z.dim(1);
    for (int64_t c = 0; c < cfg_.z_dim; ++c) {
        float* p = z.ptr() + c * plane;
        for (int64_t i = 0; i < plane; ++i) p[i] = (p[i] - cfg_.mean[c]) / cfg_.std[c];
    }
    z.ne = {z.dim(0), z.dim(1), cfg_.z_dim, 1};
    return std::move(z);
}

}  // namespace ggdiff
