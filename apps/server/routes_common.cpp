// What the route families share: queuing a request as a job, the job's JSON, and /health.
#include <algorithm>
#include <cstdio>

#include "http_util.h"
#include "routes.h"
#include "security.h"

namespace ggdiff::server {

void submit_or_refuse(ServerContext& ctx, const std::shared_ptr<Job>& job) {
    auto submitted = ctx.jobs.submit(job);
    if (!submitted.job) {
        RequestError e(429, "",
                       "the queue is full (" + std::to_string(ctx.jobs.max_queue()) +
                           " jobs wait); retry later");
        e.retry_after_s = submitted.retry_after_s;
        throw e;
    }
}

std::shared_ptr<Job> submit_request(ServerContext& ctx, GenRequest request,
                                    const std::string& api) {
    auto job = std::make_shared<Job>();
    // Checked first (it needs no model), so a bad request is named even while the model loads.
    job->options = build_options(request, ctx.host, ctx.loras, ctx.config);
    if (ctx.host.state() != ModelHost::State::ready) {
        RequestError e(503, "", "the model is still loading; try again shortly");
        e.retry_after_s = 5;
        throw e;
    }
    if (request.video) job->kind = "vid_gen";
    job->request = std::move(request);
    job->id = new_job_id();
    job->api = api;
    submit_or_refuse(ctx, job);
    return job;
}

nlohmann::json preview_json(const JobView& v) {
    if (!v.preview.image) return nullptr;
    const EncodedImage& img = *v.preview.image;
    return {{"step", v.preview.step},      {"total", v.preview.total},  {"count", v.preview.count},
            {"width", img.width},          {"height", img.height},      {"seed", img.seed},
            {"output_format", img.format}, {"b64_json", to_base64(img)}};
}

nlohmann::json job_json(const JobView& v, bool images) {
    auto time_or_null = [](int64_t t) { return t ? nlohmann::json(t) : nlohmann::json(nullptr); };
    nlohmann::json j;
    j["id"] = v.id;
    j["kind"] = v.kind;
    j["status"] = job_status_name(v.status);
    j["created"] = v.created;
    j["started"] = time_or_null(v.started);
    j["completed"] = time_or_null(v.finished);
    j["queue_position"] = v.queue_position;
    j["cancel_requested"] = v.cancel_requested;
    j["progress"] = {{"phase", v.progress.phase},
                     {"step", v.progress.step},
                     {"total", v.progress.total},
                     {"images_done", v.progress.images_done},
                     {"batch", v.progress.batch},
                     {"fraction", v.progress.fraction},
                     {"eta_seconds", v.progress.eta_s >= 0 ? nlohmann::json(v.progress.eta_s)
                                                           : nlohmann::json(nullptr)}};
    if (images && v.kind == "vid_gen" && !v.images.empty()) {
        // sd-server's video result: the whole container, not a list of frames.
        const EncodedImage& video = v.images.front();
        j["result"] = {{"b64_json", to_base64(video)},     {"mime_type", mime_type(video.format)},
                       {"output_format", video.format},    {"fps", video.fps},
                       {"frame_count", video.frame_count}, {"width", video.width},
                       {"height", video.height},           {"seed", video.seed},
                       {"parameters", video.parameters}};
        // Its sound track (audio-video models: LTX-2.3 with an audio VAE): an AVI carries
        // it as its PCM stream; beside a WebP it comes as a WAV file.
        if (video.audio_samples > 0) {
            nlohmann::json audio = {{"sample_rate", video.audio_sample_rate},
                                    {"channels", video.audio_channels},
                                    {"sample_count", video.audio_samples},
                                    {"duration_seconds", static_cast<double>(video.audio_samples) /
                                                             std::max(1, video.audio_sample_rate)},
                                    {"in_container", video.audio_in_container}};
            if (!video.audio_in_container) {
                audio["format"] = "wav";
                audio["mime_type"] = "audio/wav";
                audio["b64_json"] = to_base64(video.audio_wav);
            }
            j["result"]["audio"] = audio;
        }
    } else if (images && !v.images.empty()) {
        nlohmann::json list = nlohmann::json::array();
        for (size_t i = 0; i < v.images.size(); ++i) {
            const EncodedImage& img = v.images[i];
            list.push_back({{"index", i},
                            {"b64_json", to_base64(img)},
                            {"seed", img.seed},
                            {"width", img.width},
                            {"height", img.height},
                            {"parameters", img.parameters}});
        }
        j["result"] = {{"output_format", v.output_format}, {"images", list}};
    } else {
        j["result"] = nullptr;
    }
    // The latest live preview while the job samples (the "preview" option).
    j["preview"] = images && v.preview.image ? preview_json(v) : nlohmann::json(nullptr);
    if (v.error_code.empty()) {
        j["error"] = nullptr;
    } else {
        j["error"] = {{"code", v.error_code}, {"message", v.error_message}};
    }
    return j;
}

void register_health_routes(httplib::Server& server, ServerContext& ctx) {
    server.Get("/health", [&ctx](const httplib::Request&, httplib::Response& res) {
        switch (ctx.host.state()) {
            case ModelHost::State::ready: {
                const ModelLibrary& lib = ctx.host.library();
                nlohmann::json h = {{"status", "ok"},
                                    {"model", ctx.host.model_info().value("name", "")},
                                    {"loaded_models", lib.loaded()},
                                    {"queued", ctx.jobs.queued_count()},
                                    {"busy", ctx.jobs.running().has_value()}};
                // With --models-dir the first model may have failed: the others still serve.
                if (!ctx.host.load_error().empty()) h["model_error"] = ctx.host.load_error();
                send_json(res, 200, h);
            } break;
            case ModelHost::State::loading:
                res.set_header("Retry-After", "5");
                send_json(res, 503, {{"status", "loading"}});
                break;
            case ModelHost::State::failed:
                send_json(res, 503, {{"status", "failed"}, {"error", ctx.host.load_error()}});
                break;
        }
    });
}

void register_all_routes(httplib::Server& server, ServerContext& ctx) {
    install_request_guards(server, ctx.config);
    register_health_routes(server, ctx);
    register_openai_routes(server, ctx);
    register_sdapi_routes(server, ctx);
    register_sdcpp_routes(server, ctx);
    register_web_routes(server, ctx);
}

}  // namespace ggdiff::server
