#include "gen_request.h"

#include <cmath>
#include <random>
#include <sstream>

#include "request_error.h"

namespace ggdiff::server {

namespace {

std::string number_text(double v) {
    std::ostringstream os;
    os.precision(9);
    os << v;
    return os.str();
}

void set_option(ggdiff_options* o, const char* name, const std::string& value,
                const std::string& field) {
    if (ggdiff_options_set(o, name, value.c_str()) != 0) {
        throw bad_field(field, ggdiff_last_error());
    }
}

void check_size(const Field<int64_t>& f, const ServerConfig& config) {
    if (!f) return;
    const int64_t v = *f.value;
    if (v < 8) throw bad_field(f.name, "must be at least 8");
    if (v > config.max_size) {
        throw bad_field(f.name, "must be at most " + std::to_string(config.max_size) +
                                    " (the server's --max-size)");
    }
    if (v % 8 != 0)
        throw bad_field(f.name, "must be a multiple of 8 (got " + std::to_string(v) + ")");
}

// Longer prompts would cost many text-encoder passes (one per 75 tokens).
constexpr size_t kMaxPromptBytes = 32768;

}  // namespace

std::string canonical_sampler(const std::string& name, const std::string& field) {
    const char* c = ggdiff_sampler_name(name.c_str());
    if (!c) throw bad_field(field, ggdiff_last_error());
    return c;
}

std::string canonical_scheduler(const std::string& name, const std::string& field) {
    const char* c = ggdiff_scheduler_name(name.c_str());
    if (!c) throw bad_field(field, ggdiff_last_error());
    return c;
}

std::vector<LoraUse> prompt_lora_tags(const std::string& prompt, const std::string& field) {
    std::vector<LoraUse> out;
    size_t pos = 0;
    while ((pos = prompt.find("<lora:", pos)) != std::string::npos) {
        const size_t end = prompt.find('>', pos);
        if (end == std::string::npos) throw bad_field(field, "unterminated <lora:...> tag");
        const std::string body = prompt.substr(pos + 6, end - pos - 6);
        LoraUse use;
        use.field = field;
        const size_t colon = body.find(':');
        use.name = body.substr(0, colon);
        if (colon != std::string::npos) {
            const std::string w = body.substr(colon + 1, body.find(':', colon + 1) - colon - 1);
            char* stop = nullptr;
            use.weight = std::strtod(w.c_str(), &stop);
            if (w.empty() || *stop != '\0' || !std::isfinite(use.weight)) {
                throw bad_field(field,
                                "<lora:" + body + ">: the weight '" + w + "' is not a number");
            }
        }
        if (use.name.empty()) throw bad_field(field, "<lora:...> tag without a name");
        out.push_back(use);
        pos = end + 1;
    }
    return out;
}

int64_t resolve_seed(const GenRequest& request, const ModelHost& host, bool seed_given) {
    if (request.seed && *request.seed.value >= 0) return *request.seed.value;
    if (!request.seed && seed_given) {
        const std::string s = host.default_value("seed");
        const long long v = std::strtoll(s.c_str(), nullptr, 10);
        if (v >= 0) return v;
    }
    static std::mutex m;
    static std::mt19937_64 rng{std::random_device{}()};
    std::lock_guard<std::mutex> lock(m);
    return static_cast<int64_t>(rng() & 0xffffffffull);
}

OptionsPtr build_options(GenRequest& r, const ModelHost& host, const LoraDir& loras,
                         const ServerConfig& config) {
    for (const Field<std::string>* p : {&r.prompt, &r.negative_prompt}) {
        if (*p && p->value->size() > kMaxPromptBytes) {
            throw bad_field(p->name, "longer than " + std::to_string(kMaxPromptBytes) + " bytes");
        }
    }
    check_size(r.width, config);
    check_size(r.height, config);
    if (r.steps && (*r.steps.value < 1 || *r.steps.value > config.max_steps)) {
        throw bad_field(r.steps.name, "must be in 1.." + std::to_string(config.max_steps));
    }
    if (r.batch && (*r.batch.value < 1 || *r.batch.value > config.max_batch)) {
        throw bad_field(r.batch.name, "must be in 1.." + std::to_string(config.max_batch) +
                                          " (the server's --max-batch)");
    }
    if (r.strength && (*r.strength.value <= 0.0 || *r.strength.value > 1.0)) {
        throw bad_field(r.strength.name, "must be in (0, 1]");
    }
    if (r.sampler) r.sampler.value = canonical_sampler(*r.sampler.value, r.sampler.name);
    if (r.scheduler) r.scheduler.value = canonical_scheduler(*r.scheduler.value, r.scheduler.name);

    // LoRA: names from the folder's own listing only.
    std::vector<LoraUse> uses = r.loras;
    for (const Field<std::string>* p : {&r.prompt, &r.negative_prompt}) {
        if (*p) {
            auto tags = prompt_lora_tags(*p->value, p->name);
            uses.insert(uses.end(), tags.begin(), tags.end());
        }
    }
    for (const LoraUse& u : uses) {
        if (!host.lora_supported()) throw not_supported(u.field, "LoRA ('" + u.name + "')");
        if (!loras.find(u.name, nullptr)) {
            throw bad_field(u.field, "unknown LoRA '" + u.name + "' (see /sdapi/v1/loras)");
        }
    }
    std::string prompt = r.prompt ? *r.prompt.value : host.default_value("prompt");
    for (const LoraUse& u : r.loras)
        prompt += " <lora:" + u.name + ":" + number_text(u.weight) + ">";

    OptionsPtr o = host.request_options();
    if (!o) throw std::runtime_error("out of memory");
    ggdiff_options* p = o.get();
    const std::string prompt_field = r.prompt ? r.prompt.name : "prompt";
    set_option(p, "prompt", prompt, prompt_field);
    if (r.negative_prompt)
        set_option(p, "negative-prompt", *r.negative_prompt.value, r.negative_prompt.name);
    if (r.width) set_option(p, "width", std::to_string(*r.width.value), r.width.name);
    if (r.height) set_option(p, "height", std::to_string(*r.height.value), r.height.name);
    if (r.steps) set_option(p, "steps", std::to_string(*r.steps.value), r.steps.name);
    if (r.batch) set_option(p, "batch-count", std::to_string(*r.batch.value), r.batch.name);
    if (r.clip_skip)
        set_option(p, "clip-skip", std::to_string(*r.clip_skip.value), r.clip_skip.name);
    if (r.cfg_scale) set_option(p, "cfg-scale", number_text(*r.cfg_scale.value), r.cfg_scale.name);
    if (r.img_cfg_scale)
        set_option(p, "img-cfg-scale", number_text(*r.img_cfg_scale.value), r.img_cfg_scale.name);
    if (r.guidance) set_option(p, "guidance", number_text(*r.guidance.value), r.guidance.name);
    if (r.strength) set_option(p, "strength", number_text(*r.strength.value), r.strength.name);
    if (r.eta) set_option(p, "eta", number_text(*r.eta.value), r.eta.name);
    if (r.sampler) set_option(p, "sampling-method", *r.sampler.value, r.sampler.name);
    if (r.scheduler) set_option(p, "scheduler", *r.scheduler.value, r.scheduler.name);
    if (r.sigmas) set_option(p, "sigmas", *r.sigmas.value, r.sigmas.name);
    if (r.rng) set_option(p, "rng", *r.rng.value, r.rng.name);
    if (r.sampler_rng) set_option(p, "sampler-rng", *r.sampler_rng.value, r.sampler_rng.name);
    if (r.vae_tiling)
        set_option(p, "vae-tiling", *r.vae_tiling.value ? "true" : "false", r.vae_tiling.name);
    if (r.vae_tile_x || r.vae_tile_y) {
        const int64_t x = r.vae_tile_x ? *r.vae_tile_x.value : *r.vae_tile_y.value;
        const int64_t y = r.vae_tile_y ? *r.vae_tile_y.value : x;
        set_option(p, "vae-tile-size", std::to_string(x) + "x" + std::to_string(y),
                   r.vae_tile_x ? r.vae_tile_x.name : r.vae_tile_y.name);
    }
    if (r.vae_tile_overlap)
        set_option(p, "vae-tile-overlap", number_text(*r.vae_tile_overlap.value),
                   r.vae_tile_overlap.name);

    const int64_t seed = resolve_seed(r, host, config.seed_given);
    r.seed.value = seed;
    if (r.seed.name.empty()) r.seed.name = "seed";
    set_option(p, "seed", std::to_string(seed), r.seed.name);

    if (r.init_image) {
        if (ggdiff_options_set_image(p, "init-img", r.init_image.get()) != 0) {
            throw bad_field(r.init_image_field, ggdiff_last_error());
        }
    }
    return o;
}

}  // namespace ggdiff::server
