#include "families/flux2/vae.h"

#include "pipeline/parts/kl_autoencoder.h"

namespace ggdiff {
namespace {

constexpr int64_t kVaeChannels = 32;
constexpr int64_t kChannels = 128;  // 32 x 2 x 2

// Per patchified channel, the FLUX.2 VAE's batch-norm running mean and standard deviation.
constexpr float kLatentMean[128] = {
    -0.0676f, -0.0715f, -0.0753f, -0.0745f, 0.0223f,  0.018f,   0.0142f,  0.0184f,  -0.0001f,
    -0.0063f, -0.0002f, -0.0031f, -0.0272f, -0.0281f, -0.0276f, -0.029f,  -0.0769f, -0.0672f,
    -0.0902f, -0.0892f, 0.0168f,  0.0152f,  0.0079f,  0.0086f,  0.0083f,  0.0015f,  0.0003f,
    -0.0043f, -0.0439f, -0.0419f, -0.0438f, -0.0431f, -0.0102f, -0.0132f, -0.0066f, -0.0048f,
    -0.0311f, -0.0306f, -0.0279f, -0.018f,  0.003f,   0.0015f,  0.0126f,  0.0145f,  0.0347f,
    0.0338f,  0.0337f,  0.0283f,  0.002f,   0.0047f,  0.0047f,  0.005f,   0.0123f,  0.0081f,
    0.0081f,  0.0146f,  0.0681f,  0.0679f,  0.0767f,  0.0732f,  -0.0462f, -0.0474f, -0.0392f,
    -0.0511f, -0.0528f, -0.0477f, -0.047f,  -0.0517f, -0.0317f, -0.0316f, -0.0345f, -0.0283f,
    0.051f,   0.0445f,  0.0578f,  0.0458f,  -0.0412f, -0.0458f, -0.0487f, -0.0467f, -0.0088f,
    -0.0106f, -0.0088f, -0.0046f, -0.0376f, -0.0432f, -0.0436f, -0.0499f, 0.0118f,  0.0166f,
    0.0203f,  0.0279f,  0.0113f,  0.0129f,  0.0016f,  0.0072f,  -0.0118f, -0.0018f, -0.0141f,
    -0.0054f, -0.0091f, -0.0138f, -0.0145f, -0.0187f, 0.0323f,  0.0305f,  0.0259f,  0.03f,
    0.054f,   0.0614f,  0.0495f,  0.059f,   -0.0511f, -0.0603f, -0.0478f, -0.0524f, -0.0227f,
    -0.0274f, -0.0154f, -0.0255f, -0.0572f, -0.0565f, -0.0518f, -0.0496f, 0.0116f,  0.0054f,
    0.0163f,  0.0104f,
};
constexpr float kLatentStd[128] = {
    1.8029f, 1.7786f, 1.7868f, 1.7837f, 1.7717f, 1.759f,  1.761f,  1.7479f, 1.7336f, 1.7373f,
    1.734f,  1.7343f, 1.8626f, 1.8527f, 1.8629f, 1.8589f, 1.7593f, 1.7526f, 1.7556f, 1.7583f,
    1.7363f, 1.74f,   1.7355f, 1.7394f, 1.7342f, 1.7246f, 1.7392f, 1.7304f, 1.7551f, 1.7513f,
    1.7559f, 1.7488f, 1.8449f, 1.8454f, 1.855f,  1.8535f, 1.824f,  1.7813f, 1.7854f, 1.7945f,
    1.8047f, 1.7876f, 1.7695f, 1.7676f, 1.7782f, 1.7667f, 1.7925f, 1.7848f, 1.7579f, 1.7407f,
    1.7483f, 1.7368f, 1.7961f, 1.7998f, 1.792f,  1.7925f, 1.778f,  1.7747f, 1.7727f, 1.7749f,
    1.7526f, 1.7447f, 1.7657f, 1.7495f, 1.7775f, 1.772f,  1.7813f, 1.7813f, 1.8162f, 1.8013f,
    1.8023f, 1.8033f, 1.7527f, 1.7331f, 1.7563f, 1.7482f, 1.761f,  1.7507f, 1.7681f, 1.7613f,
    1.7665f, 1.7545f, 1.7828f, 1.7726f, 1.7896f, 1.7999f, 1.7864f, 1.776f,  1.7613f, 1.7625f,
    1.756f,  1.7577f, 1.7783f, 1.7671f, 1.781f,  1.7799f, 1.7201f, 1.7068f, 1.7265f, 1.7091f,
    1.7793f, 1.7578f, 1.7502f, 1.7455f, 1.7587f, 1.75f,   1.7525f, 1.7362f, 1.7616f, 1.7572f,
    1.7444f, 1.743f,  1.7509f, 1.761f,  1.7634f, 1.7612f, 1.7254f, 1.7135f, 1.7321f, 1.7226f,
    1.7664f, 1.7624f, 1.7718f, 1.7664f, 1.7457f, 1.7441f, 1.7569f, 1.753f,
};

// Walks the 2x2 patches of a [2w, 2h, 32] latent: f(index in the VAE latent, index in the
// patchified [w, h, 128] one, patchified channel).
template <typename F>
void for_each_patch_value(int64_t w, int64_t h, F f) {
    for (int64_t c = 0; c < kVaeChannels; ++c) {
        for (int64_t y = 0; y < 2 * h; ++y) {
            for (int64_t x = 0; x < 2 * w; ++x) {
                const int64_t ch = c * 4 + (y % 2) * 2 + (x % 2);
                f((c * 2 * h + y) * 2 * w + x, (ch * h + y / 2) * w + x / 2, ch);
            }
        }
    }
}

}  // namespace

HostTensor flux2_vae_to_diffusion(const HostTensor& vae_latent) {
    const int64_t w = vae_latent.dim(0) / 2, h = vae_latent.dim(1) / 2;
    HostTensor out({w, h, kChannels, 1});
    for_each_patch_value(w, h, [&](int64_t from, int64_t to, int64_t ch) {
        out.data[to] = (vae_latent.data[from] - kLatentMean[ch]) / kLatentStd[ch];
    });
    return out;
}

HostTensor flux2_diffusion_to_vae(const HostTensor& latent) {
    const int64_t w = latent.dim(0), h = latent.dim(1);
    HostTensor out({2 * w, 2 * h, kVaeChannels, 1});
    for_each_patch_value(w, h, [&](int64_t to, int64_t from, int64_t ch) {
        out.data[to] = latent.data[from] * kLatentStd[ch] + kLatentMean[ch];
    });
    return out;
}

Result<std::unique_ptr<Flux2Autoencoder>> Flux2Autoencoder::create(const FamilyContext& ctx,
                                                                   const ModuleDevices& where,
                                                                   const models::VaeConfig& cfg) {
    if (cfg.z_channels != kVaeChannels) {
        return Status::Error(
            "FLUX.2 needs its 32-channel VAE (flux2-vae.safetensors); this VAE has " +
            std::to_string(cfg.z_channels) + " latent channels");
    }
    auto a = std::unique_ptr<Flux2Autoencoder>(new Flux2Autoencoder());
    a->cfg_ = cfg;
    auto runner = make_kl_vae_module(ctx, where, cfg);
    if (!runner.ok()) return runner.status();
    a->runner_ = std::move(*runner);
    return a;
}

Result<HostTensor> Flux2Autoencoder::decode(const HostTensor& latent) {
    if (latent.dim(2) != kChannels) {
        return Status::Error("FLUX.2 VAE: a latent of " + std::to_string(latent.dim(2)) +
                             " channels, expected 128");
    }
    const HostTensor z = flux2_diffusion_to_vae(latent);
    auto r = runner_->run([&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{models::build_vae_decode(gb.nn(), cfg_, gb.input(z))};
    });
    if (!r.ok()) return r.status();
    return std::move((*r)[0]);
}

Result<HostTensor> Flux2Autoencoder::encode(const HostTensor& image, sampling::Rng&) {
    if (!cfg_.has_encoder) {
        return Status::Error("this VAE has no encoder weights: img2img and -r need a full VAE");
    }
    auto r = runner_->run([&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{models::build_vae_encode(gb.nn(), cfg_, gb.input(image))};
    });
    if (!r.ok()) return r.status();
    const HostTensor& moments = (*r)[0];
    // The mean half; odd latent sides lose their last row/column to the 2x2 patches.
    const int64_t w = moments.dim(0), h = moments.dim(1);
    HostTensor mean({w / 2 * 2, h / 2 * 2, kVaeChannels, 1});
    for (int64_t c = 0; c < kVaeChannels; ++c) {
        for (int64_t y = 0; y < mean.dim(1); ++y) {
            for (int64_t x = 0; x < mean.dim(0); ++x) {
                mean.data[(c * mean.dim(1) + y) * mean.dim(0) + x] =
                    moments.data[(c * h + y) * w + x];
            }
        }
    }
    return flux2_vae_to_diffusion(mean);
}

}  // namespace ggdiff
