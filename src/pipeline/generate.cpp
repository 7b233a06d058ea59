// The one generic generate path every family goes through: plan the request
// (pipeline/generate_plan.h), then on each replica the phases in order: LoRAs, text
// (phase_text.h), inputs (phase_inputs.h: init image, mask, reference latents, control hint),
// and per batch item the guided denoise (phase_denoise.h) and decode (phase_decode.h). This
// file only sequences them, with the progress, cancel, device locks and timings around each.
// With data-parallel replicas each one runs this path for its share of the batch items, on
// its own thread (pipeline/batch_run.h coordinates them).
#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <thread>

#include "core/log.h"
#include "core/process_memory.h"
#include "pipeline/batch_run.h"
#include "pipeline/engine.h"
#include "pipeline/generate_plan.h"
#include "pipeline/phase_decode.h"
#include "pipeline/phase_denoise.h"
#include "pipeline/phase_hires.h"
#include "pipeline/phase_inputs.h"
#include "pipeline/phase_preview.h"
#include "pipeline/phase_text.h"
#include "pipeline/upscale.h"
#include "placement/data_parallel.h"
#include "runtime/graph_runner.h"
#include "runtime/segment_runner.h"

namespace ggdiff {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
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

// Each phase's figures: flops this replica computed, weight bytes uploaded, and the process's
// peak resident set at its end; with `reset_peaks` the peak restarts at each phase.
class PhaseMeter {
  public:
    explicit PhaseMeter(bool reset_peaks) : reset_peaks_(reset_peaks) {
        if (reset_peaks_) reset_peak_resident();
    }
    // Adds what happened since the last close (or the start) to `fig` and starts anew.
    void close(PhaseFigures& fig) {
        fig.flops += computed_flops_on_this_thread() - flops_mark_;
        fig.uploaded += uploaded_weight_bytes() - upload_mark_;
        fig.peak_rss = std::max(fig.peak_rss, peak_resident_bytes());
        if (reset_peaks_) reset_peak_resident();
        flops_mark_ = computed_flops_on_this_thread();
        upload_mark_ = uploaded_weight_bytes();
    }

  private:
    bool reset_peaks_;
    double flops_mark_ = computed_flops_on_this_thread();
    uint64_t upload_mark_ = uploaded_weight_bytes();
};

// One replica's share of a generate() call.
struct ReplicaJob {
    const GeneratePlan& plan;
    const GenerateOptions& o;
    const std::string& prompt;  // without its LoRA tags
    const std::vector<LoraRequest>& loras;
    size_t index = 0;        // replica index
    std::vector<int> items;  // batch items, in order
    bool alone = true;       // no other replica computes meanwhile
    bool auto_fit = false;
    std::string model_name;
    const HiresPlan* hires = nullptr;  // --hires: the second pass
    ImageUpscaleFn hires_model;        // its upscaler model, when it uses one
    // --upscale-model: every image goes through it (replicas take turns on it).
    models::EsrganUpscaler* upscaler = nullptr;
    std::mutex* upscaler_mutex = nullptr;
    const PreviewFn* preview = nullptr;  // live previews (o.preview), or null
};

// --upscale-model on a batch item's images (phase "upscale": one step per pass); each
// image's infotext gets A1111's "Postprocess upscale by" / "Postprocess upscaler" fields.
Status upscale_images(const ReplicaJob& job, BatchRun& run, std::vector<GeneratedImage>& images) {
    const GenerateOptions& o = job.o;
    std::lock_guard<std::mutex> lock(*job.upscaler_mutex);
    int factor = 1;
    for (int i = 0; i < o.upscale_repeats; ++i) factor *= job.upscaler->scale();
    for (GeneratedImage& g : images) {
        const auto t0 = Clock::now();
        auto up = upscale_image(*job.upscaler, g.image, o.upscale_repeats, o.upscale_tile_size,
                                [&](int pass, int total) {
                                    return run.phase("upscale", pass, total, seconds_since(t0));
                                });
        if (!up.ok()) return up.status();
        GGDIFF_LOG_DEBUG("upscale: %dx%d -> %dx%d in %.2fs", g.image.width, g.image.height,
                         up->width, up->height, seconds_since(t0));
        g.image = std::move(*up);
        g.infotext = parameters_with_upscale(g.infotext, factor, job.upscaler->name());
    }
    job.upscaler->end_phase();
    return Status::Ok();
}

// The hires fix of batch item `b`: `x`, its first pass's clean latent, is upscaled and sampled
// again at the target size from the hires schedule; `x` gets the result. Resizes and image
// upscalers restart the RNGs at the item's seed first; a family's latent upscaler model
// (HiresPlan::Kind::LatentModel) runs on the latent and the pass draws its noise from
// `item_rngs`, the first pass's, where they left off (as stable-diffusion.cpp's LTX-2 does).
Status hires_pass(Engine::Replica& replica, const ReplicaJob& job, const DenoiseContext& first,
                  int b, PreviewMode preview_mode, GenerationRngs& item_rngs, std::vector<float>& x,
                  BatchRun& run, PhaseTimings& t) {
    Family& f = replica.family;
    const HiresPlan& hp = *job.hires;
    const GenerateOptions& o = job.o;
    const int64_t seed = o.seed + b;
    const bool latent_model = hp.kind == HiresPlan::Kind::LatentModel;
    GenerationRngs rngs = latent_model ? item_rngs : GenerationRngs::make(job.plan, seed);
    // The second pass's request: the first's, or the latent upscaler's size and frames.
    const GenerateOptions& po = latent_model ? hp.options : o;
    DenoiseInputs in;
    if (latent_model) {
        {
            LockSet lock(replica.decode_locks);
            const auto tu = Clock::now();
            auto up = hp.latent_model->upscale(o, job.plan.width, job.plan.height, po,
                                               hp.plan.width, hp.plan.height, std::move(x));
            hp.latent_model->end_phase();
            if (!up.ok()) return up.status().with_context("hires fix: upscaler " + hp.upscaler);
            if (up->size() != hp.plan.latent_numel()) {
                return Status::Error("hires fix: the upscaler " + hp.upscaler +
                                     " gave a latent of another shape");
            }
            in.init.latent = std::move(*up);
            GGDIFF_LOG_INFO("hires %s: latent upscale to %dx%d, %d frames, %.2fs",
                            hp.upscaler.c_str(), hp.plan.width, hp.plan.height,
                            f.output_frames ? f.output_frames(po) : 1, seconds_since(tu));
        }
        // The family's parts follow the second pass's request (LTX-2: its latent layout), and
        // its image conditions (-i) are made again at the new size, held fully (the
        // reference's refine pass conditions at strength 1) in the upscaled latent.
        if (f.video_conditions) {
            GenerateOptions vo = po;
            vo.strength = 1.0f;
            auto video = f.video_conditions(vo, hp.plan.width, hp.plan.height, f.output_frames(po),
                                            *rngs.noise);
            if (!video.ok()) return video.status();
            in.video = std::move(*video);
            if (in.video.leading_frames > 0) {
                return Status::Error(
                    "--hires with leading condition frames is not supported yet for " + f.name);
            }
            if (!in.video.frame_keep.empty()) {
                std::vector<float> up = std::move(in.init.latent);
                hold_frames(in, hp.plan);
                for (size_t i = 0; i < up.size(); ++i) {
                    const float k = in.init.keep[i];
                    in.init.latent[i] = k * up[i] + (1.0f - k) * in.init.latent[i];
                }
            }
        }
    } else {
        LockSet lock(replica.decode_locks);
        auto up = hires_upscale(f, job.plan, hp, std::move(x), *rngs.noise, o.vae_tiling,
                                job.auto_fit, job.hires_model);
        if (!up.ok()) return up.status();
        in.init.latent = std::move(*up);
    }
    in.init.sigmas = hp.plan.sigmas;
    if (!latent_model) in.init.keep = hires_keep(first.inputs.init.keep, job.plan, hp);
    in.refs = first.inputs.refs;
    in.control = control_condition(f, hp.plan, po, false);
    // The pass is cached too (as the reference caches it); denoise_item restarts the cache.
    const DenoiseContext dc{f, hp.plan, po, first.text, in, first.cache};
    const sampling::DenoiseFn guided = guided_denoiser(dc);
    x = starting_latent(dc, *rngs.noise);
    const int total = static_cast<int>(hp.plan.sigmas.size()) - 1;
    sampling::DenoiseFn denoise = guided;
    if (preview_mode != PreviewMode::None) {
        denoise = previewing_denoiser(dc, guided, preview_mode,
                                      [&job, seed, total](const Image& img, int step) {
                                          (*job.preview)(img, seed, step, total);
                                      });
    }
    const std::string phase =
        o.batch > 1 ? string_format("hires %d/%d", b + 1, o.batch) : std::string("hires");
    LockSet sampling_lock(replica.sampling_locks);
    auto ts = Clock::now();
    auto on_step = [&](int step, int) { return run.phase(phase, step, total, seconds_since(ts)); };
    GGDIFF_TRY(denoise_item(dc, denoise, x, *rngs.sampler, seed, on_step));
    const double sampled = seconds_since(ts);
    t.sampling += sampled;
    GGDIFF_LOG_INFO("hires sampling of image %d/%d: %d steps at %dx%d, %.2fs", b + 1, o.batch,
                    total, hp.plan.width, hp.plan.height, sampled);
    return Status::Ok();
}

// One item's sampling: with a high-noise expert (GeneratePlan::high_noise) it samples the
// first steps with its own plan, then the model the rest, from where the expert stopped (the
// samplers start anew, as stable-diffusion.cpp's two sample calls do); else denoise_item.
Status sample_item(const DenoiseContext& dc, const sampling::DenoiseFn& denoise,
                   std::vector<float>& x, sampling::Rng& sampler_rng, int64_t seed,
                   const std::function<bool(int, int)>& on_step) {
    const GeneratePlan& p = dc.plan;
    const std::vector<float>& sigmas = dc.inputs.init.sigmas;
    // img2img starts later in the schedule: the expert keeps what is left of its steps.
    const int skipped = static_cast<int>(p.sigmas.size() - sigmas.size());
    const int expert = p.high_noise ? p.high_noise_steps - skipped : 0;
    if (expert <= 0 || !dc.family.high_noise) {
        return denoise_item(dc, denoise, x, sampler_rng, seed, on_step);
    }
    DenoiseInputs first = dc.inputs;
    first.init.sigmas.assign(sigmas.begin(), sigmas.begin() + expert + 1);
    const std::vector<float> rest(sigmas.begin() + expert, sigmas.end());
    DenoiseContext hc{dc.family,
                      *p.high_noise,
                      dc.options,
                      dc.text,
                      first,
                      dc.cache,
                      dc.family.high_noise.get(),
                      p.high_noise_eta};
    const sampling::DenoiseFn expert_fn = guided_denoiser(hc);
    const int total = static_cast<int>(sigmas.size()) - 1;
    GGDIFF_TRY(denoise_item(
        hc, expert_fn, x, sampler_rng, seed, [&](int step, int) { return on_step(step, total); },
        false));
    dc.family.high_noise->end_phase();
    return denoise_item(
        dc, denoise, x, sampler_rng, seed,
        [&](int step, int) { return on_step(expert + step, total); }, true, &rest);
}

// Runs `job` on `replica`: its LoRAs, text conditioning, init and reference images, then
// each item's sampling and decode; the images go to `run` by item. Its phase timings go to
// `t`, the seconds per step of each item to `step_secs[item]`.
Status run_replica(Engine::Replica& replica, const ReplicaJob& job, BatchRun& run, PhaseTimings& t,
                   std::vector<double>& step_secs) {
    Family& f = replica.family;
    const GeneratePlan& p = job.plan;
    const GenerateOptions& o = job.o;
    std::optional<LockSet> prepare_lock;
    prepare_lock.emplace(replica.prepare_locks);

    auto tl = Clock::now();
    std::vector<LoraRequest> loras = job.loras;
    loras.insert(loras.end(), f.own_loras.begin(), f.own_loras.end());
    GGDIFF_TRY(replica.lora->apply(f, loras));
    t.lora = seconds_since(tl);
    if (!job.loras.empty() && !run.phase("lora", 1, 1, t.lora)) {
        return Status::Error("cancelled");
    }

    // With --phase-peaks (ggdiff-bench) the peak resident set restarts at each phase, which
    // also hides the earlier peak from tools that read it at exit (time -v), so only on
    // request (and not while other replicas compute).
    const bool phase_peaks = o.phase_peaks && job.alone;
    auto t0 = Clock::now();
    PhaseMeter meter(phase_peaks);
    auto text = encode_text(f, p, o, job.prompt);
    if (!text.ok()) return text.status();
    meter.close(t.text_figures);
    t.text = seconds_since(t0);
    GGDIFF_LOG_DEBUG("text encoding: %.2fs", t.text);
    if (!run.phase("text", 1, 1, t.text)) return Status::Error("cancelled");

    GenerationRngs rngs = GenerationRngs::make(p, o.seed);
    DenoiseInputs in;
    in.control = control_condition(f, p, o, job.index == 0);
    if (f.identity && !o.pulid_id_embedding.empty()) {
        auto id = f.identity(o);
        if (!id.ok()) return id.status();
        in.identity = std::move(*id);
    }
    auto t1 = Clock::now();
    if (f.video_conditions) {
        auto video = f.video_conditions(o, p.width, p.height, f.output_frames(o), *rngs.noise);
        if (!video.ok()) return video.status();
        in.video = std::move(*video);
    }
    auto init = prepare_init(f, p, o, *rngs.noise, !in.video.used_init_image);
    if (!init.ok()) return init.status();
    in.init = std::move(*init);
    if (!in.video.frame_keep.empty()) hold_frames(in, p);
    if (o.init_image || o.end_image) {
        meter.close(t.encode_figures);
        t.encode = seconds_since(t1);
        GGDIFF_LOG_DEBUG("init image encoding: %.2fs", t.encode);
        if (!run.phase("encode", 1, 1, t.encode)) return Status::Error("cancelled");
    }
    auto refs = encode_reference_images(f, p, o, *rngs.noise);
    if (!refs.ok()) return refs.status();
    in.refs = std::move(*refs);
    prepare_lock.reset();

    // Step caching keeps per-item state: one cache per replica, restarted for each item.
    std::optional<sampling::StepCache> cache;
    if (p.cache.mode != sampling::CacheMode::None)
        cache.emplace(p.cache, f.arch, p.param, p.sampler);
    const DenoiseContext dc{f, p, o, *text, in, cache ? &*cache : nullptr};
    const sampling::DenoiseFn guided = guided_denoiser(dc);
    // Decoded previews while other replicas compute would share their devices unlocked:
    // data-parallel batches preview by projection.
    PreviewMode preview_mode = job.preview ? o.preview.mode : PreviewMode::None;
    if (!job.alone && (preview_mode == PreviewMode::Tae || preview_mode == PreviewMode::Vae)) {
        if (job.index == 0) {
            GGDIFF_LOG_WARN("--preview: data-parallel replicas preview by projection (proj)");
        }
        preview_mode = PreviewMode::Proj;
    }
    GenerationInfo info = generation_info(f, p, o, job.model_name, replica.lora->hashes());
    if (job.hires) {
        // A1111 writes the hires strength as the "Denoising strength" of a txt2img image.
        if (!info.denoising_strength) info.denoising_strength = o.hires.denoising_strength;
        for (auto& kv : hires_infotext(o, *job.hires)) info.extra.push_back(std::move(kv));
    }
    const std::string ti_hashes = f.text->embedding_hashes();
    if (!ti_hashes.empty()) info.extra.emplace_back("TI hashes", ti_hashes);
    const bool latent_model_hires = job.hires && job.hires->kind == HiresPlan::Kind::LatentModel;
    for (const int b : job.items) {
        if (run.stopped()) return Status::Error("cancelled");
        const bool last = b == job.items.back();
        const int64_t seed = o.seed + b;
        if (latent_model_hires && b != job.items.front() && f.video_conditions) {
            // The last item's hires pass left the family's parts at its own request.
            auto video = f.video_conditions(o, p.width, p.height, f.output_frames(o), *rngs.noise);
            if (!video.ok()) return video.status();
        }
        rngs.reseed(seed);
        std::vector<float> x = starting_latent(dc, *rngs.noise);
        const int total = static_cast<int>(in.init.sigmas.size()) - 1;
        sampling::DenoiseFn denoise = guided;
        if (preview_mode != PreviewMode::None) {
            denoise = previewing_denoiser(dc, guided, preview_mode,
                                          [&job, seed, total](const Image& img, int step) {
                                              (*job.preview)(img, seed, step, total);
                                          });
        }
        {
            LockSet sampling_lock(replica.sampling_locks);
            auto ts = Clock::now();
            auto on_step = [&](int step, int) {
                return run.sampling_step(b, step, total, seconds_since(ts));
            };
            GGDIFF_TRY(sample_item(dc, denoise, x, *rngs.sampler, seed, on_step));
            const double sampled = seconds_since(ts);
            t.sampling += sampled;
            step_secs[static_cast<size_t>(b)] = sampled / std::max(1, total);
            if (last && !job.hires) f.denoiser->end_phase();
        }
        meter.close(t.sampling_figures);

        const GeneratePlan* decode_plan = &p;
        if (job.hires) {
            GGDIFF_TRY(hires_pass(replica, job, dc, b, preview_mode, rngs, x, run, t));
            if (last) f.denoiser->end_phase();
            decode_plan = &job.hires->plan;
            meter.close(t.sampling_figures);
        }

        // Leading latent frames that only conditioned the denoiser are not decoded.
        GeneratePlan trimmed;
        if (in.video.leading_frames > 0) {
            trimmed = *decode_plan;
            x = drop_leading_frames(trimmed, f.latent_channels, in.video.leading_frames, x);
            decode_plan = &trimmed;
        }
        auto td = Clock::now();
        Result<HostTensor> img = Status::Error("not decoded");
        {
            LockSet decode_lock(replica.decode_locks);
            img = decode_latent(f, *decode_plan, std::move(x), o.vae_tiling, job.auto_fit);
            if (last) f.vae->end_phase();
        }
        meter.close(t.decode_figures);
        if (!img.ok()) return img.status().with_context("VAE decode");
        t.decode = seconds_since(td);
        GGDIFF_LOG_DEBUG("VAE decode: %.2fs", t.decode);
        run.phase("decode", 1, 1, t.decode);
        std::vector<GeneratedImage> images = decoded_images(*img, seed, info);
        if (auto audio = f.vae->take_audio()) {
            for (GeneratedImage& g : images) g.audio = audio;
        }
        if (job.upscaler) GGDIFF_TRY(upscale_images(job, run, images));
        run.finish_item(b, std::move(images));
    }
    return Status::Ok();
}

}  // namespace

int Engine::image_count(const GenerateOptions& o) const {
    const Family& f = family_parts();
    int frames = f.output_frames ? std::max(1, f.output_frames(o)) : latent_frames(f, o);
    // A latent upscaler model in time (LTX-2's temporal x2) makes more frames; its errors come
    // from generate().
    if (f.output_frames && f.latent_upscaler && o.hires.enabled && o.hires.upscaler != "None") {
        auto path = find_hires_upscaler_model(o.hires.upscaler, hires_upscalers_dir_);
        auto model = path.ok() ? latent_upscaler(*path) : path.status();
        if (model.ok()) {
            int w = f.defaults.width, h = f.defaults.height;
            (*model)->output(w, h, frames);
        }
    }
    return std::max(1, o.batch) * frames;
}

Result<std::vector<GeneratedImage>> Engine::generate(const GenerateOptions& o,
                                                     const ProgressFn& progress,
                                                     const ImageFn& on_image,
                                                     const PreviewFn& on_preview) {
    // Everything is validated before any compute; what fails here is the request's fault.
    auto planned = plan_request(o, replicas_.front()->family);
    if (!planned.ok()) return Status::InputError(planned.status().message());
    auto hires = plan_hires(o, replicas_.front()->family, *planned, hires_upscalers_dir_);
    if (!hires.ok()) return Status::InputError(hires.status().message());
    ImageUpscaleFn hires_model;
    if (*hires && (*hires)->kind == HiresPlan::Kind::LatentModel) {
        const std::string flag = "--hires-upscaler " + (*hires)->upscaler;
        auto model = latent_upscaler((*hires)->model_path);
        if (!model.ok()) return Status::InputError(model.status().with_context(flag).message());
        Status st =
            plan_latent_model_hires(**hires, o, replicas_.front()->family, *planned, *model);
        if (!st.ok()) return Status::InputError(st.message());
        GGDIFF_TRY((*model)->prepare().with_context(flag));
    }
    if (*hires && (*hires)->kind == HiresPlan::Kind::Model) {
        auto fn = hires_upscaler((*hires)->model_path, (*hires)->tile_size);
        if (!fn.ok()) return fn.status().with_context("--hires-upscaler " + (*hires)->upscaler);
        hires_model = std::move(*fn);
    }
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
    // Previews reach the caller one at a time, whichever replica makes them.
    std::mutex preview_mutex;
    const PreviewFn preview = [&](const Image& img, int64_t seed, int step, int total) {
        std::lock_guard<std::mutex> lock(preview_mutex);
        if (!run.stopped()) on_preview(img, seed, step, total);
    };
    const bool previews = on_preview && o.preview.mode != PreviewMode::None;
    std::vector<ReplicaJob> jobs;
    for (size_t k = 0; k < active; ++k) {
        jobs.push_back({*planned, o, *prompt, loras, k, placement::replica_items(o.batch, n, k),
                        active == 1, auto_fit_, model_name_, *hires ? &**hires : nullptr,
                        hires_model, upscaler_.get(), &upscaler_mutex_,
                        previews ? &preview : nullptr});
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
