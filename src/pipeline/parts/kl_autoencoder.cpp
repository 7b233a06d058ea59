#include "pipeline/parts/kl_autoencoder.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/log.h"
#include "pipeline/parts/module_setup.h"

namespace ggdiff {

Result<std::unique_ptr<ModuleRunner>> make_kl_vae_module(const FamilyContext& ctx,
                                                         const ModuleDevices& where,
                                                         const models::VaeConfig& cfg) {
    return make_module(ctx, where, "VAE", [&cfg](GraphBuilder& gb) {
        HostTensor z({8, 8, cfg.z_channels, 1});
        std::vector<ggml_tensor*> outs{models::build_vae_decode(gb.nn(), cfg, gb.input(z))};
        if (cfg.has_encoder) {
            const int64_t s = 8 * cfg.downscale();
            HostTensor img({s, s, cfg.in_channels, 1});
            outs.push_back(models::build_vae_encode(gb.nn(), cfg, gb.input(img)));
        }
        return outs;
    });
}

Result<std::unique_ptr<KlAutoencoder>> KlAutoencoder::create(const FamilyContext& ctx,
                                                             const ModuleDevices& where,
                                                             const models::VaeConfig& cfg) {
    auto a = std::unique_ptr<KlAutoencoder>(new KlAutoencoder());
    a->cfg_ = cfg;
    auto runner = make_kl_vae_module(ctx, where, cfg);
    if (!runner.ok()) return runner.status();
    a->runner_ = std::move(*runner);
    return a;
}

Result<HostTensor> KlAutoencoder::decode(const HostTensor& latent) {
    HostTensor z = latent;
    for (float& v : z.data) v = v / cfg_.scale_factor + cfg_.shift_factor;
    auto r = runner_->run([&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{models::build_vae_decode(gb.nn(), cfg_, gb.input(z))};
    });
    if (!r.ok()) return r.status();
    return std::move((*r)[0]);
}

Result<HostTensor> KlAutoencoder::encode(const HostTensor& image, sampling::Rng& rng) {
    if (!cfg_.has_encoder) {
        return Status::Error("this VAE has no encoder weights: img2img needs a full VAE");
    }
    auto r = runner_->run([&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{models::build_vae_encode(gb.nn(), cfg_, gb.input(image))};
    });
    if (!r.ok()) return r.status();
    const HostTensor& moments = (*r)[0];
    const int64_t w = moments.dim(0), h = moments.dim(1), c = moments.dim(2) / 2;
    HostTensor latent({w, h, c, 1});
    const std::vector<float> noise = rng.randn(static_cast<size_t>(latent.numel()));
    const int64_t plane = w * h;
    for (int64_t ch = 0; ch < c; ++ch) {
        for (int64_t i = 0; i < plane; ++i) {
            const float mean = moments.data[ch * plane + i];
            const float logvar = std::clamp(moments.data[(ch + c) * plane + i], -30.0f, 20.0f);
            const float v = mean + std::exp(0.5f * logvar) * noise[ch * plane + i];
            latent.data[ch * plane + i] = (v - cfg_.shift_factor) * cfg_.scale_factor;
        }
    }
    return latent;
}

Result<std::unique_ptr<TaesdAutoencoder>> TaesdAutoencoder::create(
    const FamilyContext& ctx, const ModuleDevices& where, const models::TaesdConfig& cfg,
    std::unique_ptr<Autoencoder> fallback_encoder, bool preview_only) {
    if (preview_only && !fallback_encoder) {
        return Status::Error("--taesd-preview-only needs the full VAE for the final images");
    }
    auto a = std::unique_ptr<TaesdAutoencoder>(new TaesdAutoencoder());
    a->cfg_ = cfg;
    a->fallback_ = std::move(fallback_encoder);
    a->preview_only_ = preview_only;
    auto runner = make_module(ctx, where, "TAESD", [&cfg](GraphBuilder& gb) {
        HostTensor z({8, 8, cfg.z_channels, 1});
        std::vector<ggml_tensor*> outs{models::build_taesd_decode(gb.nn(), cfg, gb.input(z))};
        if (cfg.has_encoder) {
            HostTensor img({64, 64, cfg.in_channels, 1});
            outs.push_back(models::build_taesd_encode(gb.nn(), cfg, gb.input(img)));
        }
        return outs;
    });
    if (!runner.ok()) return runner.status();
    a->runner_ = std::move(*runner);
    return a;
}

Result<HostTensor> TaesdAutoencoder::decode(const HostTensor& latent) {
    if (preview_only_) return fallback_->decode(latent);
    return decode_preview(latent);
}

Result<HostTensor> TaesdAutoencoder::decode_preview(const HostTensor& latent) {
    // TAESD takes the diffusion latent as it is.
    auto r = runner_->run([&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{
            models::build_taesd_decode(gb.nn(), cfg_, gb.input(latent))};
    });
    if (!r.ok()) return r.status();
    return std::move((*r)[0]);
}

void TaesdAutoencoder::end_phase() {
    runner_->end_phase();
    if (fallback_) fallback_->end_phase();
}

Result<HostTensor> TaesdAutoencoder::encode(const HostTensor& image, sampling::Rng& rng) {
    if (!cfg_.has_encoder || preview_only_) {
        if (fallback_) return fallback_->encode(image, rng);
        return Status::Error("this TAESD file has no encoder weights: img2img needs one");
    }
    // The tiny encoder gives the latent directly: no sampling, no scaling.
    auto r = runner_->run([&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{
            models::build_taesd_encode(gb.nn(), cfg_, gb.input(image))};
    });
    if (!r.ok()) return r.status();
    return std::move((*r)[0]);
}

Result<models::VaeConfig> detect_flux1_image_vae(const FamilyContext& ctx,
                                                 const std::string& prefix, const char* family,
                                                 int64_t latent_channels) {
    if (!ctx.index.has_prefix(prefix)) {
        return Status::Error(std::string(family) +
                             " needs the 16-channel FLUX VAE: pass --vae ae.safetensors");
    }
    auto vae = models::detect_vae(ctx.index, prefix);
    if (!vae.ok()) return vae.status().with_context("--vae");
    if (vae->z_channels != latent_channels) {
        return Status::Error(string_format(
            "the VAE has %d latent channels but the %s DiT takes %lld (%s uses the 16-channel "
            "FLUX VAE, ae.safetensors)",
            vae->z_channels, family, (long long)latent_channels, family));
    }
    vae->scale_factor = 0.3611f;
    vae->shift_factor = 0.1159f;
    return vae;
}

Result<std::unique_ptr<Autoencoder>> make_sd_autoencoder(const FamilyContext& ctx,
                                                         const models::VaeConfig& cfg) {
    std::optional<models::TaesdConfig> taesd;
    if (!ctx.options.taesd.empty()) {
        auto t = models::detect_taesd(ctx.index);
        if (!t.ok()) return t.status().with_context("--taesd " + ctx.options.taesd);
        taesd = *t;
    }
    auto kl = KlAutoencoder::create(ctx, ctx.placement.vae, cfg);
    if (!kl.ok()) return kl.status();
    if (!taesd) return std::unique_ptr<Autoencoder>(std::move(*kl));
    auto a = TaesdAutoencoder::create(ctx, ctx.placement.vae, *taesd, std::move(*kl),
                                      ctx.options.taesd_preview_only);
    if (!a.ok()) return a.status();
    return std::unique_ptr<Autoencoder>(std::move(*a));
}

}  // namespace ggdiff
