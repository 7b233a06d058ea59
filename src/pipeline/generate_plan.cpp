#include "pipeline/generate_plan.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/log.h"
#include "image/image.h"
#include "pipeline/lora_tags.h"
#include "tokenizers/prompt_limits.h"

namespace ggdiff {
namespace {

// "96x64 or 104x64": the valid sizes on either side of a bad one.
std::string nearest_sizes(int w, int h, int m) {
    auto down = [m](int v) { return std::max(m, v / m * m); };
    auto up = [m](int v) { return std::max(m, (v + m - 1) / m * m); };
    std::string a = std::to_string(down(w)) + "x" + std::to_string(down(h));
    std::string b = std::to_string(up(w)) + "x" + std::to_string(up(h));
    return a == b ? a : a + " or " + b;
}

// --cache-mode with its --cache-option applied and checked. Keys that do nothing for the
// mode are warned about, and so are the SCM options: the reference engine parses them but
// its step-level cache-dit never reads them (nor warmup), and ggdiff decides as it does.
Result<sampling::CacheParams> plan_cache(const GenerateOptions& o) {
    sampling::CacheParams c = o.cache;
    const bool scm = !c.scm_mask.empty() || !c.scm_dynamic;
    if (c.mode == sampling::CacheMode::None) {
        if (!o.cache_option.empty() || scm) {
            GGDIFF_LOG_WARN(
                "--cache-option, --scm-mask and --scm-policy have no effect without --cache-mode");
        }
        return c;
    }
    std::vector<std::string> unused;
    GGDIFF_TRY(sampling::apply_cache_options(o.cache_option, c, &unused));
    GGDIFF_TRY(sampling::check_cache_params(c));
    const char* mode = sampling::cache_mode_name(c.mode);
    for (const std::string& key : unused) {
        GGDIFF_LOG_WARN("--cache-option %s has no effect with --cache-mode %s", key.c_str(), mode);
    }
    if (scm) {
        GGDIFF_LOG_WARN(
            "--scm-mask and --scm-policy have no effect: the step-level cache-dit modes decide "
            "by the change of the denoiser input only (as stable-diffusion.cpp does)");
    }
    return c;
}

// Skip-layer guidance asked of family `f`: only where its denoiser can skip blocks, and
// only blocks it has.
Status check_slg(const sampling::SlgParams& slg, const Family& f) {
    GGDIFF_TRY(check_slg_window(slg));
    if (slg.scale == 0.0f) return Status::Ok();
    if (!std::isfinite(slg.scale)) return Status::Error("--slg-scale must be a finite number");
    if (!f.skips_layers) {
        return Status::Error("--slg-scale: skip-layer guidance is not supported for " + f.name +
                             " (it works with FLUX and SD3)");
    }
    if (slg.layers.empty()) {
        return Status::Error(
            string_format("--slg-scale %g needs at least one block in --skip-layers", slg.scale));
    }
    for (const int l : slg.layers) {
        if (l < 0 || l >= f.skip_layer_count) {
            return Status::Error(
                string_format("--skip-layers: %s has no block %d (its blocks are 0..%d)",
                              f.name.c_str(), l, f.skip_layer_count - 1));
        }
    }
    return Status::Ok();
}

// --preview for this family: the projection or the TAESD it asks for must exist.
Status check_preview(const PreviewOptions& pv, const Family& f) {
    if (pv.interval < 1) return Status::Error("--preview-interval must be at least 1");
    if (pv.mode == PreviewMode::Proj && (f.latent_rgb == LatentRgb::None ||
                                         latent_rgb_channels(f.latent_rgb) != f.latent_channels)) {
        return Status::Error("--preview proj: no latent-to-RGB projection is known for " + f.name +
                             " models (--preview vae decodes the previews)");
    }
    if (pv.mode == PreviewMode::Tae && !f.vae->has_taesd()) {
        return Status::Error(
            "--preview tae needs a TAESD file (--taesd) for this model (--preview vae decodes "
            "with its VAE, --preview proj needs no decoder)");
    }
    return Status::Ok();
}

}  // namespace

Status check_slg_window(const sampling::SlgParams& slg) {
    auto fraction = [](float v) { return v >= 0.0f && v <= 1.0f; };
    if (!fraction(slg.start) || !fraction(slg.end)) {
        return Status::Error("--skip-layer-start and --skip-layer-end must be in [0, 1]");
    }
    if (slg.start > slg.end) {
        return Status::Error(string_format("--skip-layer-start %g is after --skip-layer-end %g",
                                           slg.start, slg.end));
    }
    return Status::Ok();
}

// The sampler asked for, or the family's default.
static Result<sampling::SamplerKind> sampler_or_default(
    const std::optional<sampling::SamplerKind>& asked, const Family& f) {
    if (asked) return *asked;
    return sampling::parse_sampler(f.defaults.sampler);
}

// The high-noise expert's part of plan `p` (its sigmas already cover both experts): `steps`
// of them, or with steps < 0 those whose sigma is at least --moe-boundary.
static Status plan_high_noise(const GenerateOptions& o, const Family& f, GeneratePlan& p,
                              int steps) {
    if (steps < 0) {
        steps = 0;
        for (size_t i = 0; i < p.sigmas.size(); ++i) {
            if (p.sigmas[i] < o.high_noise.moe_boundary) {
                steps = static_cast<int>(i);
                break;
            }
        }
    }
    steps = std::min(steps, static_cast<int>(p.sigmas.size()) - 1);
    if (steps <= 0) return Status::Ok();
    auto hp = std::make_shared<GeneratePlan>(p);
    hp->high_noise_steps = 0;
    hp->high_noise.reset();
    auto sampler = sampler_or_default(o.high_noise.sampler, f);
    if (!sampler.ok()) return sampler.status();
    hp->sampler = *sampler;
    hp->cfg_scale =
        std::isnan(o.high_noise.cfg_scale) ? f.defaults.cfg_scale : o.high_noise.cfg_scale;
    hp->use_img_uncond = false;
    hp->use_uncond = f.uses_cfg && hp->cfg_scale != 1.0f;
    hp->slg = sampling::SlgParams();
    hp->slg.scale = 0.0f;
    p.high_noise_steps = steps;
    p.high_noise = std::move(hp);
    if (!std::isnan(o.high_noise.eta)) p.high_noise_eta = o.high_noise.eta;
    GGDIFF_LOG_INFO("high-noise expert: the first %d of %d steps (%s, cfg %g)", steps,
                    static_cast<int>(p.sigmas.size()) - 1,
                    sampling::sampler_cli_name(p.high_noise->sampler), p.high_noise->cfg_scale);
    return Status::Ok();
}

int latent_frames(const Family& f, const GenerateOptions& o) {
    return f.latent_frames ? std::max(1, f.latent_frames(o)) : 1;
}

Result<GeneratePlan> plan_request(const GenerateOptions& o, const Family& f) {
    GeneratePlan p;
    p.width = o.width > 0 ? o.width : f.defaults.width;
    p.height = o.height > 0 ? o.height : f.defaults.height;
    const int m = std::max(8, f.size_multiple);
    // Without -W and -H the output takes the size of the first input image (the init image,
    // else the end frame, else the first reference image), rounded up to the model's
    // multiple, as sd-cli does.
    const Image* sized = o.init_image            ? &*o.init_image
                         : o.end_image           ? &*o.end_image
                         : !o.ref_images.empty() ? &o.ref_images[0]
                                                 : nullptr;
    if ((o.width <= 0 || o.height <= 0) && sized && sized->width > 0 && sized->height > 0) {
        p.width = (sized->width + m - 1) / m * m;
        p.height = (sized->height + m - 1) / m * m;
        if (p.width != sized->width || p.height != sized->height) {
            GGDIFF_LOG_WARN("no -W/-H: the input image is %dx%d; making %dx%d (multiples of %d)",
                            sized->width, sized->height, p.width, p.height, m);
        } else {
            GGDIFF_LOG_INFO("no -W/-H: the size of the input image, %dx%d", p.width, p.height);
        }
    }
    if (p.width < m || p.height < m || p.width % m || p.height % m) {
        if (m == 8) {
            return Status::Error(string_format(
                "size %dx%d: width and height must be multiples of 8, at least 8 (nearest: %s)",
                p.width, p.height, nearest_sizes(p.width, p.height, m).c_str()));
        }
        return Status::Error(string_format(
            "size %dx%d: this model needs width and height in multiples of %d (nearest: %s)",
            p.width, p.height, m, nearest_sizes(p.width, p.height, m).c_str()));
    }
    // Images past the writers' limits could never be saved: refuse before computing.
    GGDIFF_TRY(check_image_dimensions(p.width, p.height));
    if (o.steps <= 0) return Status::Error("--steps must be at least 1");
    if (!f.output_frames && o.video_frames > 1) {
        return Status::Error("--video-frames " + std::to_string(o.video_frames) + ": " + f.name +
                             " makes images, not videos (use a video model such as Wan)");
    }
    if (o.batch <= 0) return Status::Error("--batch-count must be at least 1");
    if (o.init_image && (o.strength <= 0.0f || o.strength > 1.0f)) {
        return Status::Error("--strength must be in (0, 1]");
    }
    if (o.init_image && !f.vae->can_encode()) {
        return Status::Error("this VAE has no encoder weights: img2img needs a full VAE");
    }
    if (o.end_image && !f.takes_end_image) {
        return Status::Error("--end-img is not supported for " + f.name +
                             " models (a first-last-frame video model, such as Wan FLF2V, "
                             "Wan I2V or LTX-2, takes it)");
    }
    if (!o.control_frames.empty() && !f.takes_control_video) {
        return Status::Error("--control-video is not supported for " + f.name +
                             " models (a Wan VACE model takes it)");
    }
    if (o.vace_strength != 1.0f && !f.takes_control_video) {
        return Status::Error("--vace-strength applies to Wan VACE models only, not to " + f.name);
    }
    if (o.end_image && !f.vae->can_encode()) {
        return Status::Error("this VAE has no encoder weights: --end-img needs a full VAE");
    }
    if (!o.ref_images.empty() && f.ref_image_multiple <= 0) {
        if (!f.ref_images_not_yet.empty()) return Status::Error(f.ref_images_not_yet);
        return Status::Error("--ref-image is not supported for " + f.name + " models");
    }
    if (!o.ref_images.empty() && !f.vae->can_encode()) {
        return Status::Error("this VAE has no encoder weights: reference images need a full VAE");
    }
    if (o.mask && !o.init_image) {
        return Status::Error(
            "--mask needs an init image (-i): the mask says which part of it "
            "to repaint");
    }
    if (o.control_image && !f.takes_control) {
        return Status::Error("--control-image needs a ControlNet for this model (--control-net)");
    }
    if (!(o.control_strength >= 0.0f))
        return Status::Error("--control-strength must be at least 0");
    if (!o.pulid_id_embedding.empty()) {
        if (!f.identity) {
            return Status::Error(
                "--pulid-id-embedding needs a FLUX.1 model loaded with PuLID-FLUX weights "
                "(--pulid-weights)");
        }
        auto id = f.identity(o);  // a bad file is refused before any compute
        if (!id.ok()) return id.status();
    }
    GGDIFF_TRY(check_slg(o.slg, f));
    p.slg = o.slg;
    auto cache = plan_cache(o);
    if (!cache.ok()) return cache.status();
    p.cache = std::move(*cache);
    GGDIFF_TRY(check_preview(o.preview, f));
    if (f.check_request) GGDIFF_TRY(f.check_request(o));
    GGDIFF_TRY(check_prompt_bytes(o.prompt.size(), "the prompt"));
    GGDIFF_TRY(check_prompt_bytes(o.negative_prompt.size(), "the negative prompt"));
    // The prompt's limits apply to what is tokenized: without its <lora:...> tags.
    std::vector<LoraRequest> tags;
    auto untagged = extract_lora_tags(o.prompt, &tags);
    if (!untagged.ok()) return untagged.status();
    TextRequest tr;
    tr.prompt = *untagged;
    tr.ref_images = &o.ref_images;  // for encoders that read them (or refuse them)
    GGDIFF_TRY(f.text->check(tr));
    tr.prompt = o.negative_prompt;
    tr.negative = true;
    GGDIFF_TRY(f.text->check(tr));

    p.cfg_scale = std::isnan(o.cfg_scale) ? f.defaults.cfg_scale : o.cfg_scale;
    // Image guidance acts on models given reference images; elsewhere it is dropped with a
    // warning, as stable-diffusion.cpp does.
    if (!std::isnan(o.img_cfg_scale)) {
        if (!std::isfinite(o.img_cfg_scale)) {
            return Status::Error("--img-cfg-scale must be a finite number");
        }
        if (o.ref_images.empty() || f.ref_image_multiple <= 0 || !f.uses_cfg ||
            !f.ref_image_guidance) {
            if (o.img_cfg_scale != 1.0f) {
                GGDIFF_LOG_WARN(
                    "--img-cfg-scale has no effect here: it guides by the reference images (-r) "
                    "of models that take them (FLUX.1 Kontext, FLUX.2, Qwen Image Edit)");
            }
        } else {
            p.img_cfg = o.img_cfg_scale;
        }
    }
    p.use_img_uncond = p.img_cfg != 1.0f;
    p.use_uncond = f.uses_cfg && (p.cfg_scale != 1.0f || p.img_cfg != p.cfg_scale);

    auto sampler = sampler_or_default(o.sampler, f);
    if (!sampler.ok()) return sampler.status();
    p.sampler = *sampler;
    p.rng = o.rng;
    p.sampler_rng = o.sampler_rng.value_or(o.rng);
    p.param = sampling::with_flow_shift(f.param, o.flow_shift);

    // With a high-noise expert the schedule covers its steps too (--high-noise-steps > 0).
    int high_noise_steps = f.high_noise ? o.high_noise.steps : 0;
    if (!o.sigmas.empty()) {
        p.sigmas = o.sigmas;
        const int total = static_cast<int>(p.sigmas.size()) - 1;
        if (high_noise_steps > 0) high_noise_steps = std::max(0, total - std::min(o.steps, total));
    } else {
        const int total = o.steps + std::max(0, high_noise_steps);
        auto s = schedule_sigmas(o, f, p, total, p.width, p.height);
        if (!s.ok()) return s.status();
        p.sigmas = std::move(*s);
    }
    // A family's own loop samples its own levels; the infotext keeps the sampler and schedule
    // asked for, as stable-diffusion.cpp's does.
    if (f.own_sampler) p.sigmas = f.own_sampler->sigmas(static_cast<int>(p.sigmas.size()) - 1);
    const int d = f.vae->downscale();
    p.latent_w = p.width / d;
    p.latent_h = p.height / d;
    p.frames = latent_frames(f, o);
    const int channels = f.request_latent_channels ? f.request_latent_channels(o, p.width, p.height)
                                                   : f.latent_channels;
    p.latent_c = static_cast<int64_t>(channels) * p.frames;
    // Last: the expert's plan is a copy of the finished one.
    if (f.high_noise) {
        GGDIFF_TRY(plan_high_noise(o, f, p, high_noise_steps));
    } else if (o.high_noise.any_set) {
        GGDIFF_LOG_WARN(
            "--high-noise-* sampling options and --moe-boundary have no effect without a "
            "high-noise expert "
            "(--high-noise-diffusion-model)");
    }
    return p;
}

Result<std::vector<float>> schedule_sigmas(const GenerateOptions& o, const Family& f,
                                           GeneratePlan& p, int steps, int width, int height) {
    // No --scheduler: the sampler's and the model's own default (lcm for lcm/tcd, simple for
    // ddim_trailing, exponential for EDM-v models; else the family's, else discrete), in
    // stable-diffusion.cpp's order: a sampler's own schedule comes before the family's.
    const sampling::ScheduleKind own = sampling::default_schedule(p.sampler, p.param);
    sampling::ScheduleKind kind = own;
    if (kind == sampling::ScheduleKind::Discrete && f.defaults.schedule) {
        kind = *f.defaults.schedule;
    }
    kind = o.scheduler.value_or(kind);
    p.schedule = kind;
    if (!o.scheduler && f.default_sigmas && own == sampling::ScheduleKind::Discrete) {
        p.schedule.reset();  // the family's own: no A1111 schedule name
        return f.default_sigmas(o, width, height, steps);
    }
    // Resolution-dependent schedules count the latent's pixels.
    sampling::ScheduleOptions so;
    so.image_seq_len =
        static_cast<int64_t>(width / f.vae->downscale()) * (height / f.vae->downscale());
    if (o.flow_shift) so.flux_mu = *o.flow_shift;
    return sampling::make_sigmas(kind, steps, p.param, so);
}

GenerationRngs GenerationRngs::make(const GeneratePlan& p, int64_t seed) {
    GenerationRngs r;
    r.noise = sampling::make_rng(p.rng, static_cast<uint64_t>(seed));
    r.sampler = p.sampler_rng == p.rng ? r.noise
                                       : std::shared_ptr<sampling::Rng>(sampling::make_rng(
                                             p.sampler_rng, static_cast<uint64_t>(seed)));
    return r;
}

void GenerationRngs::reseed(int64_t seed) {
    noise->manual_seed(static_cast<uint64_t>(seed));
    if (sampler != noise) sampler->manual_seed(static_cast<uint64_t>(seed));
}

}  // namespace ggdiff
