// stable-diffusion.cpp's native async API (/sdcpp/v1/...) with its routes and shapes, so its
// clients work: capabilities, img_gen (202 + job id + poll URL), job status, cancel. Beyond
// it: cancel of a running job (it stops at its next step), progress with phase/step/ETA,
// server-sent events per job, and a list of recent jobs (a client that lost its connection
// finds its result there).
#include <cstdlib>
#include <sstream>
#include "http_util.h"

#include "engine_options.h"
#include "json_fields.h"
#include "routes.h"

namespace ggdiff::server {

namespace {

constexpr int64_t kMaxSeed = INT64_MAX - (1 << 20);
constexpr int kMaxEventStreams = 32;
const char kJobPattern[] = R"(/sdcpp/v1/jobs/([A-Za-z0-9_\-]{1,64}))";

// What option `name` is in `o` (set, else the schema's default; "" when the model decides).
std::string option_text(const ggdiff_options* o, const char* name) {
    const char* text = nullptr;
    if (ggdiff_options_get(o, name, &text) != 0 || !text) return "";
    return text;
}

// A default as JSON: a number where it reads as one, null where the model decides.
nlohmann::json default_json(const ggdiff_options* o, const char* name) {
    const std::string v = option_text(o, name);
    if (v.empty()) return nullptr;
    if (v == "true" || v == "false") return v == "true";
    nlohmann::json j = nlohmann::json::parse(v, nullptr, false);
    return j.is_number() ? j : nlohmann::json(v);
}

// A list option's value ("7,8,9") as a JSON array.
nlohmann::json int_list_json(const ggdiff_options* o, const char* name) {
    nlohmann::json j = nlohmann::json::parse("[" + option_text(o, name) + "]", nullptr, false);
    return j.is_array() ? j : nlohmann::json::array();
}

// sd-server's request schema filled with what requests on `model` start from here.
nlohmann::json defaults_json(const ServerContext& ctx, const std::string& model) {
    const OptionsPtr owned = ctx.host.request_options(model);
    const ggdiff_options* h = owned.get();
    auto text = [&](const char* name) { return option_text(h, name); };
    return {
        {"prompt", text("prompt")},
        {"negative_prompt", text("negative-prompt")},
        {"clip_skip", default_json(h, "clip-skip")},
        {"width", default_json(h, "width")},
        {"height", default_json(h, "height")},
        {"strength", default_json(h, "strength")},
        {"seed", ctx.config.seed_given ? default_json(h, "seed") : nlohmann::json(-1)},
        {"batch_count", default_json(h, "batch-count")},
        {"qwen_image_layers", default_json(h, "qwen-image-layers")},
        {"auto_resize_ref_image", default_json(h, "disable-auto-resize-ref-image") != true},
        {"increase_ref_index", default_json(h, "increase-ref-index") == true},
        {"sample_params",
         {{"scheduler", default_json(h, "scheduler")},
          {"sample_method", default_json(h, "sampling-method")},
          {"sample_steps", default_json(h, "steps")},
          {"eta", default_json(h, "eta")},
          {"shifted_timestep", 0},
          {"flow_shift", default_json(h, "flow-shift")},
          {"custom_sigmas", nlohmann::json::array()},
          {"guidance",
           {{"txt_cfg", default_json(h, "cfg-scale")},
            {"img_cfg", default_json(h, "img-cfg-scale")},
            {"distilled_guidance", default_json(h, "guidance")},
            {"slg",
             {{"layers", int_list_json(h, "skip-layers")},
              {"layer_start", default_json(h, "skip-layer-start")},
              {"layer_end", default_json(h, "skip-layer-end")},
              {"scale", default_json(h, "slg-scale")}}}}}}},
        {"vae_tiling_params",
         {{"enabled", default_json(h, "vae-tiling") == true},
          {"temporal_tiling", false},
          {"tile_size_x", 0},
          {"tile_size_y", 0},
          {"target_overlap", default_json(h, "vae-tile-overlap")},
          {"rel_size_x", 0.0},
          {"rel_size_y", 0.0},
          {"extra_tiling_args", ""}}},
        {"hires",
         {{"enabled", false},
          {"upscaler", default_json(h, "hires-upscaler")},
          {"scale", default_json(h, "hires-scale")},
          {"target_width", default_json(h, "hires-width")},
          {"target_height", default_json(h, "hires-height")},
          {"steps", default_json(h, "hires-steps")},
          {"denoising_strength", default_json(h, "hires-denoising-strength")},
          {"upscale_tile_size", default_json(h, "hires-upscale-tile-size")},
          {"custom_sigmas", nlohmann::json::array()}}},
        {"cache_mode", "disabled"},
        {"cache_option", ""},
        {"scm_mask", ""},
        {"scm_policy_dynamic", true},
        {"embed_image_metadata", ctx.config.embed_metadata},
        {"output_format", "png"},
        {"output_compression", 100},
    };
}

// sd-server's vid_gen request schema filled with what requests start from here: the shared
// fields of img_gen, the video ones, no batch or image-only fields.
nlohmann::json vid_gen_defaults_json(const ServerContext& ctx, const std::string& model) {
    const OptionsPtr owned = ctx.host.request_options(model);
    const ggdiff_options* h = owned.get();
    nlohmann::json d = defaults_json(ctx, model);
    for (const char* key : {"batch_count", "qwen_image_layers", "auto_resize_ref_image",
                            "increase_ref_index", "embed_image_metadata"}) {
        d.erase(key);
    }
    const nlohmann::json frames = default_json(h, "video-frames");
    d["video_frames"] = frames.is_number() ? frames : nlohmann::json(1);
    d["fps"] = default_json(h, "fps");
    d["moe_boundary"] = default_json(h, "moe-boundary");
    d["vace_strength"] = 1.0;
    d["init_image"] = nullptr;
    d["end_image"] = nullptr;
    d["control_frames"] = nlohmann::json::array();
    nlohmann::json high = d["sample_params"];
    high.erase("custom_sigmas");
    high["sample_steps"] = -1;
    d["high_noise_sample_params"] = high;
    d["output_format"] = "webp";
    d["output_compression"] = 90;
    return d;
}

// A control image acts only with the ControlNet given on the server's command line.
bool control_net_loaded(const ServerContext& ctx) {
    return option_supported("control-image") && !ctx.host.default_value("control-net").empty();
}

// PuLID-FLUX acts only with the weights and the identity given on the server's command line.
bool pulid_loaded(const ServerContext& ctx) {
    return !ctx.host.default_value("pulid-weights").empty() &&
           !ctx.host.default_value("pulid-id-embedding").empty();
}

// What `model` ("" = the current one) does, and what its requests start from.
nlohmann::json capabilities(ServerContext& ctx, const std::string& model) {
    const nlohmann::json info = ctx.host.model_info(model);
    nlohmann::json samplers = nlohmann::json::array(), schedulers = nlohmann::json::array();
    for (const auto& s : ctx.host.samplers()) samplers.push_back(s["name"]);
    for (const auto& s : ctx.host.schedulers()) schedulers.push_back(s["name"]);
    nlohmann::json loras = nlohmann::json::array();
    for (const LoraEntry& e : ctx.loras.list())
        loras.push_back({{"name", e.name}, {"path", e.path}});
    const nlohmann::json features = {
        {"init_image", true},
        {"mask_image", option_supported("mask")},
        {"control_image", control_net_loaded(ctx)},
        {"pulid", pulid_loaded(ctx)},
        {"ip_adapter_image", false},
        {"ref_images", info.value("ref_images", false) && option_supported("ref-image")},
        {"lora", ctx.host.lora_supported()},
        {"vae_tiling", true},
        {"hires", option_supported("hires")},
        {"cache", option_supported("cache-mode")},
        {"cancel_queued", true},
        {"cancel_generating", true},
        {"preview", true},
        {"skip_layer_guidance", info.value("skip_layers", false)},
        {"events", true}};
    const nlohmann::json formats = {"png", "jpeg", "webp"};
    const nlohmann::json defaults = defaults_json(ctx, model);
    // A video model's frame step and sound (model_library.cpp: video_info); null: an image
    // model, one frame per video.
    const nlohmann::json video = info.contains("video") ? info["video"] : nlohmann::json(nullptr);
    const bool audio = video.is_object() && video.value("audio", false);
    // Every model takes vid_gen: an image model makes one frame per video (a video model's
    // family decides its frames). webm is sd-server's default; this build has no encoder.
    const nlohmann::json video_features = {
        {"init_image", true},
        {"audio", audio},
        {"end_image", info.value("end_image", false) && option_supported("end-img")},
        {"control_frames", info.value("control_video", false) && option_supported("control-video")},
        {"high_noise_sample_params", option_supported("high-noise-steps")},
        {"hires", info.value("video_hires", false) && option_supported("hires")},
        {"lora", ctx.host.lora_supported()},
        {"vae_tiling", true},
        {"cache", option_supported("cache-mode")},
        {"cancel_queued", true},
        {"cancel_generating", true},
        {"preview", true},
        {"events", true}};
    const nlohmann::json video_formats = {"webp", "avi"};
    const auto width = engine_option("width", false);
    const int min_side = width && width->min > 8 ? static_cast<int>(width->min) : 8;
    return {
        {"model",
         {{"name", info.value("file", "")},
          {"model_name", info.value("model_name", info.value("name", ""))},
          {"title", info.value("title", info.value("file", ""))},
          {"stem", info.value("name", "")},
          {"path", info.value("file", "")},
          {"family", info.contains("family") ? info["family"] : nlohmann::json(nullptr)},
          {"family_id", info.contains("family_id") ? info["family_id"] : nlohmann::json(nullptr)},
          {"vae", info.contains("vae") ? info["vae"] : nlohmann::json(nullptr)},
          // A video model: {"frames_step": 8 (a video has 1 + 8n frames), "audio"}; null else.
          {"video", video},
          // What the model uses where "defaults" below says null (the model decides).
          {"defaults", info.contains("defaults") ? info["defaults"] : nlohmann::json(nullptr)}}},
        {"version", std::string("ggdiff ") + ggdiff_version()},
        {"families", ctx.host.families()},
        {"current_mode", "img_gen"},
        {"supported_modes", {"img_gen", "vid_gen"}},
        {"defaults", defaults},
        {"defaults_by_mode",
         {{"img_gen", defaults}, {"vid_gen", vid_gen_defaults_json(ctx, model)}}},
        {"output_formats", formats},
        {"output_formats_by_mode", {{"img_gen", formats}, {"vid_gen", video_formats}}},
        {"features", features},
        {"features_by_mode", {{"img_gen", features}, {"vid_gen", video_features}}},
        {"samplers", samplers},
        {"options", request_options_json(ctx.host.defaults())},
        {"schedulers", schedulers},
        {"loras", loras},
        {"upscalers", nlohmann::json::array({{{"name", "None"}}})},
        {"limits",
         {{"min_width", min_side},
          {"max_width", ctx.config.max_size},
          {"min_height", min_side},
          {"max_height", ctx.config.max_size},
          {"max_batch_count", ctx.config.max_batch},
          {"max_steps", ctx.config.max_steps},
          {"max_queue_size", ctx.config.max_queue},
          {"max_upload_pixels", ctx.config.max_upload_pixels},
          {"max_body_bytes", ctx.config.max_body_bytes}}}};
}

// An image field of the request (base64 or data URL) for engine image option `option`.
void read_image(const Fields& f, const char* key, const char* option, GenRequest& r,
                const ServerConfig& config) {
    auto text = f.string(key, static_cast<size_t>(config.max_body_bytes));
    if (!text) return;
    require_supported(option, key);
    r.add_image(option, decode_base64_upload(*text, config.max_upload_pixels, key), key);
}

// "default" (sd-server's word) or "" leave the choice to the model.
std::optional<std::string> chosen(std::optional<std::string> name) {
    if (name && (name->empty() || *name == "default")) return std::nullopt;
    return name;
}

void read_sample_params(const Fields& sp, GenRequest& r) {
    r.set_text("scheduler", chosen(sp.string("scheduler", 256)), sp.path("scheduler"));
    r.set_text("sampling-method", chosen(sp.string("sample_method", 256)),
               sp.path("sample_method"));
    r.set_int("steps", sp.integer("sample_steps", -(1 << 20), 1 << 20), sp.path("sample_steps"));
    r.set_number("eta", sp.number("eta", 0, 100), sp.path("eta"));
    // sd-server's neutral values (0, null, []) mean "not used"; others go to the engine,
    // whose schema says whether they work yet.
    if (auto ts = sp.integer("shifted_timestep", INT32_MIN, INT32_MAX); ts && *ts != 0) {
        r.set("timestep-shift", std::to_string(*ts), sp.path("shifted_timestep"));
    }
    if (auto fs = sp.number("flow_shift", -1e9, 1e9); fs && *fs != 0.0) {
        r.set_number("flow-shift", fs, sp.path("flow_shift"));
    }
    auto sigmas = sp.array("custom_sigmas", 10001);
    if (!sigmas.empty()) {
        auto desc = engine_option("sigmas");
        if (desc)
            r.set("sigmas",
                  option_text_from_json(*desc, nlohmann::json(sigmas), sp.path("custom_sigmas")),
                  sp.path("custom_sigmas"));
    }
    if (auto g = sp.object("guidance")) {
        r.set_number("cfg-scale", g->number("txt_cfg", -1000, 1000), g->path("txt_cfg"));
        r.set_number("img-cfg-scale", g->number("img_cfg", -1000, 1000), g->path("img_cfg"));
        r.set_number("guidance", g->number("distilled_guidance", -1000, 1000),
                     g->path("distilled_guidance"));
        if (auto slg = g->object("slg")) {
            // sd-server sends the whole object with scale 0 when SLG is off: the window and
            // layers then do nothing, and a scale goes to the engine, which refuses it for
            // models that cannot skip layers.
            r.set_number("slg-scale", slg->number("scale", -1e9, 1e9), slg->path("scale"));
            r.set_number("skip-layer-start", slg->number("layer_start", -1e9, 1e9),
                         slg->path("layer_start"));
            r.set_number("skip-layer-end", slg->number("layer_end", -1e9, 1e9),
                         slg->path("layer_end"));
            if (slg->json().contains("layers") && !slg->json()["layers"].is_null()) {
                auto desc = engine_option("skip-layers");
                if (desc) {
                    r.set("skip-layers",
                          option_text_from_json(*desc, slg->json()["layers"], slg->path("layers")),
                          slg->path("layers"));
                }
            }
        }
    }
}

// sd-server's `hires` object as the engine's --hires options.
void read_hires(const Fields& h, GenRequest& r) {
    if (!h.boolean("enabled").value_or(false)) return;
    r.set("hires", "true", h.path("enabled"));
    if (auto up = h.string("upscaler", 256)) r.set("hires-upscaler", *up, h.path("upscaler"));
    r.set_number("hires-scale", h.number("scale", -1e9, 1e9), h.path("scale"));
    const auto w = h.integer("target_width", -(1 << 20), 1 << 20).value_or(0);
    const auto ht = h.integer("target_height", -(1 << 20), 1 << 20).value_or(0);
    if (w != 0) r.set("hires-width", std::to_string(w), h.path("target_width"));
    if (ht != 0) r.set("hires-height", std::to_string(ht), h.path("target_height"));
    r.set_int("hires-steps", h.integer("steps", -(1 << 20), 1 << 20), h.path("steps"));
    r.set_number("hires-denoising-strength", h.number("denoising_strength", -1e9, 1e9),
                 h.path("denoising_strength"));
    r.set_int("hires-upscale-tile-size", h.integer("upscale_tile_size", -(1 << 20), 1 << 20),
              h.path("upscale_tile_size"));
    const auto sigmas = h.array("custom_sigmas", 1024);
    if (!sigmas.empty()) {
        std::string csv;
        for (const nlohmann::json& v : sigmas) {
            if (!v.is_number()) throw bad_field(h.path("custom_sigmas"), "expected numbers");
            csv += (csv.empty() ? "" : ",") + v.dump();
        }
        r.set("hires-sigmas", csv, h.path("custom_sigmas"));
    }
}

// The fields img_gen and vid_gen share at the top of the request.
void read_common_head(const Fields& f, GenRequest& r, ServerContext& ctx) {
    r.set_text("prompt", f.string("prompt"), "prompt");
    r.set_text("negative-prompt", f.string("negative_prompt"), "negative_prompt");
    r.set_int("clip-skip", f.integer("clip_skip", -1, 12), "clip_skip");
    r.set_int("width", f.integer("width", -(1 << 20), 1 << 20), "width");
    r.set_int("height", f.integer("height", -(1 << 20), 1 << 20), "height");
    r.set_number("strength", f.number("strength", -1e9, 1e9), "strength");
    r.set_int("seed", f.integer("seed", INT64_MIN, kMaxSeed), "seed");
    read_image(f, "init_image", "init-img", r, ctx.config);
}

void read_common_tail(const Fields& f, const nlohmann::json& body, GenRequest& r,
                      ServerContext& ctx);

GenRequest parse_img_gen(const nlohmann::json& body, ServerContext& ctx) {
    Fields f(body);
    GenRequest r;
    r.kind = "img_gen";
    choose_model(r, ctx.host, f.string("model", 4096), "model");
    read_common_head(f, r, ctx);
    r.set_int("batch-count", f.integer("batch_count", -(1 << 20), 1 << 20), "batch_count");
    r.embed_metadata = f.boolean("embed_image_metadata").value_or(ctx.config.embed_metadata);
    if (r.image("init-img")) r.kind = "img2img";
    read_image(f, "mask_image", "mask", r, ctx.config);
    if (f.has("control_image") && !control_net_loaded(ctx)) {
        throw bad_field("control_image",
                        "this server has no ControlNet (start it with --control-net FILE)");
    }
    read_image(f, "control_image", "control-image", r, ctx.config);
    if (f.has("ip_adapter_image")) throw not_supported("ip_adapter_image", "IP-Adapter");
    const auto refs = f.array("ref_images", 64);
    for (size_t i = 0; i < refs.size(); ++i) {
        const std::string key = "ref_images[" + std::to_string(i) + "]";
        require_supported("ref-image", key);
        if (!refs[i].is_string()) throw bad_field(key, "expected a base64 string");
        require_capability(r, ctx.host, "ref_images", key,
                           "this model takes no reference images (FLUX.1 Kontext, FLUX.2 and "
                           "Qwen Image Edit models do)");
        add_ref_image(
            r, ctx.host,
            decode_base64_upload(refs[i].get<std::string>(), ctx.config.max_upload_pixels, key),
            key, false);
    }
    // sd-server's reference-image switches (-r placement and resize).
    if (auto inc = f.boolean("increase_ref_index")) {
        r.set("increase-ref-index", *inc ? "true" : "false", "increase_ref_index");
    }
    if (auto resize = f.boolean("auto_resize_ref_image")) {
        r.set("disable-auto-resize-ref-image", *resize ? "false" : "true", "auto_resize_ref_image");
    }
    r.set_int("qwen-image-layers", f.integer("qwen_image_layers", -(1 << 20), 1 << 20),
              "qwen_image_layers");
    if (f.has("control_image"))
        r.set_number("control-strength", f.number("control_strength", -100, 100),
                     "control_strength");
    // sd_img_gen_params' pulid_id_weight: the strength of the server's PuLID identity.
    if (f.has("pulid_id_weight")) {
        if (!pulid_loaded(ctx)) {
            throw bad_field("pulid_id_weight",
                            "this server has no PuLID-FLUX identity (start it with "
                            "--pulid-weights FILE --pulid-id-embedding FILE)");
        }
        r.set_number("pulid-id-weight", f.number("pulid_id_weight", -100, 100), "pulid_id_weight");
    }
    read_common_tail(f, body, r, ctx);
    if (auto hires = f.object("hires")) read_hires(*hires, r);
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
    // Any other per-request engine option, by its schema name.
    read_engine_options(f, "ggdiff", r);
    return r;
}

// The fields img_gen and vid_gen share after their own: sampling, LoRA, VAE tiling, previews,
// the step cache.
void read_common_tail(const Fields& f, const nlohmann::json& body, GenRequest& r,
                      ServerContext& ctx) {
    if (auto sp = f.object("sample_params")) read_sample_params(*sp, r);
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
    if (auto vt = f.object("vae_tiling_params")) {
        r.set_bool("vae-tiling", vt->boolean("enabled"), vt->path("enabled"));
        const auto x = vt->integer("tile_size_x", 0, 4096).value_or(0);
        const auto y = vt->integer("tile_size_y", 0, 4096).value_or(0);
        if (x > 0 || y > 0) {
            r.set("vae-tile-size",
                  std::to_string(x > 0 ? x : y) + "x" + std::to_string(y > 0 ? y : x),
                  vt->path(x > 0 ? "tile_size_x" : "tile_size_y"));
        }
        r.set_number("vae-tile-overlap", vt->number("target_overlap", 0, 0.99),
                     vt->path("target_overlap"));
        const double rx = vt->number("rel_size_x", -1e9, 1e9).value_or(0.0);
        const double ry = vt->number("rel_size_y", -1e9, 1e9).value_or(0.0);
        if (rx != 0.0 || ry != 0.0) {
            std::ostringstream os;
            os << rx << "x" << ry;
            r.set("vae-relative-tile-size", os.str(), vt->path("rel_size_x"));
        }
        if (vt->boolean("temporal_tiling").value_or(false))
            r.set("temporal-tiling", "true", vt->path("temporal_tiling"));
        if (auto args = vt->string("extra_tiling_args", 4096); args && !args->empty())
            r.set("extra-tiling-args", *args, vt->path("extra_tiling_args"));
    }
    // Live previews: true (the server's --preview method, proj when it has none), false, or a
    // method; the job status and events then carry the latest one.
    if (f.has("preview") && !body["preview"].is_null()) {
        const nlohmann::json& pv = body["preview"];
        if (pv.is_boolean()) {
            const std::string method = ctx.host.option_value("preview");
            r.set("preview",
                  !pv.get<bool>()    ? "none"
                  : method == "none" ? "proj"
                                     : method,
                  "preview");
        } else if (pv.is_string()) {
            r.set("preview", pv.get<std::string>(), "preview");
        } else {
            throw bad_field("preview", "expected true, false or one of none, proj, tae, vae; got " +
                                           json_type_phrase(pv));
        }
    }
    r.set_int("preview-interval", f.integer("preview_interval", 1, 100000), "preview_interval");
    r.set_bool("preview-noisy", f.boolean("preview_noisy"), "preview_noisy");
    const std::string cache = f.string("cache_mode", 64).value_or("disabled");
    if (!cache.empty() && cache != "disabled") {
        r.set("cache-mode", cache, "cache_mode");
        if (auto opt = f.string("cache_option", 1024); opt && !opt->empty()) {
            r.set("cache-option", *opt, "cache_option");
        }
        if (auto mask = f.string("scm_mask", 4096); mask && !mask->empty()) {
            r.set("scm-mask", *mask, "scm_mask");
        }
        if (auto dynamic = f.boolean("scm_policy_dynamic")) {
            r.set("scm-policy", *dynamic ? "dynamic" : "static", "scm_policy_dynamic");
        }
    }
}

// sd-server's high_noise_sample_params as the engine's --high-noise-* options (Wan 2.2's
// high-noise expert; without one they have no effect). sample_steps -1 is the automatic split
// at moe_boundary, as in sd-server. A skip-layer scale of 0 (sd-server's "off") sets nothing;
// another goes to its option, whose schema says whether it works yet.
void read_high_noise(const Fields& hp, GenRequest& r) {
    r.set_int("high-noise-steps", hp.integer("sample_steps", -(1 << 20), 1 << 20),
              hp.path("sample_steps"));
    r.set_text("high-noise-sampling-method", chosen(hp.string("sample_method", 256)),
               hp.path("sample_method"));
    r.set_number("high-noise-eta", hp.number("eta", 0, 100), hp.path("eta"));
    if (auto g = hp.object("guidance")) {
        r.set_number("high-noise-cfg-scale", g->number("txt_cfg", -1000, 1000), g->path("txt_cfg"));
        r.set_number("high-noise-img-cfg-scale", g->number("img_cfg", -1000, 1000),
                     g->path("img_cfg"));
        r.set_number("high-noise-guidance", g->number("distilled_guidance", -1000, 1000),
                     g->path("distilled_guidance"));
        if (auto slg = g->object("slg")) {
            if (auto scale = slg->number("scale", -1e9, 1e9); scale && *scale != 0.0) {
                r.set_number("high-noise-slg-scale", scale, slg->path("scale"));
                r.set_number("high-noise-skip-layer-start", slg->number("layer_start", -1e9, 1e9),
                             slg->path("layer_start"));
                r.set_number("high-noise-skip-layer-end", slg->number("layer_end", -1e9, 1e9),
                             slg->path("layer_end"));
            }
        }
    }
}

// POST /sdcpp/v1/vid_gen: one video (no batch_count), its frames encoded into one container.
GenRequest parse_vid_gen(const nlohmann::json& body, ServerContext& ctx) {
    Fields f(body);
    GenRequest r;
    r.kind = "vid_gen";
    r.video = true;
    // Fields of img_gen that are not part of vid_gen's request schema.
    for (const char* key : {"batch_count", "ref_images", "mask_image", "control_image",
                            "control_strength", "embed_image_metadata"}) {
        if (f.has(key) && !body[key].is_null()) {
            throw bad_field(key, "not a vid_gen field (see /sdcpp/v1/img_gen)");
        }
    }
    choose_model(r, ctx.host, f.string("model", 4096), "model");
    read_common_head(f, r, ctx);
    r.set_int("video-frames", f.integer("video_frames", -(1 << 20), 1 << 20), "video_frames");
    const int default_fps = std::atoi(ctx.host.option_value("fps").c_str());
    r.fps =
        static_cast<int>(f.integer("fps", 1, 240)
                             .value_or(default_fps >= 1 && default_fps <= 240 ? default_fps : 16));
    r.set_int("fps", r.fps, "fps");  // LTX-2 times its sound track and positions by it
    r.set_number("moe-boundary", f.number("moe_boundary", -1e9, 1e9), "moe_boundary");
    // sd-server sends vace_strength 1 with every request: it means "not used"; another value
    // goes to the engine option.
    if (auto strength = f.number("vace_strength", -1e9, 1e9); strength && *strength != 1.0) {
        require_capability(r, ctx.host, "control_video", "vace_strength",
                           "the model is no Wan VACE model");
        r.set_number("vace-strength", strength, "vace_strength");
    }
    if (f.has("end_image")) {
        require_capability(
            r, ctx.host, "end_image", "end_image",
            "the model takes no last frame (a Wan image-to-video or LTX-2 model does)");
    }
    read_image(f, "end_image", "end-img", r, ctx.config);
    // The hires fix of a video runs the model's latent upscalers (LTX-2's, named in the
    // server's --hires-upscalers-dir).
    if (auto hires = f.object("hires")) {
        if (hires->boolean("enabled").value_or(false)) {
            require_capability(r, ctx.host, "video_hires", hires->path("enabled"),
                               "the model has no hires fix for video (LTX-2's latent upscalers "
                               "are one)");
        }
        read_hires(*hires, r);
    }
    // Wan VACE's control video, frame by frame (as --control-video's folder).
    const auto control = f.array("control_frames", 4096);
    for (size_t i = 0; i < control.size(); ++i) {
        const std::string key = "control_frames[" + std::to_string(i) + "]";
        require_supported("control-video", key);
        if (i == 0) {
            require_capability(r, ctx.host, "control_video", key,
                               "the model takes no control video (a Wan VACE model does)");
        }
        if (!control[i].is_string()) throw bad_field(key, "expected a base64 string");
        r.add_image(
            "control-video",
            decode_base64_upload(control[i].get<std::string>(), ctx.config.max_upload_pixels, key),
            key);
    }
    if (auto hp = f.object("high_noise_sample_params")) read_high_noise(*hp, r);
    read_common_tail(f, body, r, ctx);
    const std::string of = f.string("output_format", 16).value_or("webp");
    if (of == "webm") {
        throw bad_field("output_format",
                        "webm is not supported yet (no WebM encoder in this build)");
    }
    if (of != "webp" && of != "avi") {
        throw bad_field("output_format",
                        "'" + of + "' is not one of webp, avi (webm: not supported yet)");
    }
    r.output_format = of;
    r.quality =
        std::max<int>(1, static_cast<int>(f.integer("output_compression", 0, 100).value_or(90)));
    read_engine_options(f, "ggdiff", r);
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

// 202 Accepted for a submitted job: where to poll it and follow its events.
void send_accepted(httplib::Response& res, ServerContext& ctx, const Job& job) {
    const JobView v = ctx.jobs.view(job, false);
    res.set_header("Location", "/sdcpp/v1/jobs/" + v.id);
    send_json(res, 202,
              {{"id", v.id},
               {"kind", v.kind},
               {"status", job_status_name(v.status)},
               {"created", v.created},
               {"poll_url", "/sdcpp/v1/jobs/" + v.id},
               {"events_url", "/sdcpp/v1/jobs/" + v.id + "/events"}});
}

}  // namespace

void register_sdcpp_routes(httplib::Server& server, ServerContext& ctx) {
    // ?model=NAME: another model of the library (its family is known once it has loaded).
    server.Get(
        "/sdcpp/v1/capabilities", [&ctx](const httplib::Request& req, httplib::Response& res) {
            guarded(res, ApiStyle::sdcpp, [&] {
                std::string name;
                const std::string want = req.get_param_value("model");
                if (!want.empty() && !ctx.host.library().resolve(want, &name))
                    throw bad_field("model", "no model \"" + want + "\" (see /sdcpp/v1/models)");
                send_json(res, 200, capabilities(ctx, name));
            });
        });
    // The library: every model with its state; "current" is the one requests use by default.
    server.Get("/sdcpp/v1/models", [&ctx](const httplib::Request&, httplib::Response& res) {
        const ModelLibrary& lib = ctx.host.library();
        const std::string current = lib.current(), vae = lib.current_vae();
        nlohmann::json list = nlohmann::json::array();
        for (const CatalogEntry& e : lib.catalog().models) {
            const ModelLibrary::View v = lib.view(e.name, e.name == current ? vae : "");
            nlohmann::json files = nlohmann::json::object();
            for (const auto& [option, path] : e.load_options)
                if (is_model_part_option(option)) files[option] = path;
            list.push_back(
                {{"name", e.name},
                 {"title", e.title},
                 {"path", e.path},
                 {"source", e.source},
                 {"description", e.description},
                 {"files", files},
                 {"size_bytes", e.bytes},
                 {"state", model_state_name(v.state)},
                 {"current", e.name == current},
                 {"family", v.info.is_object() && v.info.contains("family") ? v.info["family"]
                                                                            : nlohmann::json()},
                 {"error", v.error.empty() ? nlohmann::json() : nlohmann::json(v.error)}});
        }
        send_json(res, 200,
                  {{"current", current},
                   {"vae", vae.empty() ? nlohmann::json() : nlohmann::json(vae)},
                   {"models", list},
                   {"loaded", lib.loaded()},
                   {"max_loaded", lib.max_loaded()},
                   {"memory_budget_bytes", lib.memory_budget()},
                   {"memory_used_bytes", lib.memory_used()}});
    });
    server.Post("/sdcpp/v1/img_gen", [&ctx](const httplib::Request& req, httplib::Response& res) {
        guarded(res, ApiStyle::sdcpp, [&] {
            auto job =
                submit_request(ctx, parse_img_gen(parse_json_object(req.body), ctx), "img_gen");
            send_accepted(res, ctx, *job);
        });
    });
    server.Post("/sdcpp/v1/vid_gen", [&ctx](const httplib::Request& req, httplib::Response& res) {
        guarded(res, ApiStyle::sdcpp, [&] {
            auto job =
                submit_request(ctx, parse_vid_gen(parse_json_object(req.body), ctx), "vid_gen");
            send_accepted(res, ctx, *job);
        });
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
        send_json(res,
                  v.status == JobStatus::generating || v.status == JobStatus::loading ? 202 : 200,
                  job_json(v, false));
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
            uint64_t previews = 0;  // live previews sent
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
                    // Each new live preview once, as its own event, before the progress.
                    if (v.preview.image && v.preview.count != stream->previews) {
                        nlohmann::json p = preview_json(v);
                        p["id"] = v.id;
                        out = sse_event("preview", p);
                        stream->previews = v.preview.count;
                    }
                    out += sse_event("progress", job_json(v, false));
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
