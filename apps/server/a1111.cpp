#include "a1111.h"

#include <cstdlib>
#include <optional>

#include "json_fields.h"
#include "request_error.h"

namespace ggdiff::server {

namespace {

const char* kFormats[] = {"png", "jpg", "jpeg", "webp"};

std::string checked_format(const nlohmann::json& v, const std::string& key) {
    if (!v.is_string()) throw bad_field(key, "expected a string, got " + json_type_phrase(v));
    std::string s = v.get<std::string>();
    for (const char* f : kFormats)
        if (s == f) return s == "jpg" ? "jpeg" : s;
    throw bad_field(key, "'" + s + "' is not one of png, jpg, jpeg, webp");
}

int checked_clip(const nlohmann::json& v, const std::string& key) {
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 12) {
        throw bad_field(key, "expected an integer in 1..12");
    }
    return v.get<int>();
}

std::string checked_randn(const nlohmann::json& v, const std::string& key) {
    if (!v.is_string()) throw bad_field(key, "expected a string, got " + json_type_phrase(v));
    const std::string s = v.get<std::string>();
    if (s != "GPU" && s != "CPU" && s != "NV")
        throw bad_field(key, "'" + s + "' is not one of GPU, CPU, NV");
    return s;
}

bool checked_bool(const nlohmann::json& v, const std::string& key) {
    if (!v.is_boolean()) throw bad_field(key, "expected true or false, got " + json_type_phrase(v));
    return v.get<bool>();
}

// show_progress_every_n_steps: -1 .. 32 as A1111's slider (-1: only when a batch is done).
int checked_every(const nlohmann::json& v, const std::string& key) {
    if (!v.is_number_integer() || v.get<int64_t>() < -1 || v.get<int64_t>() > 32) {
        throw bad_field(key, "expected an integer in -1..32");
    }
    return v.get<int>();
}

// A1111's random sources: GPU (torch on CUDA) and NV (its Philox copy) draw what our "cuda"
// RNG draws; CPU is torch's CPU generator.
std::string rng_of(const std::string& randn_source) {
    return randn_source == "CPU" ? "cpu" : "cuda";
}

}  // namespace

nlohmann::json A1111Settings::get() const {
    std::lock_guard<std::mutex> lock(mutex_);
    const nlohmann::json info = host_.model_info();
    const std::string vae = host_.library().current_vae();
    return {{"sd_model_checkpoint", info.value("title", info.value("file", ""))},
            {"sd_vae", vae.empty() ? "Automatic" : vae},
            {"sd_checkpoints_limit", host_.library().max_loaded()},
            {"samples_format", samples_format_},
            {"CLIP_stop_at_last_layers", clip_skip_},
            {"randn_source", randn_source_},
            {"enable_pnginfo", pnginfo_},
            {"live_previews_enable", live_previews_},
            {"show_progress_every_n_steps", preview_every_},
            {"eta_noise_seed_delta", 0}};
}

void A1111Settings::set(const nlohmann::json& body) {
    std::string format;
    int clip = -1;
    std::string randn;
    int pnginfo = -1;
    int live = -1;
    std::optional<int> every;
    std::optional<std::string> model, vae;
    const ModelLibrary& lib = host_.library();
    for (const auto& [key, v] : body.items()) {
        if (key == "samples_format") {
            format = checked_format(v, key);
        } else if (key == "CLIP_stop_at_last_layers") {
            clip = checked_clip(v, key);
        } else if (key == "randn_source") {
            randn = checked_randn(v, key);
        } else if (key == "enable_pnginfo") {
            pnginfo = checked_bool(v, key) ? 1 : 0;
        } else if (key == "live_previews_enable") {
            live = checked_bool(v, key) ? 1 : 0;
        } else if (key == "show_progress_every_n_steps") {
            every = checked_every(v, key);
        } else if (key == "sd_model_checkpoint") {
            if (!v.is_string())
                throw bad_field(key, "expected a string, got " + json_type_phrase(v));
            std::string name;
            if (!lib.resolve(v.get<std::string>(), &name)) {
                throw bad_field(key, "no model \"" + v.get<std::string>() +
                                         "\" (GET /sdapi/v1/sd-models lists them)");
            }
            model = name;
        } else if (key == "sd_vae") {
            if (!v.is_string())
                throw bad_field(key, "expected a string, got " + json_type_phrase(v));
            std::string name;
            if (!lib.resolve_vae(v.get<std::string>(), &name)) {
                throw bad_field(key, "no VAE \"" + v.get<std::string>() +
                                         "\" (GET /sdapi/v1/sd-vae lists them)");
            }
            vae = name;
        } else if (key == "sd_checkpoints_limit") {
            if (!v.is_number_integer() || v.get<int64_t>() != lib.max_loaded()) {
                throw bad_field(key, "set by the server's --max-loaded-models (" +
                                         std::to_string(lib.max_loaded()) + ")");
            }
        } else if (key == "eta_noise_seed_delta") {
            if (!v.is_number_integer() || v.get<int64_t>() != 0) {
                throw not_supported(key, "a seed delta other than 0");
            }
        } else {
            throw bad_field(key,
                            "unknown or unsupported setting (supported: samples_format, "
                            "CLIP_stop_at_last_layers, randn_source, enable_pnginfo, "
                            "live_previews_enable, show_progress_every_n_steps, "
                            "sd_model_checkpoint, sd_vae, sd_checkpoints_limit, "
                            "eta_noise_seed_delta)");
        }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (!format.empty()) samples_format_ = format;
    if (clip > 0) clip_skip_ = clip;
    if (!randn.empty()) randn_source_ = randn;
    if (pnginfo >= 0) pnginfo_ = pnginfo == 1;
    if (live >= 0) live_previews_ = live == 1;
    if (every) preview_every_ = *every;
    // The model requests use from now on; it starts loading (off this request).
    if (model || vae) {
        ModelLibrary& library = host_.library();
        library.set_current(model.value_or(library.current()), vae.value_or(library.current_vae()));
    }
}

int A1111Settings::preview_interval() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_previews_ && preview_every_ > 0 ? preview_every_ : 0;
}

std::string A1111Settings::samples_format() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return samples_format_;
}

int A1111Settings::clip_skip() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return clip_skip_ > 1 ? clip_skip_ : 0;
}

std::string A1111Settings::rng() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return rng_of(randn_source_);
}

bool A1111Settings::enable_pnginfo() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return pnginfo_;
}

void A1111Settings::apply_overrides(const nlohmann::json& overrides, GenRequest& r,
                                    std::string* samples_format, bool* pnginfo,
                                    int* preview_interval) const {
    bool live = true, live_set = false;
    int every = 10;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        live = live_previews_;
        every = preview_every_;
    }
    if (!overrides.is_object()) {
        throw bad_field("override_settings",
                        "expected an object, got " + json_type_phrase(overrides));
    }
    for (const auto& [key, v] : overrides.items()) {
        const std::string path = "override_settings." + key;
        if (key == "samples_format") {
            *samples_format = checked_format(v, path);
        } else if (key == "CLIP_stop_at_last_layers") {
            const int c = checked_clip(v, path);
            r.set("clip-skip", std::to_string(c > 1 ? c : -1), path);
        } else if (key == "randn_source") {
            r.set("rng", rng_of(checked_randn(v, path)), path);
        } else if (key == "enable_pnginfo") {
            *pnginfo = checked_bool(v, path);
        } else if (key == "live_previews_enable") {
            live = checked_bool(v, path);
            live_set = true;
        } else if (key == "show_progress_every_n_steps") {
            every = checked_every(v, path);
            live_set = true;
        } else if (key == "pulid_id_weight") {
            // The strength of the server's PuLID-FLUX identity (--pulid-id-embedding).
            if (host_.default_value("pulid-id-embedding").empty()) {
                throw bad_field(path,
                                "this server has no PuLID-FLUX identity (start it with "
                                "--pulid-weights FILE --pulid-id-embedding FILE)");
            }
            if (!v.is_number()) throw bad_field(path, "expected a number");
            r.set_number("pulid-id-weight", v.get<double>(), path);
        } else if (key == "sd_model_checkpoint" || key == "sd_vae") {
            // The request's model: choose_model read them.
        } else if (key == "eta_noise_seed_delta" || key == "sd_checkpoints_limit") {
            A1111Settings probe(host_, true);
            probe.set({{key, v}});
        } else {
            throw bad_field(path, "unknown or unsupported setting");
        }
    }
    if (live_set) *preview_interval = live && every > 0 ? every : 0;
}

std::string a1111_info(const JobView& job, const GenRequest& request,
                       const nlohmann::json& model_info, bool scheduler_chosen) {
    nlohmann::json first = nlohmann::json::object();
    if (!job.images.empty()) {
        char* text = nullptr;
        if (ggdiff_parameters_to_json(job.images.front().parameters.c_str(), &text) == 0) {
            first = nlohmann::json::parse(text, nullptr, false);
            if (first.is_discarded()) first = nlohmann::json::object();
        }
        std::free(text);
    }
    nlohmann::json info;
    // Without images (cancelled before the first) the request says what was asked.
    info["prompt"] = first.value("prompt", request.value_or("prompt", ""));
    const std::string negative =
        first.value("negative_prompt", request.value_or("negative-prompt", ""));
    if (!negative.empty()) info["negative_prompt"] = negative;
    info["seed"] =
        job.images.empty()
            ? nlohmann::json(std::strtoll(request.value_or("seed", "-1").c_str(), nullptr, 10))
            : nlohmann::json(job.images.front().seed);
    info["cfg_scale"] = first.value("cfg_scale", nlohmann::json(nullptr));
    info["width"] = first.value("width", nlohmann::json(nullptr));
    info["height"] = first.value("height", nlohmann::json(nullptr));
    info["steps"] = first.value("steps", nlohmann::json(nullptr));
    info["sampler_name"] = first.value("sampler_name", nlohmann::json(nullptr));
    if (first.contains("clip_skip")) info["clip_skip"] = first["clip_skip"];
    nlohmann::json extra = nlohmann::json::object();
    const nlohmann::json fx = first.value("extra_generation_params", nlohmann::json::object());
    if (scheduler_chosen && fx.is_object() && fx.contains("Schedule type")) {
        extra["Schedule type"] = fx["Schedule type"];
    }
    info["extra_generation_params"] = extra;
    if (first.contains("denoising_strength"))
        info["denoising_strength"] = first["denoising_strength"];
    info["sd_model_name"] = model_info.value("name", "");
    info["sd_vae_name"] = model_info.contains("vae") ? model_info["vae"] : nlohmann::json(nullptr);
    info["version"] = std::string("ggdiff ") + ggdiff_version();
    nlohmann::json infotexts = nlohmann::json::array(), prompts = nlohmann::json::array(),
                   negatives = nlohmann::json::array(), seeds = nlohmann::json::array();
    for (const EncodedImage& img : job.images) {
        infotexts.push_back(img.parameters);
        prompts.push_back(info["prompt"]);
        negatives.push_back(negative);
        seeds.push_back(img.seed);
    }
    info["infotexts"] = infotexts;
    info["all_prompts"] = prompts;
    info["all_negative_prompts"] = negatives;
    info["all_seeds"] = seeds;
    return info.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json a1111_samplers(const nlohmann::json& samplers) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& s : samplers) {
        nlohmann::json aliases = nlohmann::json::array({s["name"]});
        for (const auto& a : s["aliases"]) aliases.push_back(a);
        out.push_back(
            {{"name", s["a1111"]}, {"aliases", aliases}, {"options", nlohmann::json::object()}});
    }
    return out;
}

nlohmann::json a1111_schedulers(const nlohmann::json& schedulers) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& s : schedulers) {
        out.push_back(
            {{"name", s["name"]},
             {"label", s["a1111"]},
             {"aliases", s["aliases"]},
             {"default_rho", s["name"] == "karras" ? nlohmann::json(7.0) : nlohmann::json(-1.0)},
             {"need_inner_model", false}});
    }
    return out;
}

}  // namespace ggdiff::server
