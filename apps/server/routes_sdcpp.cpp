// stable-diffusion.cpp's native async API (/sdcpp/v1/...) with its routes and shapes, so its
// clients work: capabilities, img_gen (202 + job id + poll URL), job status, cancel. Beyond
// it: cancel of a running job (it stops at its next step), progress with phase/step/ETA,
// server-sent events per job, and a list of recent jobs (a client that lost its connection
// finds its result there).
#include "http_util.h"
#include "json_fields.h"
#include "routes.h"

namespace ggdiff::server {

namespace {

constexpr int64_t kMaxSeed = INT64_MAX - (1 << 20);
constexpr int kMaxEventStreams = 32;
const char kJobPattern[] = R"(/sdcpp/v1/jobs/([A-Za-z0-9_\-]{1,64}))";

std::string default_or(const ModelHost& host, const char* name, const std::string& fallback) {
    const std::string v = host.default_value(name);
    return v.empty() ? fallback : v;
}

nlohmann::json number_json(const std::string& text) {
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    return j.is_number() ? j : nlohmann::json(nullptr);
}

nlohmann::json defaults_json(const ServerContext& ctx) {
    const ModelHost& h = ctx.host;
    return {
        {"prompt", default_or(h, "prompt", "")},
        {"negative_prompt", default_or(h, "negative-prompt", "")},
        {"clip_skip", number_json(default_or(h, "clip-skip", "-1"))},
        {"width", number_json(default_or(h, "width", "512"))},
        {"height", number_json(default_or(h, "height", "512"))},
        {"strength", number_json(default_or(h, "strength", "0.75"))},
        {"seed", ctx.config.seed_given ? number_json(h.default_value("seed")) : nlohmann::json(-1)},
        {"batch_count", number_json(default_or(h, "batch-count", "1"))},
        {"sample_params",
         {{"scheduler", default_or(h, "scheduler", "discrete")},
          {"sample_method", default_or(h, "sampling-method", "euler_a")},
          {"sample_steps", number_json(default_or(h, "steps", "20"))},
          {"eta", number_json(default_or(h, "eta", "null"))},
          {"shifted_timestep", 0},
          {"flow_shift", nullptr},
          {"guidance",
           {{"txt_cfg", number_json(default_or(h, "cfg-scale", "7"))},
            {"img_cfg", number_json(default_or(h, "img-cfg-scale", "null"))},
            {"distilled_guidance", number_json(default_or(h, "guidance", "3.5"))},
            {"slg",
             {{"layers", {7, 8, 9}},
              {"layer_start", 0.01},
              {"layer_end", 0.2},
              {"scale", 0.0}}}}}}},
        {"vae_tiling_params",
         {{"enabled", default_or(h, "vae-tiling", "false") != "false"},
          {"temporal_tiling", false},
          {"tile_size_x", 32},
          {"tile_size_y", 32},
          {"target_overlap", 0.5},
          {"rel_size_x", 0.0},
          {"rel_size_y", 0.0},
          {"extra_tiling_args", ""}}},
        {"cache_mode", "disabled"},
        {"output_format", "png"},
        {"output_compression", 100},
    };
}

nlohmann::json capabilities(ServerContext& ctx) {
    const nlohmann::json info = ctx.host.model_info();
    nlohmann::json samplers = nlohmann::json::array(), schedulers = nlohmann::json::array();
    for (const auto& s : ctx.host.samplers()) samplers.push_back(s["name"]);
    for (const auto& s : ctx.host.schedulers()) schedulers.push_back(s["name"]);
    nlohmann::json loras = nlohmann::json::array();
    for (const LoraEntry& e : ctx.loras.list())
        loras.push_back({{"name", e.name}, {"path", e.path}});
    const nlohmann::json features = {{"init_image", true},
                                     {"mask_image", false},
                                     {"control_image", false},
                                     {"ip_adapter_image", false},
                                     {"ref_images", false},
                                     {"lora", ctx.host.lora_supported()},
                                     {"vae_tiling", true},
                                     {"hires", false},
                                     {"cache", false},
                                     {"cancel_queued", true},
                                     {"cancel_generating", true},
                                     {"preview", false},
                                     {"events", true}};
    const nlohmann::json formats = {"png", "jpeg", "webp"};
    const nlohmann::json defaults = defaults_json(ctx);
    return {{"model",
             {{"name", info.value("file", "")},
              {"stem", info.value("name", "")},
              {"path", info.value("file", "")},
              {"family", info.contains("family") ? info["family"] : nlohmann::json(nullptr)},
              {"vae", info.contains("vae") ? info["vae"] : nlohmann::json(nullptr)}}},
            {"version", std::string("ggdiff ") + ggdiff_version()},
            {"current_mode", "img_gen"},
            {"supported_modes", {"img_gen"}},
            {"defaults", defaults},
            {"defaults_by_mode", {{"img_gen", defaults}}},
            {"output_formats", formats},
            {"output_formats_by_mode", {{"img_gen", formats}}},
            {"features", features},
            {"features_by_mode", {{"img_gen", features}}},
            {"samplers", samplers},
            {"schedulers", schedulers},
            {"loras", loras},
            {"upscalers", nlohmann::json::array({{{"name", "None"}}})},
            {"limits",
             {{"min_width", 8},
              {"max_width", ctx.config.max_size},
              {"min_height", 8},
              {"max_height", ctx.config.max_size},
              {"max_batch_count", ctx.config.max_batch},
              {"max_steps", ctx.config.max_steps},
              {"max_queue_size", ctx.config.max_queue},
              {"max_upload_pixels", ctx.config.max_upload_pixels},
              {"max_body_bytes", ctx.config.max_body_bytes}}}};
}

void refuse_image(const Fields& f, const char* key, const char* what) {
    if (f.has(key)) throw not_supported(key, what);
}

GenRequest parse_img_gen(const nlohmann::json& body, ServerContext& ctx) {
    Fields f(body);
    GenRequest r;
    r.kind = "img_gen";
    r.prompt.set(f.string("prompt"), "prompt");
    r.negative_prompt.set(f.string("negative_prompt"), "negative_prompt");
    r.clip_skip.set(f.integer("clip_skip", -1, 12), "clip_skip");
    r.width.set(f.integer("width", -(1 << 20), 1 << 20), "width");
    r.height.set(f.integer("height", -(1 << 20), 1 << 20), "height");
    r.strength.set(f.number("strength", -1e9, 1e9), "strength");
    r.seed.set(f.integer("seed", INT64_MIN, kMaxSeed), "seed");
    r.batch.set(f.integer("batch_count", -(1 << 20), 1 << 20), "batch_count");
    r.embed_metadata = f.boolean("embed_image_metadata").value_or(true);
    if (auto init = f.string("init_image", ctx.config.max_body_bytes)) {
        ImagePtr img = decode_base64_upload(*init, ctx.config.max_upload_pixels, "init_image");
        r.init_image = std::shared_ptr<ggdiff_image>(img.release(), ImageDeleter());
        r.init_image_field = "init_image";
        r.kind = "img2img";
    }
    refuse_image(f, "mask_image", "inpainting (mask_image)");
    refuse_image(f, "control_image", "ControlNet (control_image)");
    refuse_image(f, "ip_adapter_image", "IP-Adapter (ip_adapter_image)");
    if (!f.array("ref_images", 64).empty()) throw not_supported("ref_images", "reference images");

    if (auto sp = f.object("sample_params")) {
        r.scheduler.set(sp->string("scheduler", 256), sp->path("scheduler"));
        r.sampler.set(sp->string("sample_method", 256), sp->path("sample_method"));
        r.steps.set(sp->integer("sample_steps", -(1 << 20), 1 << 20), sp->path("sample_steps"));
        r.eta.set(sp->number("eta", 0, 100), sp->path("eta"));
        if (sp->integer("shifted_timestep", INT32_MIN, INT32_MAX).value_or(0) != 0) {
            throw not_supported(sp->path("shifted_timestep"), "a shifted timestep");
        }
        if (sp->has("flow_shift")) {
            const double fs = sp->number("flow_shift", -1e9, 1e9).value_or(0.0);
            if (fs != 0.0) throw not_supported(sp->path("flow_shift"), "flow shift");
        }
        auto sigmas = sp->array("custom_sigmas", 10001);
        if (!sigmas.empty()) {
            std::string list;
            for (size_t i = 0; i < sigmas.size(); ++i) {
                if (!sigmas[i].is_number()) {
                    throw bad_field(sp->path("custom_sigmas") + "[" + std::to_string(i) + "]",
                                    "expected a number, got " + json_type_phrase(sigmas[i]));
                }
                list += (list.empty() ? "" : ",") + sigmas[i].dump();
            }
            r.sigmas.set(list, sp->path("custom_sigmas"));
        }
        if (auto g = sp->object("guidance")) {
            r.cfg_scale.set(g->number("txt_cfg", -1000, 1000), g->path("txt_cfg"));
            r.img_cfg_scale.set(g->number("img_cfg", -1000, 1000), g->path("img_cfg"));
            r.guidance.set(g->number("distilled_guidance", -1000, 1000),
                           g->path("distilled_guidance"));
            if (auto slg = g->object("slg")) {
                if (slg->number("scale", -1e9, 1e9).value_or(0.0) != 0.0) {
                    throw not_supported(slg->path("scale"), "skip-layer guidance");
                }
            }
        }
    }
    for (const nlohmann::json& item : f.array("lora", 64)) {
        if (!item.is_object()) throw bad_field("lora", "expected objects {path, multiplier}");
        Fields lf(item, "lora[]");
        LoraUse use;
        use.name = lf.string("path", 4096).value_or("");
        if (use.name.empty())
            throw bad_field("lora[].path", "required (a name from /sdapi/v1/loras)");
        use.weight = lf.number("multiplier", -100, 100).value_or(1.0);
        if (lf.boolean("is_high_noise").value_or(false)) {
            throw not_supported("lora[].is_high_noise", "high-noise LoRA");
        }
        use.field = "lora[].path";
        r.loras.push_back(use);
    }
    if (auto hires = f.object("hires")) {
        if (hires->boolean("enabled").value_or(false))
            throw not_supported("hires.enabled", "hires fix");
    }
    if (auto vt = f.object("vae_tiling_params")) {
        r.vae_tiling.set(vt->boolean("enabled"), vt->path("enabled"));
        const auto x = vt->integer("tile_size_x", 0, 4096).value_or(0);
        const auto y = vt->integer("tile_size_y", 0, 4096).value_or(0);
        if (x > 0) r.vae_tile_x.set(x, vt->path("tile_size_x"));
        if (y > 0) r.vae_tile_y.set(y, vt->path("tile_size_y"));
        r.vae_tile_overlap.set(vt->number("target_overlap", 0, 0.99), vt->path("target_overlap"));
        for (const char* k : {"rel_size_x", "rel_size_y"}) {
            if (vt->number(k, -1e9, 1e9).value_or(0.0) != 0.0)
                throw not_supported(vt->path(k), "relative tile sizes");
        }
    }
    const std::string cache = f.string("cache_mode", 64).value_or("disabled");
    if (!cache.empty() && cache != "disabled") throw not_supported("cache_mode", "step caching");
    if (auto of = f.string("output_format", 16)) {
        if (*of == "png" || *of == "webp")
            r.output_format = *of;
        else if (*of == "jpeg" || *of == "jpg")
            r.output_format = "jpeg";
        else
            throw bad_field("output_format", "'" + *of + "' is not one of png, jpeg, webp");
    }
    r.quality =
        std::max<int>(1, static_cast<int>(f.integer("output_compression", 0, 100).value_or(100)));
    return r;
}

void not_found(httplib::Response& res, Lookup lookup) {
    if (lookup == Lookup::expired) {
        send_error(res, ApiStyle::sdcpp, 410, "",
                   "job expired (results are kept for --result-ttl seconds)");
    } else {
        send_error(res, ApiStyle::sdcpp, 404, "", "job not found");
    }
}

std::string sse_event(const std::string& event, const nlohmann::json& data) {
    return "event: " + event +
           "\ndata: " + data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
           "\n\n";
}

}  // namespace

void register_sdcpp_routes(httplib::Server& server, ServerContext& ctx) {
    server.Get("/sdcpp/v1/capabilities", [&ctx](const httplib::Request&, httplib::Response& res) {
        send_json(res, 200, capabilities(ctx));
    });
    server.Post("/sdcpp/v1/img_gen", [&ctx](const httplib::Request& req, httplib::Response& res) {
        guarded(res, ApiStyle::sdcpp, [&] {
            auto job =
                submit_request(ctx, parse_img_gen(parse_json_object(req.body), ctx), "img_gen");
            const JobView v = ctx.jobs.view(*job, false);
            res.set_header("Location", "/sdcpp/v1/jobs/" + v.id);
            send_json(res, 202,
                      {{"id", v.id},
                       {"kind", v.kind},
                       {"status", job_status_name(v.status)},
                       {"created", v.created},
                       {"poll_url", "/sdcpp/v1/jobs/" + v.id},
                       {"events_url", "/sdcpp/v1/jobs/" + v.id + "/events"}});
        });
    });
    server.Post("/sdcpp/v1/vid_gen", [](const httplib::Request&, httplib::Response& res) {
        send_error(res, ApiStyle::sdcpp, 400, "",
                   "video generation (vid_gen) is not supported yet");
    });
    server.Get("/sdcpp/v1/jobs", [&ctx](const httplib::Request&, httplib::Response& res) {
        nlohmann::json list = nlohmann::json::array();
        for (const JobView& v : ctx.jobs.list()) list.push_back(job_json(v, false));
        send_json(res, 200, {{"jobs", list}});
    });
    server.Get(kJobPattern, [&ctx](const httplib::Request& req, httplib::Response& res) {
        std::shared_ptr<Job> job;
        const Lookup l = ctx.jobs.find(req.matches[1], &job);
        if (l != Lookup::found) return not_found(res, l);
        send_json(res, 200, job_json(ctx.jobs.view(*job, true), true));
    });
    server.Post(std::string(kJobPattern) + "/cancel", [&ctx](const httplib::Request& req,
                                                             httplib::Response& res) {
        JobView v;
        const Lookup l = ctx.jobs.cancel(req.matches[1], &v);
        if (l != Lookup::found) return not_found(res, l);
        // A running job stops at its next step: 202 until it has.
        send_json(res, v.status == JobStatus::generating ? 202 : 200, job_json(v, false));
    });
    server.Get(std::string(kJobPattern) + "/events", [&ctx](const httplib::Request& req,
                                                            httplib::Response& res) {
        std::shared_ptr<Job> job;
        const Lookup l = ctx.jobs.find(req.matches[1], &job);
        if (l != Lookup::found) return not_found(res, l);
        if (ctx.event_streams.fetch_add(1) >= kMaxEventStreams) {
            ctx.event_streams--;
            res.set_header("Retry-After", "5");
            send_error(res, ApiStyle::sdcpp, 429, "",
                       "too many event streams open (" + std::to_string(kMaxEventStreams) + ")");
            return;
        }
        struct Stream {
            uint64_t seen = UINT64_MAX;
            bool done = false;
        };
        auto stream = std::make_shared<Stream>();
        res.set_header("Cache-Control", "no-cache");
        res.set_header("X-Accel-Buffering", "no");
        res.set_chunked_content_provider(
            "text/event-stream",
            [&ctx, job, stream](size_t, httplib::DataSink& sink) {
                if (stream->done || ctx.jobs.stopping()) {
                    sink.done();
                    return true;
                }
                const JobView v =
                    stream->seen == UINT64_MAX
                        ? ctx.jobs.view(*job, false)
                        : ctx.jobs.wait_change(*job, stream->seen, std::chrono::seconds(10));
                std::string out;
                if (v.terminal()) {
                    out = sse_event(job_status_name(v.status),
                                    job_json(ctx.jobs.view(*job, true), true));
                    stream->done = true;
                } else if (v.version != stream->seen) {
                    out = sse_event("progress", job_json(v, false));
                } else {
                    out = ": keep-alive\n\n";
                }
                stream->seen = v.version;
                return sink.write(out.data(), out.size());
            },
            [&ctx](bool) { ctx.event_streams--; });
    });
}

}  // namespace ggdiff::server
