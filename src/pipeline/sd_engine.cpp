// The SD1.x / SD2.x recipe: CLIP text encoder -> UNet (eps or v) -> KL VAE.
#include "pipeline/sd_engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "core/log.h"
#include "devices/devices.h"
#include "image/infotext.h"
#include "io/weight_type.h"
#include "models/vae/tiling.h"
#include "pipeline/latent_image.h"
#include "pipeline/placement_setup.h"
#include "tokenizers/clip_tokenizer.h"
#include "tokenizers/find_tokenizer.h"
#include "tokenizers/token_windows.h"

namespace ggdiff {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

constexpr int kChunk = 77;

// Multiplies each token's hidden state by its prompt weight, then rescales the whole
// window so that its mean is what it was (A1111's emphasis rule).
void apply_token_weights(float* h, int64_t width, int64_t tokens, const float* weights) {
    const int64_t n = width * tokens;
    double before = 0.0;
    for (int64_t i = 0; i < n; ++i) before += h[i];
    before /= static_cast<double>(n);
    double after = 0.0;
    for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t i = 0; i < width; ++i) {
            h[t * width + i] *= weights[t];
            after += h[t * width + i];
        }
    }
    after /= static_cast<double>(n);
    if (after == 0.0) return;
    const float s = static_cast<float>(before / after);
    for (int64_t i = 0; i < n; ++i) h[i] *= s;
}

}  // namespace

Status SdEngine::init(const ModelOptions& opt, TensorIndex index) {
    index_ = std::move(index);
    threads_ = opt.threads > 0 ? opt.threads : default_threads();
    const std::string main_file = !opt.model.empty() ? opt.model : opt.diffusion_model;
    model_name_ = std::filesystem::path(main_file).stem().string();

    auto unet = models::detect_unet(index_);
    if (!unet.ok()) return unet.status();
    unet_cfg_ = *unet;
    auto clip = models::detect_clip_text(index_, "cond_stage_model.transformer.text_model.");
    if (!clip.ok()) return clip.status().with_context("text encoder");
    clip_cfg_ = *clip;
    auto vae = models::detect_vae(index_);
    if (!vae.ok()) return vae.status();
    vae_cfg_ = *vae;
    if (!opt.taesd.empty()) {
        auto taesd = models::detect_taesd(index_);
        if (!taesd.ok()) return taesd.status().with_context("--taesd " + opt.taesd);
        taesd_cfg_ = *taesd;
    }

    sd2_ = unet_cfg_.context_dim == 1024;
    family_ = sd2_ ? "SD2" : "SD1";
    pad_token_ = sd2_ ? 0 : 49407;
    default_clip_skip_ = sd2_ ? 2 : 1;
    if (clip_cfg_.width != unet_cfg_.context_dim) {
        return Status::Error(
            string_format("text encoder width %lld does not match the UNet's "
                          "context width %d",
                          static_cast<long long>(clip_cfg_.width), unet_cfg_.context_dim));
    }

    // Prediction: explicit flag, else what the checkpoint says.
    sampling::Prediction pred = sampling::Prediction::Eps;
    std::string p = opt.prediction;
    if (p.empty()) {
        for (const auto& [k, v] : index_.metadata()) {
            if ((k.find("prediction_type") != std::string::npos && v.rfind("v", 0) == 0) ||
                k == "v_pred") {
                p = "v";
            }
        }
        if (index_.has("v_pred")) p = "v";
    }
    if (p == "v") {
        pred = sampling::Prediction::V;
    } else if (!p.empty() && p != "eps") {
        return Status::Error("--prediction " + p + " does not apply to " + family_ +
                             " models (use eps or v)");
    }
    param_ = sampling::Parameterization::discrete(pred);

    // Tokenizer: merges embedded in the checkpoint, --tokenizer, or a diffusers folder.
    auto meta = index_.metadata().find("tokenizer.clip.merges");
    if (meta != index_.metadata().end() && opt.tokenizer.empty()) {
        auto t = ClipTokenizer::from_merges_text(meta->second);
        if (!t.ok()) return t.status().with_context("tokenizer in the checkpoint");
        tokenizer_.emplace(std::move(*t));
    } else {
        auto path = find_clip_merges(main_file, opt.tokenizer);
        if (!path.ok()) return path.status();
        auto t = ClipTokenizer::from_merges_file(*path);
        if (!t.ok()) return t.status();
        tokenizer_.emplace(std::move(*t));
    }

    int wtype = -1;
    if (!opt.weight_type.empty()) {
        auto t = parse_weight_type(opt.weight_type);
        if (!t.ok()) return t.status();
        wtype = *t;
    }

    GGDIFF_TRY(setup_modules(opt, wtype));
    return Status::Ok();
}

Status SdEngine::setup_modules(const ModelOptions& opt, int wtype) {
    auto placement = resolve_placement(opt, index_, wtype);
    if (!placement.ok()) return placement.status();
    auto_fit_ = placement->auto_fit;
    has_encoder_ = vae_cfg_.has_encoder;

    auto make = [&](std::unique_ptr<ModuleRunner>& m, const ModuleDevices& where, const char* label,
                    const BuildFn& declare) -> Status {
        auto t0 = Clock::now();
        m = std::make_unique<ModuleRunner>(index_, wtype, where, threads_, label);
        GGDIFF_TRY(m->prepare(declare));
        GGDIFF_LOG_DEBUG("%s: %zu tensors, %.1f MiB, ready in %.2fs", label, m->weights().count(),
                         m->weights().bytes() / 1048576.0, seconds_since(t0));
        return Status::Ok();
    };

    GGDIFF_TRY(make(te_, placement->te, "text encoder", [&](GraphBuilder& gb) {
        std::vector<int32_t> ids(kChunk, 0);
        ggml_tensor* t = gb.input_i32(ids, {kChunk, 1});
        return std::vector<ggml_tensor*>{models::build_clip_text(gb.nn(), clip_cfg_, t, 1)};
    }));
    GGDIFF_TRY(make(unet_, placement->diffusion, "UNet", [&](GraphBuilder& gb) {
        const int64_t s = spatial_multiple() / 8;
        HostTensor x({s, s, unet_cfg_.in_channels, 1});
        HostTensor t({1});
        HostTensor c({unet_cfg_.context_dim, kChunk, 1});
        return std::vector<ggml_tensor*>{
            models::build_unet(gb.nn(), unet_cfg_, gb.input(x), gb.input(t), gb.input(c))};
    }));
    GGDIFF_TRY(make(vae_, placement->vae, "VAE", [&](GraphBuilder& gb) {
        HostTensor z({8, 8, vae_cfg_.z_channels, 1});
        std::vector<ggml_tensor*> outs{models::build_vae_decode(gb.nn(), vae_cfg_, gb.input(z))};
        if (has_encoder_) {
            HostTensor img({64, 64, 3, 1});
            outs.push_back(models::build_vae_encode(gb.nn(), vae_cfg_, gb.input(img)));
        }
        return outs;
    }));
    if (taesd_cfg_) {
        // The tiny autoencoder decodes (and, when it has an encoder, encodes) instead.
        GGDIFF_TRY(make(taesd_, placement->vae, "TAESD", [&](GraphBuilder& gb) {
            HostTensor z({8, 8, taesd_cfg_->z_channels, 1});
            std::vector<ggml_tensor*> outs{
                models::build_taesd_decode(gb.nn(), *taesd_cfg_, gb.input(z))};
            if (taesd_cfg_->has_encoder) {
                HostTensor img({64, 64, 3, 1});
                outs.push_back(models::build_taesd_encode(gb.nn(), *taesd_cfg_, gb.input(img)));
            }
            return outs;
        }));
    }
    return Status::Ok();
}

int SdEngine::spatial_multiple() const {
    return 8 << std::max<int>(0, static_cast<int>(unet_cfg_.channel_mult.size()) - 1);
}

Result<HostTensor> SdEngine::encode_prompt(const std::string& prompt, int clip_skip) {
    TokenWindows tw = tokenize_weighted(*tokenizer_, prompt, pad_token_);
    const int64_t width = clip_cfg_.width;
    const int n = tw.n_windows;
    HostTensor out({width, static_cast<int64_t>(kChunk) * n, 1});
    for (int w = 0; w < n; ++w) {
        std::vector<int32_t> ids(tw.tokens.begin() + w * kChunk,
                                 tw.tokens.begin() + (w + 1) * kChunk);
        auto r = te_->run([&](GraphBuilder& gb) {
            ggml_tensor* t = gb.input_i32(ids, {kChunk, 1});
            return std::vector<ggml_tensor*>{
                models::build_clip_text(gb.nn(), clip_cfg_, t, clip_skip)};
        });
        if (!r.ok()) return r.status();
        HostTensor& h = (*r)[0];
        apply_token_weights(h.ptr(), width, kChunk, tw.weights.data() + w * kChunk);
        std::copy(h.data.begin(), h.data.end(), out.data.begin() + w * kChunk * width);
    }
    return out;
}

Result<HostTensor> SdEngine::run_unet(const HostTensor& x, const std::vector<float>& t,
                                      const HostTensor& context) {
    HostTensor ts({static_cast<int64_t>(t.size())});
    ts.data = t;
    auto r = unet_->run([&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{
            models::build_unet(gb.nn(), unet_cfg_, gb.input(x), gb.input(ts), gb.input(context))};
    });
    if (!r.ok()) return r.status();
    return std::move((*r)[0]);
}

Result<HostTensor> SdEngine::vae_decode(const HostTensor& latent, const TilingOptions& tiling) {
    HostTensor z = latent;
    // TAESD takes the diffusion latent as it is; the KL VAE its unscaled form.
    if (!taesd_) {
        for (float& v : z.data) v = v / vae_cfg_.scale_factor + vae_cfg_.shift_factor;
    }
    auto decode = [&](const HostTensor& in, HostTensor& out) -> Status {
        auto r = taesd_ ? taesd_->run([&](GraphBuilder& gb) {
            return std::vector<ggml_tensor*>{
                models::build_taesd_decode(gb.nn(), *taesd_cfg_, gb.input(in))};
        })
                        : vae_->run([&](GraphBuilder& gb) {
                              return std::vector<ggml_tensor*>{
                                  models::build_vae_decode(gb.nn(), vae_cfg_, gb.input(in))};
                          });
        if (!r.ok()) return r.status();
        out = std::move((*r)[0]);
        return Status::Ok();
    };
    HostTensor img;
    if (tiling.enabled) {
        models::TileOptions to;
        to.tile_w = tiling.tile_w;
        to.tile_h = tiling.tile_h;
        to.overlap = tiling.overlap;
        GGDIFF_TRY(models::run_tiled(z, img, 8.0f, to, decode));
    } else {
        GGDIFF_TRY(decode(z, img));
    }
    return img;
}

Result<HostTensor> SdEngine::vae_encode(const HostTensor& image, sampling::Rng& rng) {
    if (taesd_ && taesd_cfg_->has_encoder) {
        // The tiny encoder gives the latent directly: no sampling, no scaling.
        auto r = taesd_->run([&](GraphBuilder& gb) {
            return std::vector<ggml_tensor*>{
                models::build_taesd_encode(gb.nn(), *taesd_cfg_, gb.input(image))};
        });
        if (!r.ok()) return r.status();
        return std::move((*r)[0]);
    }
    if (!has_encoder_) {
        return Status::Error("this VAE has no encoder weights: img2img needs a full VAE");
    }
    auto r = vae_->run([&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{
            models::build_vae_encode(gb.nn(), vae_cfg_, gb.input(image))};
    });
    if (!r.ok()) return r.status();
    const HostTensor& moments = (*r)[0];
    // Sample the diagonal Gaussian: mean + exp(logvar / 2) * noise.
    const int64_t w = moments.dim(0), h = moments.dim(1), c = moments.dim(2) / 2;
    HostTensor latent({w, h, c, 1});
    const std::vector<float> noise = rng.randn(static_cast<size_t>(latent.numel()));
    const int64_t plane = w * h;
    for (int64_t ch = 0; ch < c; ++ch) {
        for (int64_t i = 0; i < plane; ++i) {
            const float mean = moments.data[ch * plane + i];
            float logvar = moments.data[(ch + c) * plane + i];
            logvar = std::max(-30.0f, std::min(logvar, 20.0f));
            const float v = mean + std::exp(0.5f * logvar) * noise[ch * plane + i];
            latent.data[ch * plane + i] = (v - vae_cfg_.shift_factor) * vae_cfg_.scale_factor;
        }
    }
    return latent;
}

Result<std::vector<GeneratedImage>> SdEngine::generate(const GenerateOptions& o,
                                                       const ProgressFn& progress,
                                                       const ImageFn& on_image) {
    // Validate everything before any compute.
    const int mult = spatial_multiple();
    if (o.width <= 0 || o.height <= 0 || o.width % 8 || o.height % 8) {
        return Status::Error(
            string_format("size %dx%d: width and height must be positive "
                          "multiples of 8",
                          o.width, o.height));
    }
    // Images past the writers' limits could never be saved: refuse before computing.
    Status dims = check_image_dimensions(o.width, o.height);
    if (!dims.ok()) return dims;
    if (o.width % mult || o.height % mult) {
        return Status::Error(
            string_format("size %dx%d: this model needs width and height in "
                          "multiples of %d",
                          o.width, o.height, mult));
    }
    if (o.steps <= 0) return Status::Error("--steps must be at least 1");
    if (o.batch <= 0) return Status::Error("--batch-count must be at least 1");
    if (o.init_image && (o.strength <= 0.0f || o.strength > 1.0f)) {
        return Status::Error("--strength must be in (0, 1]");
    }
    auto sampler = sampling::parse_sampler(o.sampler.empty() ? "euler_a" : o.sampler);
    if (!sampler.ok()) return sampler.status();
    auto schedule = sampling::parse_schedule(o.scheduler.empty() ? "discrete" : o.scheduler);
    if (!schedule.ok()) return schedule.status();
    auto rng_kind = sampling::parse_rng(o.rng.empty() ? "cuda" : o.rng);
    if (!rng_kind.ok()) return rng_kind.status();
    auto sampler_rng_kind = o.sampler_rng.empty() ? rng_kind : sampling::parse_rng(o.sampler_rng);
    if (!sampler_rng_kind.ok()) return sampler_rng_kind.status();

    std::vector<float> sigmas;
    if (!o.sigmas.empty()) {
        auto s = sampling::parse_sigmas(o.sigmas);
        if (!s.ok()) return s.status();
        sigmas = *s;
    } else {
        auto s = sampling::make_sigmas(*schedule, o.steps, param_);
        if (!s.ok()) return s.status();
        sigmas = *s;
    }

    const int clip_skip = o.clip_skip > 0 ? o.clip_skip : default_clip_skip_;
    const int64_t lw = o.width / 8, lh = o.height / 8, lc = unet_cfg_.in_channels;

    // Text conditioning.
    auto t0 = Clock::now();
    auto cond = encode_prompt(o.prompt, clip_skip);
    if (!cond.ok()) return cond.status();
    const bool use_uncond = o.cfg_scale != 1.0f;
    HostTensor uncond;
    if (use_uncond) {
        auto u = encode_prompt(o.negative_prompt, clip_skip);
        if (!u.ok()) return u.status();
        uncond = std::move(*u);
    }
    te_->end_phase();
    timings_.text = seconds_since(t0);
    GGDIFF_LOG_DEBUG("text encoding: %.2fs", timings_.text);
    if (progress && !progress("text", 1, 1, timings_.text)) return Status::Error("cancelled");

    std::shared_ptr<sampling::Rng> rng =
        sampling::make_rng(*rng_kind, static_cast<uint64_t>(o.seed));
    std::shared_ptr<sampling::Rng> sampler_rng =
        *sampler_rng_kind == *rng_kind ? rng
                                       : std::shared_ptr<sampling::Rng>(sampling::make_rng(
                                             *sampler_rng_kind, static_cast<uint64_t>(o.seed)));

    // img2img: encode the init image once (its Gaussian sample uses the first seed).
    HostTensor init_latent({lw, lh, lc, 1});
    if (o.init_image) {
        auto t1 = Clock::now();
        Image img = o.init_image->width == o.width && o.init_image->height == o.height
                        ? *o.init_image
                        : resize_image(*o.init_image, o.width, o.height);
        auto enc = vae_encode(image_to_tensor(img), *rng);
        if (!enc.ok()) return enc.status().with_context("encoding the init image");
        init_latent = std::move(*enc);
        sigmas = sampling::img2img_sigmas(sigmas, o.strength);
        timings_.encode = seconds_since(t1);
        GGDIFF_LOG_DEBUG("init image encoding: %.2fs", timings_.encode);
        if (progress && !progress("encode", 1, 1, timings_.encode))
            return Status::Error("cancelled");
    }

    std::vector<GeneratedImage> results;
    timings_.steps.clear();
    for (int b = 0; b < o.batch; ++b) {
        const int64_t seed = o.seed + b;
        rng->manual_seed(static_cast<uint64_t>(seed));
        if (sampler_rng != rng) sampler_rng->manual_seed(static_cast<uint64_t>(seed));
        std::vector<float> x = rng->randn(static_cast<size_t>(lw * lh * lc));
        for (size_t i = 0; i < x.size(); ++i) x[i] = init_latent.data[i] + x[i] * sigmas[0];

        const bool batched = use_uncond && uncond.ne == cond->ne;
        auto denoise = [&](const std::vector<float>& xin, float sigma, int step,
                           bool need_uncond) -> Result<sampling::DenoiseResult> {
            (void)step;
            const auto sc = param_.scalings(sigma);
            const float t = param_.sigma_to_t(sigma);
            const size_t n = xin.size();
            std::vector<float> out_c, out_u;
            if (batched) {
                HostTensor xb({lw, lh, lc, 2});
                for (size_t i = 0; i < n; ++i) xb.data[i] = xb.data[n + i] = xin[i] * sc.c_in;
                HostTensor ctx({cond->ne[0], cond->ne[1], 2});
                std::copy(cond->data.begin(), cond->data.end(), ctx.data.begin());
                std::copy(uncond.data.begin(), uncond.data.end(),
                          ctx.data.begin() + static_cast<long>(cond->data.size()));
                auto r = run_unet(xb, {t, t}, ctx);
                if (!r.ok()) return r.status();
                out_c.assign(r->data.begin(), r->data.begin() + static_cast<long>(n));
                out_u.assign(r->data.begin() + static_cast<long>(n), r->data.end());
            } else {
                HostTensor x1({lw, lh, lc, 1});
                for (size_t i = 0; i < n; ++i) x1.data[i] = xin[i] * sc.c_in;
                auto r = run_unet(x1, {t}, *cond);
                if (!r.ok()) return r.status();
                out_c = std::move(r->data);
                if (use_uncond) {
                    auto ru = run_unet(x1, {t}, uncond);
                    if (!ru.ok()) return ru.status();
                    out_u = std::move(ru->data);
                }
            }
            sampling::DenoiseResult res;
            res.denoised.resize(n);
            for (size_t i = 0; i < n; ++i) {
                const float g =
                    use_uncond ? out_u[i] + o.cfg_scale * (out_c[i] - out_u[i]) : out_c[i];
                res.denoised[i] = g * sc.c_out + xin[i] * sc.c_skip;
            }
            if (need_uncond) {
                res.uncond_denoised.resize(n);
                const std::vector<float>& u = use_uncond ? out_u : out_c;
                for (size_t i = 0; i < n; ++i)
                    res.uncond_denoised[i] = u[i] * sc.c_out + xin[i] * sc.c_skip;
            }
            return res;
        };

        sampling::SamplerOptions so;
        so.eta = o.eta;
        so.seed = static_cast<uint64_t>(seed);
        auto ts = Clock::now();
        const int total = static_cast<int>(sigmas.size()) - 1;
        const std::string phase =
            o.batch > 1 ? string_format("sampling %d/%d", b + 1, o.batch) : std::string("sampling");
        so.on_step = [&](int step, int n_steps) {
            (void)n_steps;
            return progress ? progress(phase, step, total, seconds_since(ts)) : true;
        };
        Status st = sampling::sample(*sampler, denoise, x, sigmas, *sampler_rng, so);
        if (!st.ok()) return st;
        timings_.steps.push_back(seconds_since(ts) / std::max(1, total));

        if (b + 1 == o.batch) unet_->end_phase();
        auto td = Clock::now();
        HostTensor latent({lw, lh, lc, 1});
        latent.data = std::move(x);
        auto img = vae_decode(latent, o.vae_tiling);
        if (!img.ok() && auto_fit_ && !o.vae_tiling.enabled) {
            // Under auto-fit a decode that does not fit is retried once with tiling.
            GGDIFF_LOG_WARN("VAE decode failed (%s); retrying with 256x256 tiles",
                            img.status().message().c_str());
            TilingOptions tiles;
            tiles.enabled = true;
            img = vae_decode(latent, tiles);
        }
        if (b + 1 == o.batch) {
            vae_->end_phase();
            if (taesd_) taesd_->end_phase();
        }
        if (!img.ok()) return img.status().with_context("VAE decode");
        timings_.decode = seconds_since(td);
        GGDIFF_LOG_DEBUG("VAE decode: %.2fs", timings_.decode);
        if (progress) progress("decode", 1, 1, timings_.decode);

        GeneratedImage g;
        g.image = tensor_to_image(*img);
        g.seed = seed;
        GenerationInfo info;
        info.prompt = o.prompt;
        info.negative_prompt = o.negative_prompt;
        info.steps = o.steps;
        info.sampler = sampling::sampler_a1111_name(*sampler);
        if (!o.scheduler.empty()) info.schedule = sampling::schedule_a1111_name(*schedule);
        info.cfg_scale = o.cfg_scale;
        info.seed = seed;
        info.width = o.width;
        info.height = o.height;
        info.model = o.output_model_name.empty() ? model_name_ : o.output_model_name;
        if (o.clip_skip > 0) info.clip_skip = o.clip_skip;
        if (o.init_image) info.denoising_strength = o.strength;
        info.rng = o.rng.empty() ? "cuda" : o.rng;
        g.infotext = format_infotext(info);
        if (on_image) on_image(g);
        results.push_back(std::move(g));
    }
    return results;
}

}  // namespace ggdiff
