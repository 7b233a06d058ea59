// The AUTOMATIC1111 API (/sdapi/v1/...): txt2img and img2img answered when done, with
// `images` as base64 PNG carrying the parameters chunk and `info` as a JSON string; the
// lists A1111 clients read; /options; /progress and /interrupt.
#include <ctime>

#include "engine_options.h"
#include "http_util.h"
#include "json_fields.h"
#include "routes.h"

namespace ggdiff::server {

namespace {

constexpr int64_t kMaxSeed = INT64_MAX - (1 << 20);
constexpr size_t kMaxImages = 64;  // init_images and extra_images, as the native ref_images

// A1111 fields that switch on something ggdiff has no engine option for: refused by name.
void refuse_unsupported(const Fields& f) {
    if (f.flag("restore_faces").value_or(false))
        throw not_supported("restore_faces", "face restoration");
    if (f.number("subseed_strength", -1e9, 1e9).value_or(0.0) != 0.0) {
        throw not_supported("subseed_strength", "variation seeds");
    }
    for (const char* k : {"seed_resize_from_w", "seed_resize_from_h"}) {
        if (f.integer(k, -1, 1 << 20).value_or(0) > 0) throw not_supported(k, "seed resize");
    }
    if (!f.string("script_name", 4096).value_or("").empty())
        throw not_supported("script_name", "scripts");
    if (f.has("alwayson_scripts")) {
        auto scripts = f.object("alwayson_scripts");
        if (scripts && !scripts->json().empty()) throw not_supported("alwayson_scripts", "scripts");
    }
    if (!f.array("styles", 64).empty()) throw not_supported("styles", "styles");
    if (!f.string("refiner_checkpoint", 4096).value_or("").empty()) {
        throw not_supported("refiner_checkpoint", "a refiner");
    }
    // k-diffusion's sampler knobs at values other than A1111's neutral ones.
    if (f.number("s_churn", -1e9, 1e9).value_or(0.0) != 0.0)
        throw not_supported("s_churn", "stochastic churn");
    if (f.number("s_noise", -1e9, 1e9).value_or(1.0) != 1.0)
        throw not_supported("s_noise", "a noise multiplier for ancestral steps");
    if (f.number("s_min_uncond", -1e9, 1e9).value_or(0.0) != 0.0)
        throw not_supported("s_min_uncond", "skipping the negative prompt at low noise");
    if (!f.string("infotext", 1 << 20).value_or("").empty())
        throw not_supported("infotext", "settings read from an infotext");
    if (!f.string("firstpass_image", 64 << 20).value_or("").empty())
        throw not_supported("firstpass_image", "a hires pass from a given first-pass image");
    if (f.number("initial_noise_multiplier", -1e9, 1e9).value_or(1.0) != 1.0)
        throw not_supported("initial_noise_multiplier", "an initial noise multiplier");
    if (!f.string("latent_mask", 64 << 20).value_or("").empty())
        throw not_supported("latent_mask", "inpainting");
}

// A1111's hires fix fields (txt2img with enable_hr) as the engine's --hires options. A side
// given alone keeps the first pass's aspect, as A1111 computes it.
void set_hires(const Fields& f, GenRequest& r) {
    r.set("hires", "true", "enable_hr");
    r.set_number("hires-scale", f.number("hr_scale", -1e9, 1e9), "hr_scale");
    if (auto up = f.string("hr_upscaler", 256)) {
        if (!up->empty()) r.set("hires-upscaler", *up, "hr_upscaler");
    }
    r.set_int("hires-steps", f.integer("hr_second_pass_steps", -(1 << 20), 1 << 20),
              "hr_second_pass_steps");
    r.set_number("hires-denoising-strength", f.number("denoising_strength", -1e9, 1e9),
                 "denoising_strength");
    const int64_t rx = f.integer("hr_resize_x", 0, 1 << 20).value_or(0);
    const int64_t ry = f.integer("hr_resize_y", 0, 1 << 20).value_or(0);
    if (rx > 0 || ry > 0) {
        const int64_t w = f.integer("width", 1, 1 << 20).value_or(512);
        const int64_t h = f.integer("height", 1, 1 << 20).value_or(512);
        r.set("hires-width", std::to_string(rx > 0 ? rx : ry * w / h), "hr_resize_x");
        r.set("hires-height", std::to_string(ry > 0 ? ry : rx * h / w), "hr_resize_y");
    }
    // The second pass shares the first one's sampler, prompts and checkpoint here (A1111
    // clients send "Use same sampler" and the like for that).
    auto same_or_empty = [&](const char* key, const char* first_key) {
        const std::string v = f.string(key, 1 << 20).value_or("");
        return v.empty() || v == f.string(first_key, 1 << 20).value_or("") ||
               v == "Use same sampler" || v == "Use same scheduler" || v == "Automatic";
    };
    if (!same_or_empty("hr_sampler_name", "sampler_name"))
        throw not_supported("hr_sampler_name", "a second-pass sampler of its own");
    if (!same_or_empty("hr_scheduler", "scheduler"))
        throw not_supported("hr_scheduler", "a second-pass scheduler of its own");
    if (!same_or_empty("hr_prompt", "prompt"))
        throw not_supported("hr_prompt", "a second-pass prompt of its own");
    if (!same_or_empty("hr_negative_prompt", "negative_prompt"))
        throw not_supported("hr_negative_prompt", "a second-pass negative prompt of its own");
    const std::string ckpt = f.string("hr_checkpoint_name", 4096).value_or("");
    if (!ckpt.empty() && ckpt != "Use same checkpoint")
        throw not_supported("hr_checkpoint_name", "a second-pass checkpoint");
}

struct A1111Request {
    GenRequest gen;
    bool send_images = true;
};

A1111Request parse(const nlohmann::json& body, bool img2img, ServerContext& ctx) {
    Fields f(body);
    refuse_unsupported(f);
    A1111Request out;
    GenRequest& r = out.gen;
    r.kind = img2img ? "img2img" : "txt2img";
    r.embed_metadata = ctx.config.embed_metadata;
    r.set_text("prompt", f.string("prompt"), "prompt");
    r.set_text("negative-prompt", f.string("negative_prompt"), "negative_prompt");
    r.set_int("width", f.integer("width", -(1 << 20), 1 << 20), "width");
    r.set_int("height", f.integer("height", -(1 << 20), 1 << 20), "height");
    r.set_int("steps", f.integer("steps", -(1 << 20), 1 << 20), "steps");
    r.set_number("cfg-scale", f.number("cfg_scale", -1000, 1000), "cfg_scale");
    r.set_int("seed", f.integer("seed", INT64_MIN, kMaxSeed), "seed");
    r.set_number("eta", f.number("eta", 0, 100), "eta");
    if (f.has("sampler_name")) {
        r.set_text("sampling-method", f.string("sampler_name", 256), "sampler_name");
    } else {
        r.set_text("sampling-method", f.string("sampler_index", 256), "sampler_index");
    }
    // "Automatic" is A1111's way of saying: the sampler's own default.
    const auto scheduler = f.string("scheduler", 256);
    if (scheduler && *scheduler != "Automatic" && *scheduler != "automatic") {
        r.set("scheduler", *scheduler, "scheduler");
    }
    const int64_t batch_size = f.integer("batch_size", 1, 1 << 20).value_or(1);
    const int64_t n_iter = f.integer("n_iter", 1, 1 << 20).value_or(1);
    if (batch_size * n_iter > ctx.config.max_batch) {
        throw bad_field(f.has("n_iter") ? "n_iter" : "batch_size",
                        "batch_size x n_iter is " + std::to_string(batch_size * n_iter) +
                            "; at most " + std::to_string(ctx.config.max_batch) +
                            " images per request (the server's --max-batch)");
    }
    if (batch_size * n_iter > 1) {
        r.set("batch-count", std::to_string(batch_size * n_iter),
              f.has("n_iter") ? "n_iter" : "batch_size");
    }
    // Switches the engine has options for (the schema says whether they work yet).
    if (!img2img && f.flag("enable_hr").value_or(false)) set_hires(f, r);
    // Seamless tiling wraps the loaded model's convolutions: chosen when the server starts.
    if (f.flag("tiling").value_or(false) && ctx.host.option_value("circular") != "true") {
        throw bad_field("tiling",
                        "seamless tiling is chosen when the model loads: start the server with "
                        "--circular");
    }
    // <lora:...> tags stay out of the way (removed from the prompts, not applied).
    r.strip_prompt_loras = f.flag("disable_extra_networks").value_or(false);
    out.send_images = f.boolean("send_images").value_or(true);

    // The model: override_settings' sd_model_checkpoint and sd_vae, else the current one.
    {
        std::optional<std::string> model, vae;
        if (f.has("override_settings") && body["override_settings"].is_object()) {
            const nlohmann::json& o = body["override_settings"];
            for (const char* key : {"sd_model_checkpoint", "sd_vae"}) {
                if (o.contains(key) && !o[key].is_string()) {
                    throw bad_field(std::string("override_settings.") + key,
                                    "expected a string, got " + json_type_phrase(o[key]));
                }
            }
            if (o.contains("sd_model_checkpoint"))
                model = o["sd_model_checkpoint"].get<std::string>();
            if (o.contains("sd_vae")) vae = o["sd_vae"].get<std::string>();
        }
        choose_model(r, ctx.host, model, "override_settings.sd_model_checkpoint", vae,
                     "override_settings.sd_vae");
    }

    // Settings, then this request's override_settings.
    std::string format = ctx.settings.samples_format();
    bool pnginfo = ctx.settings.enable_pnginfo();
    if (ctx.settings.clip_skip() > 0) {
        r.set("clip-skip", std::to_string(ctx.settings.clip_skip()), "CLIP_stop_at_last_layers");
    }
    r.set("rng", ctx.settings.rng(), "randn_source");
    int preview_every = ctx.settings.preview_interval();
    if (f.has("override_settings")) {
        ctx.settings.apply_overrides(body["override_settings"], r, &format, &pnginfo,
                                     &preview_every);
    }
    r.output_format = format;
    r.embed_metadata = pnginfo;
    // Live previews for /progress current_image: the server's --preview method (proj, the
    // cheap one, when it has none) every show_progress_every_n_steps steps.
    if (preview_every > 0) {
        const std::string method = ctx.host.option_value("preview");
        r.set("preview", method == "none" ? "proj" : method, "live_previews_enable");
        r.set("preview-interval", std::to_string(preview_every), "show_progress_every_n_steps");
    }

    // A model that attends to reference images (FLUX.1 Kontext, FLUX.2, Qwen Image Edit) takes
    // them from init_images (the first is the init image too, as our OpenAI edits do) and from
    // stable-diffusion.cpp's extra_images; any other model refuses both. A request that has
    // the extra_images field (even empty) names its references itself: its init image is then
    // only the init image, as in stable-diffusion.cpp's server (plain img2img on FLUX.1-dev).
    // A model never loaded yet: its references wait for its family (GenRequest::needs).
    const std::optional<bool> refs_known = model_can(r, ctx.host, "ref_images");
    const bool takes_refs = refs_known.value_or(true);
    const bool inits_are_refs = takes_refs && !f.has("extra_images");
    if (img2img) {
        auto inits = f.array("init_images", kMaxImages);
        if (inits.empty()) throw bad_field("init_images", "img2img needs one init image");
        if (inits.size() > 1 && !inits_are_refs) {
            throw bad_field("init_images",
                            "one init image only: " + std::to_string(inits.size()) +
                                " were given, and " +
                                (takes_refs ? "extra_images names the reference images"
                                            : "this model takes no reference images"));
        }
        for (size_t i = 0; i < inits.size(); ++i) {
            const std::string key = "init_images[" + std::to_string(i) + "]";
            if (!inits[i].is_string()) {
                throw bad_field(key, "expected a base64 string, got " + json_type_phrase(inits[i]));
            }
            const std::string& text = inits[i].get_ref<const std::string&>();
            if (i == 0) {
                r.add_image("init-img",
                            decode_base64_upload(text, ctx.config.max_upload_pixels, key), key);
            }
            if (inits_are_refs) {
                require_supported("ref-image", key);
                add_ref_image(r, ctx.host,
                              decode_base64_upload(text, ctx.config.max_upload_pixels, key), key,
                              inits.size() > 1);
            }
        }
        r.set_number("strength", f.number("denoising_strength", -1e9, 1e9), "denoising_strength");
        if (!r.get("strength")) r.set("strength", "0.75", "denoising_strength");
        r.set_number("img-cfg-scale", f.number("image_cfg_scale", -1000, 1000), "image_cfg_scale");
        if (auto mask = f.string("mask", ctx.config.max_body_bytes)) {
            require_supported("mask", "mask");
            if (f.integer("inpainting_fill", 0, 3).value_or(1) != 1) {
                throw not_supported("inpainting_fill", "masked-area fills other than 1 (original)");
            }
            if (f.flag("inpaint_full_res").value_or(false))
                throw not_supported("inpaint_full_res", "inpainting the masked area only");
            const bool invert = f.integer("inpainting_mask_invert", 0, 1).value_or(0) == 1;
            // A1111: mask_blur, when given, sets both directions (default 4 each).
            const std::optional<double> blur = f.number("mask_blur", 0, 1000);
            const double bx = blur ? *blur : f.number("mask_blur_x", 0, 1000).value_or(4.0);
            const double by = blur ? *blur : f.number("mask_blur_y", 0, 1000).value_or(4.0);
            r.add_image(
                "mask",
                a1111_mask(decode_base64_upload(*mask, ctx.config.max_upload_pixels, "mask"),
                           invert, bx, by),
                "mask");
        }
        const int64_t resize = f.integer("resize_mode", 0, 3).value_or(0);
        if (resize != 0)
            throw not_supported("resize_mode", "resize modes other than 0 (just resize)");
        if (f.flag("include_init_images").value_or(false)) {
            throw not_supported("include_init_images", "returning the init images");
        }
    }
    const auto extra = f.array("extra_images", kMaxImages);
    if (!extra.empty() && !takes_refs) {
        throw bad_field("extra_images",
                        "this model takes no reference images (FLUX.1 Kontext, FLUX.2 and Qwen "
                        "Image Edit models do)");
    }
    for (size_t i = 0; i < extra.size(); ++i) {
        const std::string key = "extra_images[" + std::to_string(i) + "]";
        require_supported("ref-image", key);
        if (!extra[i].is_string()) {
            throw bad_field(key, "expected a base64 string, got " + json_type_phrase(extra[i]));
        }
        add_ref_image(r, ctx.host,
                      decode_base64_upload(extra[i].get_ref<const std::string&>(),
                                           ctx.config.max_upload_pixels, key),
                      key, true);
    }
    // Any other per-request engine option, by its schema name.
    read_engine_options(f, "ggdiff", r);
    return out;
}

void generate(const httplib::Request& req, httplib::Response& res, ServerContext& ctx,
              bool img2img) {
    guarded(res, ApiStyle::a1111, [&] {
        const nlohmann::json body = parse_json_object(req.body);
        A1111Request a = parse(body, img2img, ctx);
        auto job = submit_request(ctx, a.gen, img2img ? "img2img" : "txt2img");
        const JobView done = ctx.jobs.wait_done(*job);
        if (done.status == JobStatus::failed) {
            throw RequestError(done.failure_http_status(), "",
                               "generation failed: " + done.error_message);
        }
        // Interrupted jobs answer like A1111: with the images finished before the stop.
        nlohmann::json images = nlohmann::json::array();
        if (a.send_images) {
            for (const EncodedImage& img : done.images) images.push_back(to_base64(img));
        }
        nlohmann::json params = body;
        if (img2img) {
            params["init_images"] = nullptr;
            params["mask"] = nullptr;
        }
        if (params.contains("extra_images")) params["extra_images"] = nullptr;
        send_json(res, 200,
                  {{"images", images},
                   {"parameters", params},
                   {"info", a1111_info(done, job->request,
                                       ctx.host.model_info(job->request.model, job->request.vae),
                                       job->request.get("scheduler") ||
                                           !ctx.host.default_value("scheduler").empty())}});
    });
}

// POST /sdapi/v1/extra-single-image: the image through upscaler_1 (an ESRGAN by name) as
// many passes as reach upscaling_resize (at most 3, as A1111 runs them), then resized to
// the requested size (resize_mode 0: upscaling_resize times the image; 1: upscaling_resize_w
// x upscaling_resize_h, stretched: upscaling_crop is not applied) when the passes do not land
// on it. Face restoration and a second
// upscaler are refused when they would act.
void extra_single_image(const httplib::Request& req, httplib::Response& res, ServerContext& ctx) {
    guarded(res, ApiStyle::a1111, [&] {
        const nlohmann::json body = parse_json_object(req.body);
        const Fields f(body);
        if (f.number("gfpgan_visibility", -1e9, 1e9).value_or(0.0) != 0.0)
            throw not_supported("gfpgan_visibility", "GFPGAN face restoration");
        if (f.number("codeformer_visibility", -1e9, 1e9).value_or(0.0) != 0.0)
            throw not_supported("codeformer_visibility", "CodeFormer face restoration");
        const std::string second = f.string("upscaler_2", 4096).value_or("None");
        if (second != "None" && second != "none" && !second.empty() &&
            f.number("extras_upscaler_2_visibility", -1e9, 1e9).value_or(0.0) != 0.0) {
            throw not_supported("upscaler_2", "a second upscaler blended in");
        }
        const std::string name = f.string("upscaler_1", 4096).value_or("None");
        const int mode = static_cast<int>(f.integer("resize_mode", 0, 1).value_or(0));
        const double factor = f.number("upscaling_resize", 1, 8).value_or(2.0);
        const auto target_w = f.integer("upscaling_resize_w", 1, 16384);
        const auto target_h = f.integer("upscaling_resize_h", 1, 16384);
        const std::string image_b64 = f.string("image", 64 << 20).value_or("");
        if (image_b64.empty()) throw bad_field("image", "the image to upscale is missing");
        if (name == "None" || name == "none" || name.empty()) {
            throw bad_field("upscaler_1",
                            "name an upscaler from /sdapi/v1/upscalers (a plain resize without "
                            "one is not supported yet)");
        }
        UpscalerEntry entry;
        if (!ctx.upscalers || !ctx.upscalers->find(name, &entry)) {
            throw bad_field("upscaler_1", "no upscaler named '" + name +
                                              "' (see /sdapi/v1/upscalers: --upscale-model and "
                                              "the files of --hires-upscalers-dir)");
        }
        ImagePtr image = decode_base64_upload(image_b64, ctx.config.max_upload_pixels, "image");
        // The size asked for, and the passes of the upscaler that reach it.
        int64_t want_w = 0, want_h = 0;
        if (mode == 1) {
            if (!target_w || !target_h) {
                throw bad_field("upscaling_resize_w",
                                "resize_mode 1 needs upscaling_resize_w and upscaling_resize_h");
            }
            want_w = *target_w;
            want_h = *target_h;
        } else {
            want_w = static_cast<int64_t>(image->width * factor + 0.5);
            want_h = static_cast<int64_t>(image->height * factor + 0.5);
        }
        if (want_w * want_h > ctx.config.max_upload_pixels * 16) {
            throw RequestError(413, "upscaling_resize", "the upscaled image would be too large");
        }
        int passes = 1;
        for (int64_t w = image->width * std::max(1, entry.scale); w < want_w && passes < 3;
             w *= std::max(1, entry.scale)) {
            ++passes;
        }
        if (ctx.host.state() != ModelHost::State::ready) {
            RequestError e(503, "", "the model is still loading; try again shortly");
            e.retry_after_s = 5;
            throw e;
        }
        std::string error;
        ggdiff_upscaler* upscaler = ctx.upscalers->get(entry, &error);
        if (!upscaler) throw RequestError(500, "upscaler_1", "cannot load it: " + error);

        auto job = std::make_shared<Job>();
        job->kind = "upscale";
        job->api = "extras";
        job->id = new_job_id();
        job->options = ctx.host.request_options();
        if (ggdiff_options_set(job->options.get(), "upscale-repeats",
                               std::to_string(passes).c_str()) != 0) {
            throw RequestError(500, "", ggdiff_last_error());
        }
        job->request.embed_metadata = ctx.config.embed_metadata;
        job->upscaler = upscaler;
        job->upscale_input = std::move(image);
        job->upscale_width = static_cast<int>(want_w);
        job->upscale_height = static_cast<int>(want_h);
        submit_or_refuse(ctx, job);
        const JobView done = ctx.jobs.wait_done(*job);
        if (done.status != JobStatus::completed || done.images.empty()) {
            throw RequestError(
                500, "",
                "upscaling failed: " +
                    (done.error_message.empty() ? std::string("no image") : done.error_message));
        }
        const EncodedImage& out = done.images.front();
        send_json(
            res, 200,
            {{"image", to_base64(out)},
             {"html_info",
              "<p>Postprocess upscaler: " + entry.name + " (x" + std::to_string(entry.scale) +
                  ", " + std::to_string(passes) + (passes == 1 ? " pass" : " passes") + "), " +
                  std::to_string(out.width) + "x" + std::to_string(out.height) + "</p>"}});
    });
}

std::string job_timestamp(int64_t t) {
    if (t == 0) return "0";
    std::time_t tt = static_cast<std::time_t>(t);
    std::tm tm{};
    localtime_r(&tt, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y%m%d%H%M%S", &tm);
    return buf;
}

}  // namespace

void register_sdapi_routes(httplib::Server& server, ServerContext& ctx) {
    server.Post("/sdapi/v1/txt2img", [&ctx](const httplib::Request& req, httplib::Response& res) {
        generate(req, res, ctx, false);
    });
    server.Post("/sdapi/v1/img2img", [&ctx](const httplib::Request& req, httplib::Response& res) {
        generate(req, res, ctx, true);
    });
    server.Get("/sdapi/v1/samplers", [&ctx](const httplib::Request&, httplib::Response& res) {
        send_json(res, 200, a1111_samplers(ctx.host.samplers()));
    });
    server.Get("/sdapi/v1/schedulers", [&ctx](const httplib::Request&, httplib::Response& res) {
        send_json(res, 200, a1111_schedulers(ctx.host.schedulers()));
    });
    // The library's models, as A1111 lists checkpoints (no hashes: ggdiff does not read whole
    // files to list them).
    server.Get("/sdapi/v1/sd-models", [&ctx](const httplib::Request&, httplib::Response& res) {
        nlohmann::json list = nlohmann::json::array();
        for (const CatalogEntry& e : ctx.host.library().catalog().models) {
            list.push_back({{"title", e.title},
                            {"model_name", e.name},
                            {"hash", nullptr},
                            {"sha256", nullptr},
                            {"filename", e.path},
                            {"config", nullptr}});
        }
        send_json(res, 200, list);
    });
    server.Get("/sdapi/v1/sd-vae", [&ctx](const httplib::Request&, httplib::Response& res) {
        nlohmann::json list = nlohmann::json::array();
        for (const VaeEntry& v : ctx.host.library().catalog().vaes) {
            list.push_back({{"model_name", v.name}, {"filename", v.path}});
        }
        send_json(res, 200, list);
    });
    // Re-reading the folders (files added or removed while the server runs). LoRAs are read
    // on each use already.
    auto refresh = [&ctx](const httplib::Request&, httplib::Response& res) {
        guarded(res, ApiStyle::a1111, [&] {
            const std::string error = ctx.host.library().refresh();
            if (!error.empty()) throw RequestError(400, "", error);
            send_json(res, 200, nullptr);
        });
    };
    server.Post("/sdapi/v1/refresh-checkpoints", refresh);
    server.Post("/sdapi/v1/refresh-vae", refresh);
    server.Post("/sdapi/v1/refresh-loras", [](const httplib::Request&, httplib::Response& res) {
        send_json(res, 200, nullptr);
    });
    server.Get("/sdapi/v1/options", [&ctx](const httplib::Request&, httplib::Response& res) {
        send_json(res, 200, ctx.settings.get());
    });
    server.Post("/sdapi/v1/options", [&ctx](const httplib::Request& req, httplib::Response& res) {
        guarded(res, ApiStyle::a1111, [&] {
            ctx.settings.set(parse_json_object(req.body));
            send_json(res, 200, ctx.settings.get());
        });
    });
    server.Get("/sdapi/v1/loras", [&ctx](const httplib::Request&, httplib::Response& res) {
        nlohmann::json list = nlohmann::json::array();
        for (const LoraEntry& e : ctx.loras.list()) {
            list.push_back({{"name", e.name},
                            {"alias", e.name},
                            {"path", e.path},
                            {"metadata", nlohmann::json::object()}});
        }
        send_json(res, 200, list);
    });
    server.Get("/sdapi/v1/upscalers", [&ctx](const httplib::Request&, httplib::Response& res) {
        nlohmann::json list = nlohmann::json::array({{{"name", "None"},
                                                      {"model_name", nullptr},
                                                      {"model_path", nullptr},
                                                      {"model_url", nullptr},
                                                      {"scale", 1}}});
        if (ctx.upscalers) {
            for (const UpscalerEntry& e : ctx.upscalers->list()) {
                list.push_back({{"name", e.name},
                                {"model_name", "ESRGAN"},
                                {"model_path", e.path},
                                {"model_url", nullptr},
                                {"scale", e.scale}});
            }
        }
        send_json(res, 200, list);
    });
    server.Post("/sdapi/v1/extra-single-image",
                [&ctx](const httplib::Request& req, httplib::Response& res) {
                    extra_single_image(req, res, ctx);
                });
    server.Get("/sdapi/v1/latent-upscale-modes",
               [](const httplib::Request&, httplib::Response& res) {
                   // Hires fix is not built yet, so there are no latent upscale modes.
                   send_json(res, 200, nlohmann::json::array());
               });
    server.Get("/sdapi/v1/progress", [&ctx](const httplib::Request& req, httplib::Response& res) {
        const auto running = ctx.jobs.running();
        const int queued = ctx.jobs.queued_count();
        // A1111 counts sampling steps only; the other phases show in textinfo.
        const bool sampling = running && running->progress.phase == "sampling";
        nlohmann::json state = {{"skipped", false},
                                {"interrupted", running ? running->cancel_requested : false},
                                {"stopping_generation", false},
                                {"job", running ? running->api : ""},
                                {"job_count", queued + (running ? 1 : 0)},
                                {"job_timestamp", job_timestamp(running ? running->started : 0)},
                                {"job_no", running ? running->progress.images_done : 0},
                                {"sampling_step", sampling ? running->progress.step : 0},
                                {"sampling_steps", sampling ? running->progress.total : 0}};
        // The running job's latest live preview, as base64 PNG, unless the client skips it.
        const std::string skip = req.get_param_value("skip_current_image");
        nlohmann::json current_image = nullptr;
        if (running && running->preview.image && skip != "true" && skip != "True" && skip != "1") {
            current_image = to_base64(*running->preview.image);
        }
        send_json(
            res, 200,
            {{"progress", running ? running->progress.fraction : 0.0},
             {"eta_relative",
              running && running->progress.eta_s >= 0 ? running->progress.eta_s : 0.0},
             {"state", state},
             {"current_image", current_image},
             {"textinfo",
              running ? nlohmann::json(running->progress.phase) : nlohmann::json(nullptr)},
             {"current_task", running ? nlohmann::json(running->id) : nlohmann::json(nullptr)}});
    });
    server.Post("/sdapi/v1/interrupt", [&ctx](const httplib::Request&, httplib::Response& res) {
        const bool stopped = ctx.jobs.interrupt_running();
        send_json(res, 200, {{"interrupted", stopped}});
    });
}

}  // namespace ggdiff::server
