// The one generic generate path every family goes through: request validation and
// defaults, text conditioning, seeds and the batch-seed rule, img2img, the sampler loop
// with guidance, VAE decode with the auto-fit tiling retry, and the infotext. With
// data-parallel replicas each one runs this path for its share of the batch items, on its
// own thread (pipeline/batch_run.h coordinates them).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>

#include "core/log.h"
#include "core/process_memory.h"
#include "image/infotext.h"
#include "models/vae/tiling.h"
#include "pipeline/batch_run.h"
#include "pipeline/engine.h"
#include "pipeline/image_conditions.h"
#include "pipeline/latent_image.h"
#include "placement/data_parallel.h"
#include "runtime/graph_runner.h"
#include "runtime/segment_runner.h"
#include "sampling/sampling.h"
#include "tokenizers/prompt_limits.h"

namespace ggdiff {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A request with every default filled in and every name parsed.
struct Plan {
    int width = 0, height = 0;
    float cfg_scale = 7.0f;
    bool use_uncond = false;
    sampling::SamplerKind sampler = sampling::SamplerKind::EulerA;
    std::optional<sampling::ScheduleKind> schedule;  // unset with --sigmas
    sampling::RngKind rng = sampling::RngKind::Cuda;
    sampling::RngKind sampler_rng = sampling::RngKind::Cuda;
    // The family's parameterization with --flow-shift applied (flow models only).
    sampling::Parameterization param = sampling::Parameterization::discrete();
    std::vector<float> sigmas;
    int64_t latent_w = 0, latent_h = 0, latent_c = 0;
    int frames = 1;  // images per latent (layers)
};

// "96x64 or 104x64": the valid sizes on either side of a bad one.
std::string nearest_sizes(int w, int h, int m) {
    auto down = [m](int v) { return std::max(m, v / m * m); };
    auto up = [m](int v) { return std::max(m, (v + m - 1) / m * m); };
    std::string a = std::to_string(down(w)) + "x" + std::to_string(down(h));
    std::string b = std::to_string(up(w)) + "x" + std::to_string(up(h));
    return a == b ? a : a + " or " + b;
}

Result<Plan> plan_request(const GenerateOptions& o, const Family& f) {
    Plan p;
    p.width = o.width > 0 ? o.width : f.defaults.width;
    p.height = o.height > 0 ? o.height : f.defaults.height;
    const int m = std::max(8, f.size_multiple);
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
    if (o.batch <= 0) return Status::Error("--batch-count must be at least 1");
    if (o.init_image && (o.strength <= 0.0f || o.strength > 1.0f)) {
        return Status::Error("--strength must be in (0, 1]");
    }
    if (o.init_image && !f.vae->can_encode()) {
        return Status::Error("this VAE has no encoder weights: img2img needs a full VAE");
    }
    if (!o.ref_images.empty() && f.ref_image_multiple <= 0) {
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
    if (f.check_request) GGDIFF_TRY(f.check_request(o));
    GGDIFF_TRY(check_prompt_bytes(o.prompt.size(), "the prompt"));
    GGDIFF_TRY(check_prompt_bytes(o.negative_prompt.size(), "the negative prompt"));
    // The prompt's limits apply to what is tokenized: without its <lora:...> tags.
    std::vector<LoraRequest> tags;
    auto untagged = extract_lora_tags(o.prompt, &tags);
    if (!untagged.ok()) return untagged.status();
    TextRequest tr;
    tr.prompt = *untagged;
    GGDIFF_TRY(f.text->check(tr));
    tr.prompt = o.negative_prompt;
    tr.negative = true;
    GGDIFF_TRY(f.text->check(tr));

    p.cfg_scale = std::isnan(o.cfg_scale) ? f.defaults.cfg_scale : o.cfg_scale;
    p.use_uncond = f.uses_cfg && p.cfg_scale != 1.0f;

    if (o.sampler) {
        p.sampler = *o.sampler;
    } else {
        auto sampler = sampling::parse_sampler(f.defaults.sampler);
        if (!sampler.ok()) return sampler.status();
        p.sampler = *sampler;
    }
    p.rng = o.rng;
    p.sampler_rng = o.sampler_rng.value_or(o.rng);
    p.param = sampling::with_flow_shift(f.param, o.flow_shift);

    if (!o.sigmas.empty()) {
        p.sigmas = o.sigmas;
    } else {
        // No --scheduler: the sampler's and the model's own default (lcm for lcm/tcd,
        // simple for ddim_trailing, exponential for EDM-v models, else discrete).
        sampling::ScheduleKind kind = sampling::default_schedule(p.sampler, p.param);
        if (kind == sampling::ScheduleKind::Discrete && f.defaults.schedule) {
            kind = *f.defaults.schedule;
        }
        kind = o.scheduler.value_or(kind);
        p.schedule = kind;
        // Resolution-dependent schedules count the latent's pixels.
        sampling::ScheduleOptions so;
        so.image_seq_len =
            static_cast<int64_t>(p.width / f.vae->downscale()) * (p.height / f.vae->downscale());
        if (o.flow_shift) so.flux_mu = *o.flow_shift;
        auto s = sampling::make_sigmas(kind, o.steps, p.param, so);
        if (!s.ok()) return s.status();
        p.sigmas = std::move(*s);
    }
    const int d = f.vae->downscale();
    p.latent_w = p.width / d;
    p.latent_h = p.height / d;
    p.frames = f.latent_frames ? std::max(1, f.latent_frames(o)) : 1;
    p.latent_c = static_cast<int64_t>(f.latent_channels) * p.frames;
    return p;
}

// A reference image's size for the VAE: about the output's pixel count (at most 1024x1024)
// with the image's aspect, in multiples of m (stable-diffusion.cpp's automatic resize).
std::pair<int, int> ref_image_size(const Image& img, int width, int height, int m) {
    const double pixels = std::min(1024.0 * 1024.0, static_cast<double>(width) * height);
    const double w = std::sqrt(pixels * img.width / img.height);
    const double h = w * img.height / img.width;
    return {std::max(m, static_cast<int>(std::lround(w / m)) * m),
            std::max(m, static_cast<int>(std::lround(h / m)) * m)};
}

std::vector<float> slice(const std::vector<float>& v, size_t offset, size_t n) {
    return std::vector<float>(v.begin() + static_cast<long>(offset),
                              v.begin() + static_cast<long>(offset + n));
}

// Holds the mutexes of the devices a replica shares with others (Engine::Replica) for one
// phase; they are listed in one global order, and no thread holds two sets at once.
class LockSet {
  public:
    explicit LockSet(const std::vector<std::mutex*>& mutexes) : mutexes_(mutexes) {
        for (std::mutex* m : mutexes_) m->lock();
    }
    ~LockSet() {
        for (auto it = mutexes_.rbegin(); it != mutexes_.rend(); ++it) (*it)->unlock();
    }
    LockSet(const LockSet&) = delete;
    LockSet& operator=(const LockSet&) = delete;

  private:
    const std::vector<std::mutex*>& mutexes_;
};

// One replica's share of a generate() call.
struct ReplicaJob {
    const Plan& plan;
    const GenerateOptions& o;
    const std::string& prompt;  // without its LoRA tags
    const std::vector<LoraRequest>& loras;
    size_t index = 0;        // replica index
    std::vector<int> items;  // batch items, in order
    bool alone = true;       // no other replica computes meanwhile
    bool auto_fit = false;
    std::string model_name;
};

// Runs `job` on `replica`: its LoRAs, text conditioning, init and reference images, then
// each item's sampling and decode; the images go to `run` by item. Its phase timings go to
// `t`, the seconds per step of each item to `step_secs[item]`.
Status run_replica(Engine::Replica& replica, const ReplicaJob& job, BatchRun& run, PhaseTimings& t,
                   std::vector<double>& step_secs) {
    Family& f = replica.family;
    const Plan& p = job.plan;
    const GenerateOptions& o = job.o;
    std::vector<float> sigmas = p.sigmas;
    std::optional<LockSet> prepare_lock;
    prepare_lock.emplace(replica.prepare_locks);

    auto tl = Clock::now();
    GGDIFF_TRY(replica.lora->apply(f, job.loras));
    t.lora = seconds_since(tl);
    if (!job.loras.empty() && !run.phase("lora", 1, 1, t.lora)) {
        return Status::Error("cancelled");
    }

    // Text conditioning.
    auto t0 = Clock::now();
    TextRequest tr;
    tr.prompt = job.prompt;
    tr.clip_skip = o.clip_skip;
    tr.width = p.width;
    tr.height = p.height;
    // Each phase's figures: flops this replica computed, and the process's peak resident set
    // at its end; with --phase-peaks (ggdiff-bench) the peak restarts at each phase, which
    // also hides the earlier peak from tools that read it at exit (time -v), so only on
    // request (and not while other replicas compute).
    const bool phase_peaks = o.phase_peaks && job.alone;
    double flops_mark = computed_flops_on_this_thread();
    uint64_t upload_mark = uploaded_weight_bytes();
    if (phase_peaks) reset_peak_resident();
    auto close_phase = [&flops_mark, &upload_mark, phase_peaks](PhaseFigures& fig) {
        fig.flops += computed_flops_on_this_thread() - flops_mark;
        fig.uploaded += uploaded_weight_bytes() - upload_mark;
        fig.peak_rss = std::max(fig.peak_rss, peak_resident_bytes());
        if (phase_peaks) reset_peak_resident();
        flops_mark = computed_flops_on_this_thread();
        upload_mark = uploaded_weight_bytes();
    };
    auto cond = f.text->encode(tr);
    if (!cond.ok()) return cond.status();
    Conditioning uncond;
    if (p.use_uncond) {
        tr.prompt = o.negative_prompt;
        tr.negative = true;
        auto u = f.text->encode(tr);
        if (!u.ok()) return u.status();
        uncond = std::move(*u);
    }
    f.text->end_phase();
    close_phase(t.text_figures);
    t.text = seconds_since(t0);
    GGDIFF_LOG_DEBUG("text encoding: %.2fs", t.text);
    if (!run.phase("text", 1, 1, t.text)) return Status::Error("cancelled");

    std::shared_ptr<sampling::Rng> rng = sampling::make_rng(p.rng, static_cast<uint64_t>(o.seed));
    std::shared_ptr<sampling::Rng> sampler_rng =
        p.sampler_rng == p.rng ? rng
                               : std::shared_ptr<sampling::Rng>(sampling::make_rng(
                                     p.sampler_rng, static_cast<uint64_t>(o.seed)));

    // ControlNet condition: the control image at the output size.
    std::optional<ControlHint> control;
    if (o.control_image) {
        control =
            make_control_hint(*o.control_image, p.width, p.height, o.canny, o.control_strength);
    } else if (f.takes_control && job.index == 0) {
        GGDIFF_LOG_WARN("a ControlNet is loaded but no --control-image is given: it is not used");
    }

    // img2img: encode the init image once (its posterior sample uses the first seed).
    const size_t n = static_cast<size_t>(p.latent_w * p.latent_h * p.latent_c);
    const size_t plane = static_cast<size_t>(p.latent_w * p.latent_h);
    std::vector<float> init_latent;
    // Inpainting: the extra denoiser input of inpainting models (mask + masked-image
    // latent), and per latent pixel how much of each denoised prediction to keep (the rest
    // is the init latent); empty when unused.
    HostTensor inpaint_input;
    std::vector<float> keep_denoised;
    if (o.init_image) {
        auto t1 = Clock::now();
        const Image img = o.init_image->width == p.width && o.init_image->height == p.height
                              ? *o.init_image
                              : resize_image(*o.init_image, p.width, p.height);
        auto encode = [&](HostTensor t, const char* what) -> Result<HostTensor> {
            auto enc = f.vae->encode(t, *rng);
            if (!enc.ok()) return enc.status().with_context(std::string("encoding ") + what);
            if (static_cast<size_t>(enc->numel()) * p.frames != n) {
                return Status::Error(std::string("encoding ") + what +
                                     ": the VAE's latent does not match the denoiser's");
            }
            return enc;
        };
        const HostTensor pixels = f.image_input ? f.image_input(img) : image_to_tensor(img);
        // Inpainting models repaint where the (rounded) mask is white, all of it without one.
        std::vector<float> mask;
        if (o.mask) mask = mask_weights(*o.mask, p.width, p.height, f.inpaint_inputs);
        if (f.inpaint_inputs && mask.empty()) {
            mask.assign(static_cast<size_t>(p.width) * p.height, 1.0f);
        }
        std::vector<float> latent_mask;
        if (!mask.empty()) {
            latent_mask = block_max(mask, p.width, p.height, f.vae->downscale());
        }
        // The init image is encoded first, then the masked image: each VAE posterior
        // sample takes the next noise from the RNG, in the reference engine's order.
        auto enc = encode(pixels, "the init image");
        if (!enc.ok()) return enc.status();
        // A latent of several frames starts every frame from the init image.
        init_latent.resize(n);
        for (size_t c = 0; c < static_cast<size_t>(f.latent_channels); ++c) {
            for (size_t fr = 0; fr < static_cast<size_t>(p.frames); ++fr) {
                std::copy_n(enc->data.begin() + c * plane, plane,
                            init_latent.begin() + (c * p.frames + fr) * plane);
            }
        }
        if (f.inpaint_inputs) {
            HostTensor masked = pixels;
            grey_out(masked, mask);
            auto enc_masked = encode(std::move(masked), "the masked init image");
            if (!enc_masked.ok()) return enc_masked.status();
            inpaint_input = inpaint_concat(latent_mask, *enc_masked);
        }
        // Outside the mask every step keeps the init latent; inpainting models get a
        // slightly larger repaint area so that the seam is theirs to paint.
        if (o.mask) {
            keep_denoised = f.inpaint_inputs ? dilate3x3(latent_mask, static_cast<int>(p.latent_w),
                                                         static_cast<int>(p.latent_h))
                                             : latent_mask;
        }
        sigmas = sampling::img2img_sigmas(sigmas, o.strength);
        close_phase(t.encode_figures);
        t.encode = seconds_since(t1);
        GGDIFF_LOG_DEBUG("init image encoding: %.2fs", t.encode);
        if (!run.phase("encode", 1, 1, t.encode)) return Status::Error("cancelled");
    } else if (f.inpaint_inputs) {
        // Text to image with an inpainting model: everything to paint, nothing known.
        inpaint_input = inpaint_concat(std::vector<float>(plane, 1.0f),
                                       HostTensor({p.latent_w, p.latent_h, p.latent_c, 1}));
    }

    // Reference images: encoded once, shared by every step and batch item.
    std::vector<HostTensor> ref_latents;
    for (size_t i = 0; i < o.ref_images.size(); ++i) {
        const Image& ref = o.ref_images[i];
        const auto [rw, rh] = ref_image_size(ref, p.width, p.height, f.ref_image_multiple);
        const Image img = ref.width == rw && ref.height == rh ? ref : resize_image(ref, rw, rh);
        auto enc = f.vae->encode(f.image_input ? f.image_input(img) : image_to_tensor(img), *rng);
        if (!enc.ok()) {
            return enc.status().with_context("encoding reference image " + std::to_string(i + 1));
        }
        ref_latents.push_back(std::move(*enc));
    }
    prepare_lock.reset();

    const bool batched = p.use_uncond && uncond.batchable_with(*cond);
    const sampling::SamplerKind sampler = p.sampler;
    auto denoise = [&](const std::vector<float>& xin, float sigma, int,
                       bool need_uncond) -> Result<sampling::DenoiseResult> {
        const sampling::Parameterization::ModelStep ms = p.param.model_step(sigma);
        DenoiseBatch batch;
        batch.guidance = o.guidance;
        batch.refs = ref_latents.empty() ? nullptr : &ref_latents;
        const int items = batched ? 2 : 1;
        batch.x = HostTensor({p.latent_w, p.latent_h, p.latent_c, items});
        for (int b = 0; b < items; ++b) {
            std::transform(xin.begin(), xin.end(), batch.x.data.begin() + b * n,
                           [&](float v) { return v * ms.s.c_in; });
        }
        batch.timesteps.assign(items, ms.t);
        if (!inpaint_input.data.empty()) batch.concat = &inpaint_input;
        if (control) batch.control = &*control;
        batch.cond = {&*cond};
        if (batched) batch.cond.push_back(&uncond);
        auto r = f.denoiser->run(batch);
        if (!r.ok()) return r.status();
        std::vector<float> out_c, out_u;
        if (batched) {
            out_c = slice(r->data, 0, n);
            out_u = slice(r->data, n, n);
        } else {
            out_c = std::move(r->data);
            if (p.use_uncond) {
                batch.cond = {&uncond};
                auto ru = f.denoiser->run(batch);
                if (!ru.ok()) return ru.status();
                out_u = std::move(ru->data);
            }
        }
        if (out_c.size() != n || (p.use_uncond && out_u.size() != n)) {
            return Status::Error("the denoiser returned a latent of the wrong size");
        }
        std::vector<float> guided;
        if (p.use_uncond) {
            sampling::apply_cfg(out_c, out_u, p.cfg_scale, guided);
        } else {
            guided = out_c;
        }
        sampling::DenoiseResult res;
        sampling::apply_scalings(guided, xin, ms.s, res.denoised);
        if (!keep_denoised.empty()) blend_latent(res.denoised, init_latent, keep_denoised);
        if (need_uncond) {
            sampling::apply_scalings(p.use_uncond ? out_u : out_c, xin, ms.s, res.uncond_denoised);
        }
        return res;
    };

    for (const int b : job.items) {
        if (run.stopped()) return Status::Error("cancelled");
        const bool last = b == job.items.back();
        const int64_t seed = o.seed + b;
        rng->manual_seed(static_cast<uint64_t>(seed));
        if (sampler_rng != rng) sampler_rng->manual_seed(static_cast<uint64_t>(seed));
        std::vector<float> x = p.param.noise_latent(init_latent, rng->randn(n), sigmas[0]);

        sampling::SamplerOptions so;
        so.eta = o.eta;
        so.seed = static_cast<uint64_t>(seed);
        so.model = &p.param;
        const int total = static_cast<int>(sigmas.size()) - 1;
        {
            LockSet sampling_lock(replica.sampling_locks);
            auto ts = Clock::now();
            so.on_step = [&](int step, int) {
                return run.sampling_step(b, step, total, seconds_since(ts));
            };
            GGDIFF_TRY(sampling::sample(sampler, denoise, x, sigmas, *sampler_rng, so));
            x = p.param.inverse_noise_scaling(sigmas.back(), x);
            const double sampled = seconds_since(ts);
            t.sampling += sampled;
            step_secs[static_cast<size_t>(b)] = sampled / std::max(1, total);
            if (last) f.denoiser->end_phase();
        }
        close_phase(t.sampling_figures);

        // Decode; under auto-fit a decode that does not fit is retried once with tiling.
        auto td = Clock::now();
        HostTensor latent({p.latent_w, p.latent_h, p.latent_c, 1});
        latent.data = std::move(x);
        auto decode = [&](const TilingOptions& tiling) -> Result<HostTensor> {
            if (!tiling.enabled) return f.vae->decode(latent);
            models::TileOptions to;
            to.tile_w = tiling.tile_w;
            to.tile_h = tiling.tile_h;
            to.overlap = tiling.overlap;
            auto tiled = [&](const HostTensor& in_latent, HostTensor& img) -> Status {
                return models::run_tiled(in_latent, img, static_cast<float>(f.vae->downscale()), to,
                                         [&](const HostTensor& in, HostTensor& out) -> Status {
                                             auto r = f.vae->decode(in);
                                             if (!r.ok()) return r.status();
                                             out = std::move(*r);
                                             return Status::Ok();
                                         });
            };
            HostTensor img;
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
        };
        Result<HostTensor> img = Status::Error("not decoded");
        {
            LockSet decode_lock(replica.decode_locks);
            img = decode(o.vae_tiling);
            if (!img.ok() && job.auto_fit && !o.vae_tiling.enabled) {
                GGDIFF_LOG_WARN("VAE decode failed (%s); retrying with 256x256 tiles",
                                img.status().message().c_str());
                TilingOptions tiles;
                tiles.enabled = true;
                img = decode(tiles);
            }
            if (last) f.vae->end_phase();
        }
        close_phase(t.decode_figures);
        if (!img.ok()) return img.status().with_context("VAE decode");
        t.decode = seconds_since(td);
        GGDIFF_LOG_DEBUG("VAE decode: %.2fs", t.decode);
        run.phase("decode", 1, 1, t.decode);

        // One image per decoded frame (several when a latent holds layers).
        std::vector<GeneratedImage> images;
        const int64_t frames = img->dim(3);
        const int64_t frame_numel = img->numel() / std::max<int64_t>(1, frames);
        for (int64_t fr = 0; fr < frames; ++fr) {
            HostTensor one({img->dim(0), img->dim(1), img->dim(2), 1});
            std::copy_n(img->data.begin() + fr * frame_numel, frame_numel, one.data.begin());
            GeneratedImage g;
            g.image = tensor_to_image(one);
            g.seed = seed;
            GenerationInfo info;
            info.prompt = o.prompt;
            info.negative_prompt = o.negative_prompt;
            info.steps = o.steps;
            info.sampler = sampling::sampler_a1111_name(sampler);
            if (p.schedule) info.schedule = sampling::schedule_a1111_name(*p.schedule);
            info.cfg_scale = p.cfg_scale;
            if (f.uses_guidance) info.guidance = o.guidance;
            info.seed = seed;
            info.width = p.width;
            info.height = p.height;
            info.model = o.output_model_name.empty() ? job.model_name : o.output_model_name;
            if (o.clip_skip > 0) info.clip_skip = o.clip_skip;
            if (o.init_image) info.denoising_strength = o.strength;
            info.rng = sampling::rng_name(p.rng);
            if (!replica.lora->hashes().empty()) {
                info.extra.emplace_back("Lora hashes", replica.lora->hashes());
            }
            g.infotext = format_infotext(info);
            images.push_back(std::move(g));
        }
        run.finish_item(b, std::move(images));
    }
    return Status::Ok();
}

}  // namespace

int Engine::image_count(const GenerateOptions& o) const {
    const Family& f = family_parts();
    const int frames = f.latent_frames ? std::max(1, f.latent_frames(o)) : 1;
    return std::max(1, o.batch) * frames;
}

Result<std::vector<GeneratedImage>> Engine::generate(const GenerateOptions& o,
                                                     const ProgressFn& progress,
                                                     const ImageFn& on_image) {
    // Everything is validated before any compute.
    auto planned = plan_request(o, replicas_.front()->family);
    if (!planned.ok()) return planned.status();
    // LoRA tags leave the prompt before it is tokenized (the saved prompt keeps them).
    std::vector<LoraRequest> loras;
    auto prompt = extract_lora_tags(o.prompt, &loras);
    if (!prompt.ok()) return prompt.status();

    // Item i on replica i % n; a batch smaller than n leaves the last replicas idle.
    const size_t n = replicas_.size();
    const size_t active = std::min(n, static_cast<size_t>(o.batch));
    if (n > 1) {
        std::vector<std::string> names;
        for (const auto& r : replicas_) names.push_back(r->name);
        GGDIFF_LOG_INFO("%s", placement::data_parallel_summary(names, o.batch).c_str());
    }
    BatchRun run(progress, on_image, o.batch, active > 1);
    std::vector<PhaseTimings> t(active);
    std::vector<double> step_secs(static_cast<size_t>(o.batch), 0.0);
    std::vector<ReplicaJob> jobs;
    for (size_t k = 0; k < active; ++k) {
        jobs.push_back({*planned, o, *prompt, loras, k, placement::replica_items(o.batch, n, k),
                        active == 1, auto_fit_, model_name_});
    }
    if (active == 1) {
        GGDIFF_TRY(run_replica(*replicas_.front(), jobs.front(), run, t.front(), step_secs));
    } else {
        // Every replica on its own thread with its own backend instances; the first failure
        // or a cancel stops them all, and its error names the replica's devices.
        auto work = [&](size_t k) {
            BackendInstanceScope instance(static_cast<int>(k));
            Status st;
            try {
                st = run_replica(*replicas_[k], jobs[k], run, t[k], step_secs);
            } catch (const std::exception& e) {
                st = Status::Error(std::string("unexpected failure: ") + e.what());
            } catch (...) {
                st = Status::Error("unexpected failure");
            }
            if (!st.ok())
                run.fail(st.with_context("data parallel replica on " + replicas_[k]->name));
        };
        std::vector<std::thread> threads;
        for (size_t k = 1; k < active; ++k) threads.emplace_back(work, k);
        work(0);
        for (std::thread& th : threads) th.join();
        GGDIFF_TRY(run.status());
    }

    // Timings: the preparation phases ran side by side (the longest counts), sampling adds
    // up over the items, the decode is the last item's; flops add up over the replicas.
    timings_ = PhaseTimings{};
    auto add = [](PhaseFigures& into, const PhaseFigures& f) {
        into.flops += f.flops;
        into.uploaded += f.uploaded;
        into.peak_rss = std::max(into.peak_rss, f.peak_rss);
    };
    for (const PhaseTimings& r : t) {
        timings_.text = std::max(timings_.text, r.text);
        timings_.encode = std::max(timings_.encode, r.encode);
        timings_.lora = std::max(timings_.lora, r.lora);
        timings_.sampling += r.sampling;
        add(timings_.text_figures, r.text_figures);
        add(timings_.encode_figures, r.encode_figures);
        add(timings_.sampling_figures, r.sampling_figures);
        add(timings_.decode_figures, r.decode_figures);
    }
    timings_.decode = t[static_cast<size_t>(o.batch - 1) % active].decode;
    timings_.steps = std::move(step_secs);
    return run.take_images();
}

}  // namespace ggdiff
