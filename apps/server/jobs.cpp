#include "jobs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "sound.h"

namespace ggdiff::server {

namespace {

constexpr size_t kMaxExpiredIds = 100000;
constexpr size_t kMaxKeptJobs = 4096;  // finished jobs kept at most, oldest dropped first

using Clock = std::chrono::steady_clock;

}  // namespace

const char* job_status_name(JobStatus s) {
    switch (s) {
        case JobStatus::queued:
            return "queued";
        case JobStatus::loading:
            return "loading";
        case JobStatus::generating:
            return "generating";
        case JobStatus::completed:
            return "completed";
        case JobStatus::failed:
            return "failed";
        case JobStatus::cancelled:
            return "cancelled";
    }
    return "unknown";
}

int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string new_job_id() {
    static std::mutex m;
    static std::mt19937_64 rng{std::random_device{}()};
    std::lock_guard<std::mutex> lock(m);
    char buf[40];
    std::snprintf(buf, sizeof buf, "job_%016llx%04x", static_cast<unsigned long long>(rng()),
                  static_cast<unsigned>(rng() & 0xffff));
    return buf;
}

JobManager::JobManager(ModelHost& host, int max_queue, int result_ttl_s, int64_t max_result_bytes)
    : host_(host),
      max_queue_(max_queue),
      ttl_s_(result_ttl_s),
      max_result_bytes_(max_result_bytes) {}

JobManager::~JobManager() {
    stop();
}

void JobManager::start() {
    thread_ = std::thread([this] { worker(); });
}

void JobManager::stop() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
        if (running_) running_->cancel_requested = true;
        // Waiting jobs end too, so that nobody waits for them forever.
        for (auto& job : queue_) {
            job->cancel_requested = true;
            job->error_code = "cancelled";
            job->error_message = "the server is shutting down";
            job->options.reset();
            finish_locked(*job, JobStatus::cancelled);
        }
        queue_.clear();
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

JobManager::Submitted JobManager::submit(std::shared_ptr<Job> job) {
    std::lock_guard<std::mutex> lock(mutex_);
    purge_locked();
    if (static_cast<int>(queue_.size()) >= max_queue_) return {nullptr, retry_after_locked()};
    job->status = JobStatus::queued;
    job->created = unix_now();
    jobs_[job->id] = job;
    queue_.push_back(job);
    cv_.notify_all();
    return {job, 0};
}

int JobManager::retry_after_locked() const {
    const double per_job = avg_job_s_ > 0.0 ? avg_job_s_ : 5.0;
    return static_cast<int>(std::clamp(std::ceil(per_job), 1.0, 3600.0));
}

Lookup JobManager::find(const std::string& id, std::shared_ptr<Job>* out) {
    std::lock_guard<std::mutex> lock(mutex_);
    purge_locked();
    auto it = jobs_.find(id);
    if (it != jobs_.end()) {
        if (out) *out = it->second;
        return Lookup::found;
    }
    return expired_.count(id) ? Lookup::expired : Lookup::missing;
}

JobView JobManager::view(const Job& job, bool with_images) {
    std::lock_guard<std::mutex> lock(mutex_);
    return view_locked(job, with_images);
}

JobView JobManager::view_locked(const Job& job, bool with_images) const {
    JobView v;
    v.id = job.id;
    v.kind = job.kind;
    v.api = job.api;
    v.status = job.status;
    v.cancel_requested = job.cancel_requested;
    v.created = job.created;
    v.started = job.started;
    v.finished = job.finished;
    v.progress = job.progress;
    if (job.status == JobStatus::generating && job.progress.fraction > 0.0) {
        const double elapsed = std::chrono::duration<double>(Clock::now() - job.started_at).count();
        v.progress.eta_s = elapsed * (1.0 - job.progress.fraction) / job.progress.fraction;
    }
    if (job.status == JobStatus::queued) {
        int pos = 1;
        for (const auto& q : queue_) {
            if (q.get() == &job) break;
            ++pos;
        }
        v.queue_position = pos;
    }
    if (with_images) v.images = job.images;
    v.preview = job.preview;
    v.error_code = job.error_code;
    v.error_message = job.error_message;
    v.version = job.version;
    v.output_format = job.request.output_format;
    return v;
}

void JobManager::finish_locked(Job& job, JobStatus status) {
    job.status = status;
    job.preview.image.reset();
    job.finished = unix_now();
    job.expires = Clock::now() + std::chrono::seconds(ttl_s_);
    job.version++;
    cv_.notify_all();
}

Lookup JobManager::cancel(const std::string& id, JobView* out) {
    std::unique_lock<std::mutex> lock(mutex_);
    purge_locked();
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return expired_.count(id) ? Lookup::expired : Lookup::missing;
    Job& job = *it->second;
    if (job.status == JobStatus::queued) {
        queue_.erase(std::remove(queue_.begin(), queue_.end(), it->second), queue_.end());
        job.cancel_requested = true;
        job.error_code = "cancelled";
        job.error_message = "job cancelled by client";
        job.options.reset();
        finish_locked(job, JobStatus::cancelled);
    } else if ((job.status == JobStatus::generating || job.status == JobStatus::loading) &&
               !job.cancel_requested) {
        job.cancel_requested = true;
        job.version++;
        cv_.notify_all();
    }
    if (out) *out = view_locked(job, false);
    return Lookup::found;
}

bool JobManager::interrupt_running() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!running_) return false;
    running_->cancel_requested = true;
    running_->version++;
    cv_.notify_all();
    return true;
}

JobView JobManager::wait_change(const Job& job, uint64_t seen, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait_for(lock, timeout, [&] {
        return stopping_ || job.version != seen || job.status == JobStatus::completed ||
               job.status == JobStatus::failed || job.status == JobStatus::cancelled;
    });
    return view_locked(job, false);
}

JobView JobManager::wait_done(const Job& job) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] {
        return job.status == JobStatus::completed || job.status == JobStatus::failed ||
               job.status == JobStatus::cancelled;
    });
    return view_locked(job, true);
}

std::optional<JobView> JobManager::running() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!running_) return std::nullopt;
    return view_locked(*running_, false);
}

bool JobManager::stopping() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stopping_;
}

int JobManager::queued_count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int>(queue_.size());
}

std::vector<JobView> JobManager::list() {
    std::lock_guard<std::mutex> lock(mutex_);
    purge_locked();
    std::vector<JobView> out;
    for (const auto& kv : jobs_) out.push_back(view_locked(*kv.second, false));
    std::sort(out.begin(), out.end(),
              [](const JobView& a, const JobView& b) { return a.created > b.created; });
    return out;
}

void JobManager::expire_locked(const std::string& id) {
    expired_.insert(id);
    expired_order_.push_back(id);
    jobs_.erase(id);
}

void JobManager::purge_locked() {
    const auto now = Clock::now();
    std::vector<std::shared_ptr<Job>> finished;
    std::vector<std::string> due;
    int64_t bytes = 0;
    for (const auto& kv : jobs_) {
        const Job& j = *kv.second;
        const bool done = j.status == JobStatus::completed || j.status == JobStatus::failed ||
                          j.status == JobStatus::cancelled;
        if (!done) continue;
        if (j.expires <= now) {
            due.push_back(kv.first);
            continue;
        }
        finished.push_back(kv.second);
        for (const EncodedImage& img : j.images)
            bytes += static_cast<int64_t>(img.bytes.size() + img.audio_wav.size());
    }
    for (const std::string& id : due) expire_locked(id);
    // Past the count or memory cap the oldest results go first; the latest always stays.
    std::sort(finished.begin(), finished.end(),
              [](const auto& a, const auto& b) { return a->expires < b->expires; });
    for (size_t i = 0; i + 1 < finished.size(); ++i) {
        if (finished.size() - i <= kMaxKeptJobs && bytes <= max_result_bytes_) break;
        for (const EncodedImage& img : finished[i]->images) {
            bytes -= static_cast<int64_t>(img.bytes.size() + img.audio_wav.size());
        }
        expire_locked(finished[i]->id);
    }
    while (expired_order_.size() > kMaxExpiredIds) {
        expired_.erase(expired_order_.front());
        expired_order_.pop_front();
    }
}

void JobManager::worker() {
    for (;;) {
        std::shared_ptr<Job> job;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            cv_.wait_for(lock, std::chrono::seconds(1), [&] {
                return stopping_ || (!queue_.empty() && host_.state() == ModelHost::State::ready);
            });
            purge_locked();
            if (stopping_) return;
            if (queue_.empty() || host_.state() != ModelHost::State::ready) continue;
            job = queue_.front();
            queue_.pop_front();
            running_ = job;
            // A job whose model is not loaded waits for it as "loading" (not an upscale: it
            // needs no diffusion model).
            const bool loaded = job->kind == "upscale" ||
                                host_.library().view(job->request.model, job->request.vae).state ==
                                    ModelState::loaded;
            job->status = loaded ? JobStatus::generating : JobStatus::loading;
            job->started = unix_now();
            job->started_at = Clock::now();
            job->progress.batch = std::max(
                1, std::atoi(job->request.value_or("batch-count", host_.option_value("batch-count"))
                                 .c_str()));
            job->version++;
            cv_.notify_all();
        }
        run(job);
    }
}

namespace {

struct RunContext {
    JobManager* manager;
    Job* job;
    std::mutex* mutex;
    std::condition_variable* cv;
    std::string encode_error;
    // A vid_gen job's frames (copied: the library's are valid only during the call).
    std::vector<std::vector<unsigned char>> frame_pixels;
    std::vector<ggdiff_image> frames;
    std::string frame_parameters;
    // The model that runs the job, and the video's sound track (audio-video models: LTX-2.3),
    // copied with its first frame (the library's is valid only during on_image).
    const ggdiff_model* model;
    SoundTrack sound;
};

int on_progress(const char* phase, int step, int total, double, void* user) {
    auto* c = static_cast<RunContext*>(user);
    std::lock_guard<std::mutex> lock(*c->mutex);
    Job& j = *c->job;
    JobProgress& p = j.progress;
    std::string ph = phase ? phase : "";
    // "sampling 2/3" is one batch item of several; a plain "sampling" covers the whole batch
    // (its only item, or every item of a data-parallel batch at once).
    const bool whole_batch = ph == "sampling";
    if (ph.rfind("sampling", 0) == 0) ph = "sampling";
    p.phase = ph;
    p.step = step;
    p.total = total;
    const double within = ph == "sampling" && total > 0 ? static_cast<double>(step) / total : 0.0;
    const double fraction = whole_batch ? within : (p.images_done + within) / std::max(1, p.batch);
    p.fraction = std::clamp(std::max(p.fraction, fraction), 0.0, 1.0);
    j.version++;
    c->cv->notify_all();
    return j.cancel_requested ? 0 : 1;
}

// A video's frame is kept until the last one; the progress counts it as an image.
void keep_frame(const ggdiff_image* image, RunContext* c) {
    const size_t bytes = static_cast<size_t>(image->width) * image->height * image->channels;
    c->frame_pixels.emplace_back(image->data, image->data + bytes);
    ggdiff_image frame = *image;
    frame.parameters = nullptr;
    c->frames.push_back(frame);
    if (c->frames.size() == 1 && image->parameters) c->frame_parameters = image->parameters;
    if (c->frames.size() == 1) c->sound = current_sound_track(c->model);
    std::lock_guard<std::mutex> lock(*c->mutex);
    Job& j = *c->job;
    j.progress.images_done = static_cast<int>(c->frames.size());
    j.version++;
    c->cv->notify_all();
}

// The kept frames as one container (webp or avi) at the request's fps, with the sound track
// when there is one: in the AVI as its PCM stream, beside a WebP as WAV bytes.
void encode_video_result(RunContext& c) {
    const GenRequest& r = c.job->request;
    if (c.frames.empty()) return;
    for (size_t i = 0; i < c.frames.size(); ++i) c.frames[i].data = c.frame_pixels[i].data();
    c.frames[0].parameters =
        r.embed_metadata && !c.frame_parameters.empty() ? c.frame_parameters.data() : nullptr;
    const int count = static_cast<int>(c.frames.size());
    EncodedImage video;
    try {
        if (!c.sound.empty() && r.output_format == "avi") {
            video.bytes = avi_with_sound(c.frames.data(), count, r.fps, r.quality, c.sound);
            video.audio_in_container = true;
        } else {
            unsigned char* bytes = nullptr;
            size_t size = 0;
            if (ggdiff_video_encode(c.frames.data(), count, r.fps, r.output_format.c_str(),
                                    r.quality, &bytes, &size) != 0) {
                c.encode_error = ggdiff_last_error();
                return;
            }
            video.bytes.assign(bytes, bytes + size);
            std::free(bytes);
            if (!c.sound.empty()) video.audio_wav = sound_to_wav(c.sound);
        }
    } catch (const std::exception& e) {
        c.encode_error = e.what();
        return;
    }
    if (!c.sound.empty()) {
        video.audio_sample_rate = c.sound.sample_rate;
        video.audio_channels = c.sound.channels;
        video.audio_samples = c.sound.frames();
    }
    video.format = r.output_format;
    video.width = c.frames[0].width;
    video.height = c.frames[0].height;
    video.seed = c.frames[0].seed;
    video.parameters = c.frame_parameters;
    video.frame_count = static_cast<int>(c.frames.size());
    video.fps = r.fps;
    c.frame_pixels.clear();
    c.frames.clear();
    c.sound = SoundTrack{};
    std::lock_guard<std::mutex> lock(*c.mutex);
    c.job->images.push_back(std::move(video));
    c.job->version++;
    c.cv->notify_all();
}

void on_image(const ggdiff_image* image, int, void* user) {
    auto* c = static_cast<RunContext*>(user);
    const GenRequest& r = c->job->request;
    if (r.video) return keep_frame(image, c);
    EncodedImage encoded;
    try {
        encoded = encode_result(*image, r.output_format, r.quality, r.embed_metadata);
    } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(*c->mutex);
        c->encode_error = e.what();
        return;
    }
    std::lock_guard<std::mutex> lock(*c->mutex);
    Job& j = *c->job;
    j.images.push_back(std::move(encoded));
    j.progress.images_done = static_cast<int>(j.images.size());
    j.progress.fraction =
        std::clamp(std::max(j.progress.fraction, static_cast<double>(j.progress.images_done) /
                                                     std::max(1, j.progress.batch)),
                   0.0, 1.0);
    j.version++;
    c->cv->notify_all();
}

// An extras job: the upscaler's passes, then a resize to the requested size if needed.
int run_upscale(Job& job, RunContext& ctx) {
    ggdiff_image* out = nullptr;
    if (ggdiff_upscale(job.upscaler, job.options.get(), job.upscale_input.get(), on_progress, &ctx,
                       &out) != 0) {
        return 1;
    }
    ImagePtr image(out);
    if (job.upscale_width > 0 && job.upscale_height > 0 &&
        (out->width != job.upscale_width || out->height != job.upscale_height)) {
        ggdiff_image* resized = nullptr;
        if (ggdiff_image_resize(out, job.upscale_width, job.upscale_height, &resized) != 0) {
            return 1;
        }
        image.reset(resized);
    }
    on_image(image.get(), 0, &ctx);
    return 0;
}

// Keeps the newest preview as PNG (no metadata: a preview has no parameters).
void on_preview(const ggdiff_image* image, int step, int total, void* user) {
    auto* c = static_cast<RunContext*>(user);
    std::shared_ptr<const EncodedImage> encoded;
    try {
        encoded = std::make_shared<const EncodedImage>(encode_result(*image, "png", 100, false));
    } catch (const std::exception&) {
        return;  // a preview that cannot be encoded is skipped; the job goes on
    }
    std::lock_guard<std::mutex> lock(*c->mutex);
    LivePreview& p = c->job->preview;
    p.image = std::move(encoded);
    p.step = step;
    p.total = total;
    p.count++;
    // The preview of a step comes before that step's progress report: a client that sees the
    // image sees its step too.
    JobProgress& g = c->job->progress;
    if (g.phase != "sampling" || g.step < step) {
        g.phase = "sampling";
        g.step = step;
        g.total = total;
    }
    c->job->version++;
    c->cv->notify_all();
}

}  // namespace

void JobManager::run(const std::shared_ptr<Job>& job) {
    RunContext ctx{this, job.get(), &mutex_, &cv_, "", {}, {}, "", nullptr, {}};
    const auto t0 = Clock::now();
    std::shared_ptr<LoadedModel> model;
    std::string load_error;
    bool refused = false;  // the request asks for what the model cannot do
    if (job->kind != "upscale") {
        model = host_.library().acquire(
            job->request.model, job->request.vae,
            [&] {
                std::lock_guard<std::mutex> lock(mutex_);
                return job->cancel_requested || stopping_;
            },
            &load_error);
        if (model) {
            // What waited for the model's family (it was never loaded when the job came).
            load_error = settle_for_model(job->request, model->info, job->options.get());
            if (!load_error.empty()) {
                model.reset();
                refused = true;
            } else {
                ctx.model = model->model;
            }
        }
        std::lock_guard<std::mutex> lock(mutex_);
        if (model && job->status == JobStatus::loading) {
            job->status = JobStatus::generating;
            job->started_at = Clock::now();  // the ETA counts from here
            job->version++;
            cv_.notify_all();
        }
    }
    const int rc = job->kind == "upscale" ? run_upscale(*job, ctx)
                   : !model               ? -1
                            : ggdiff_generate_each_preview(model->model, job->options.get(),
                                                           on_progress, on_image, on_preview, &ctx);
    model.reset();  // the library may unload it now
    ctx.model = nullptr;
    if (rc == 0 && job->request.video) encode_video_result(ctx);
    const std::string error = rc == 0                                         ? ""
                              : job->kind != "upscale" && !load_error.empty() ? load_error
                                                                              : ggdiff_last_error();
    OptionsPtr release;
    std::lock_guard<std::mutex> lock(mutex_);
    release = std::move(job->options);
    job->upscale_input.reset();
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    avg_job_s_ = avg_job_s_ > 0.0 ? 0.8 * avg_job_s_ + 0.2 * secs : secs;
    running_.reset();
    if (job->cancel_requested) {
        job->error_code = "cancelled";
        job->error_message = "job cancelled by client";
        finish_locked(*job, JobStatus::cancelled);
    } else if (rc != 0 || !ctx.encode_error.empty()) {
        job->error_code = refused                    ? "unsupported_input"
                          : !load_error.empty()      ? "model_load_failed"
                          : rc == GGDIFF_ERROR_INPUT ? "invalid_input"
                                                     : "generation_failed";
        job->error_message = rc != 0 ? error : ctx.encode_error;
        finish_locked(*job, JobStatus::failed);
    } else {
        finish_locked(*job, JobStatus::completed);
    }
}

}  // namespace ggdiff::server
