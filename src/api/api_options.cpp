#include "api/api_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>

#include "image/image_io.h"

namespace ggdiff {
namespace {

using Setter = std::function<Status(ApiOptions&, const std::string&)>;

Status bad(const std::string& name, const std::string& value, const char* what) {
    return Status::Error("--" + name + ": \"" + value + "\" is not " + what);
}

bool to_int64(const std::string& s, int64_t* out) {
    if (s.empty()) return false;
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno != 0 || *end != '\0') return false;
    *out = v;
    return true;
}

bool to_float(const std::string& s, float* out) {
    if (s.empty()) return false;
    errno = 0;
    char* end = nullptr;
    float v = std::strtof(s.c_str(), &end);
    if (errno != 0 || *end != '\0' || !std::isfinite(v)) return false;
    *out = v;
    return true;
}

template <class F>
Setter str(F field) {
    return [field](ApiOptions& o, const std::string& v) {
        field(o) = v;
        return Status::Ok();
    };
}

template <class F>
Setter integer(const char* name, F field, int64_t min) {
    return [=](ApiOptions& o, const std::string& v) {
        int64_t x = 0;
        if (!to_int64(v, &x)) return bad(name, v, "an integer");
        if (x < min)
            return Status::Error(std::string("--") + name + " must be at least " +
                                 std::to_string(min));
        field(o) = static_cast<std::remove_reference_t<decltype(field(o))>>(x);
        return Status::Ok();
    };
}

template <class F>
Setter real(const char* name, F field) {
    return [=](ApiOptions& o, const std::string& v) {
        float x = 0;
        if (!to_float(v, &x)) return bad(name, v, "a number");
        field(o) = x;
        return Status::Ok();
    };
}

template <class F>
Setter flag(const char* name, F field) {
    return [=](ApiOptions& o, const std::string& v) {
        if (v.empty() || v == "1" || v == "true" || v == "on" || v == "yes") {
            field(o) = true;
        } else if (v == "0" || v == "false" || v == "off" || v == "no") {
            field(o) = false;
        } else {
            return bad(name, v, "a boolean (true/false)");
        }
        return Status::Ok();
    };
}

#define F(expr)                   \
    [](ApiOptions & o) -> auto& { \
        return o.expr;            \
    }

const std::map<std::string, Setter>& table() {
    static const std::map<std::string, Setter> t = {
        {"model", str(F(model.model))},
        {"diffusion-model", str(F(model.diffusion_model))},
        {"vae", str(F(model.vae))},
        {"clip_l", str(F(model.clip_l))},
        {"clip_g", str(F(model.clip_g))},
        {"t5xxl", str(F(model.t5xxl))},
        {"llm", str(F(model.llm))},
        {"taesd", str(F(model.taesd))},
        {"tokenizer", str(F(model.tokenizer))},
        {"type", str(F(model.weight_type))},
        {"prediction", str(F(model.prediction))},
        {"threads", integer("threads", F(model.threads), -1)},
        {"backend", str(F(model.backend))},
        {"params-backend", str(F(model.params_backend))},
        {"split-mode", str(F(model.split_mode))},
        {"max-vram", str(F(model.max_vram))},
        {"auto-fit", flag("auto-fit", F(model.auto_fit))},
        {"clip-on-cpu", flag("clip-on-cpu", F(model.clip_on_cpu))},
        {"vae-on-cpu", flag("vae-on-cpu", F(model.vae_on_cpu))},
        {"rpc-servers", str(F(rpc_servers))},
        {"prompt", str(F(gen.prompt))},
        {"negative-prompt", str(F(gen.negative_prompt))},
        {"width", integer("width", F(gen.width), 1)},
        {"height", integer("height", F(gen.height), 1)},
        {"steps", integer("steps", F(gen.steps), 1)},
        {"cfg-scale", real("cfg-scale", F(gen.cfg_scale))},
        {"img-cfg-scale", real("img-cfg-scale", F(gen.img_cfg_scale))},
        {"guidance", real("guidance", F(gen.guidance))},
        {"eta", real("eta", F(gen.eta))},
        {"sampling-method", str(F(gen.sampler))},
        {"scheduler", str(F(gen.scheduler))},
        {"sigmas", str(F(gen.sigmas))},
        {"seed", integer("seed", F(gen.seed), INT64_MIN)},
        {"batch-count", integer("batch-count", F(gen.batch), 1)},
        {"init-img", str(F(init_image_path))},
        {"strength", real("strength", F(gen.strength))},
        {"clip-skip", integer("clip-skip", F(gen.clip_skip), -1)},
        {"rng", str(F(gen.rng))},
        {"sampler-rng", str(F(gen.sampler_rng))},
        {"vae-tiling", flag("vae-tiling", F(gen.vae_tiling.enabled))},
        {"vae-tile-overlap", real("vae-tile-overlap", F(gen.vae_tiling.overlap))},
        {"vae-tile-size",
         [](ApiOptions& o, const std::string& v) {
             // "N" or "WxH" in latent units
             int64_t w = 0, h = 0;
             size_t x = v.find('x');
             bool ok = x == std::string::npos
                           ? to_int64(v, &w) && (h = w, true)
                           : to_int64(v.substr(0, x), &w) && to_int64(v.substr(x + 1), &h);
             if (!ok || w < 4 || h < 4) return bad("vae-tile-size", v, "N or WxH (at least 4)");
             o.gen.vae_tiling.tile_w = static_cast<int>(w);
             o.gen.vae_tiling.tile_h = static_cast<int>(h);
             return Status::Ok();
         }},
    };
    return t;
}

#undef F

}  // namespace

Status set_api_option(ApiOptions& options, const std::string& name, const std::string& value) {
    auto it = table().find(name);
    if (it == table().end()) return Status::Error("unknown option \"" + name + "\"");
    return it->second(options, value);
}

bool is_api_option(const std::string& name) {
    return table().count(name) != 0;
}

std::vector<std::string> api_option_names() {
    std::vector<std::string> names;
    for (const auto& kv : table()) names.push_back(kv.first);
    return names;
}

Status resolve_api_inputs(ApiOptions& options) {
    if (options.init_image_path.empty()) return Status::Ok();
    auto img = read_image(options.init_image_path);
    if (!img.ok()) return img.status().with_context("--init-img " + options.init_image_path);
    options.gen.init_image = std::move(*img);
    return Status::Ok();
}

}  // namespace ggdiff
