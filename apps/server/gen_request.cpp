#include "gen_request.h"

#include <cmath>
#include <mutex>
#include <random>
#include <sstream>

#include "engine_options.h"
#include "json_fields.h"
#include "request_error.h"

namespace ggdiff::server {

namespace {

// Longer prompts would cost many text-encoder passes (one per 75 tokens).
constexpr size_t kMaxPromptBytes = 16384;  // the engine's own limit (tokenizers)

std::string number_text(double v) {
    std::ostringstream os;
    os.precision(9);
    os << v;
    return os.str();
}

int64_t int_value(const RequestOption& o) {
    return std::strtoll(o.value.c_str(), nullptr, 10);
}

void check_size(const GenRequest& r, const char* name, const ServerConfig& config) {
    const RequestOption* o = r.get(name);
    if (!o) return;
    const int64_t v = int_value(*o);
    const auto desc = engine_option(name, false);
    const int64_t min = desc && desc->min > 8 ? static_cast<int64_t>(desc->min) : 8;
    if (v < min) throw bad_field(o->field, "must be at least " + std::to_string(min));
    if (v > config.max_size) {
        throw bad_field(o->field, "must be at most " + std::to_string(config.max_size) +
                                      " (the server's --max-size)");
    }
    if (v % 8 != 0) {
        throw bad_field(o->field, "must be a multiple of 8 (got " + std::to_string(v) + ")");
    }
}

void check_range(const GenRequest& r, const char* name, int64_t min, int64_t max,
                 const std::string& why) {
    const RequestOption* o = r.get(name);
    if (!o) return;
    const int64_t v = int_value(*o);
    if (v < min || v > max) {
        throw bad_field(o->field,
                        "must be in " + std::to_string(min) + ".." + std::to_string(max) + why);
    }
}

}  // namespace

void GenRequest::set(const std::string& name, const std::string& value, const std::string& field) {
    for (RequestOption& o : options) {
        if (o.name == name) {
            o.value = value;
            o.field = field;
            return;
        }
    }
    options.push_back({name, value, field});
}

void GenRequest::add_image(const std::string& option, ImagePtr image, const std::string& field) {
    images.push_back(
        {option, std::shared_ptr<ggdiff_image>(image.release(), ImageDeleter()), field});
}

const RequestImage* GenRequest::image(const std::string& option) const {
    for (const RequestImage& i : images)
        if (i.option == option) return &i;
    return nullptr;
}

const RequestOption* GenRequest::get(const std::string& name) const {
    for (const RequestOption& o : options)
        if (o.name == name) return &o;
    return nullptr;
}

std::string GenRequest::value_or(const std::string& name, const std::string& fallback) const {
    const RequestOption* o = get(name);
    return o ? o->value : fallback;
}

void GenRequest::set_text(const std::string& name, const std::optional<std::string>& v,
                          const std::string& field) {
    if (v) set(name, *v, field);
}

void GenRequest::set_int(const std::string& name, const std::optional<int64_t>& v,
                         const std::string& field) {
    if (v) set(name, std::to_string(*v), field);
}

void GenRequest::set_number(const std::string& name, const std::optional<double>& v,
                            const std::string& field) {
    if (v) set(name, number_text(*v), field);
}

void GenRequest::set_bool(const std::string& name, const std::optional<bool>& v,
                          const std::string& field) {
    if (v) set(name, *v ? "true" : "false", field);
}

void read_engine_options(const Fields& body, const std::string& key, GenRequest& r) {
    auto object = body.object(key);
    if (!object) return;
    for (const auto& [k, v] : object->json().items()) {
        const std::string field = object->path(k);
        auto desc = engine_option(k);
        if (!desc)
            throw bad_field(field, "unknown option (see the schema in /sdcpp/v1/capabilities)");
        if (!(desc->flags & GGDIFF_OPTION_GENERATE) || (desc->flags & GGDIFF_OPTION_FRONTEND)) {
            throw bad_field(field, "--" + std::string(desc->name) + " is not a per-request option");
        }
        if (desc->type == GGDIFF_OPTION_PATH) {
            throw bad_field(field, "file paths are not taken from requests");
        }
        if (v.is_null()) continue;
        r.set(desc->name, option_text_from_json(*desc, v, field), field);
    }
}

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

std::string strip_lora_tags(const std::string& prompt) {
    std::string out;
    size_t pos = 0;
    for (;;) {
        const size_t tag = prompt.find("<lora:", pos);
        const size_t end = tag == std::string::npos ? tag : prompt.find('>', tag);
        if (end == std::string::npos) return out + prompt.substr(pos);
        out += prompt.substr(pos, tag - pos);
        pos = end + 1;
    }
}

int64_t resolve_seed(const GenRequest& request, const ModelHost& host, bool seed_given) {
    const RequestOption* s = request.get("seed");
    if (s && int_value(*s) >= 0) return int_value(*s);
    if (!s && seed_given) {
        const long long v = std::strtoll(host.default_value("seed").c_str(), nullptr, 10);
        if (v >= 0) return v;
    }
    static std::mutex m;
    static std::mt19937_64 rng{std::random_device{}()};
    std::lock_guard<std::mutex> lock(m);
    return static_cast<int64_t>(rng() & 0xffffffffull);
}

void choose_model(GenRequest& r, const ModelHost& host, const std::optional<std::string>& model,
                  const std::string& model_field, const std::optional<std::string>& vae,
                  const std::string& vae_field) {
    const ModelLibrary& lib = host.library();
    r.model = lib.current();
    r.vae = lib.current_vae();
    if (model && !model->empty()) {
        if (!lib.resolve(*model, &r.model)) {
            throw bad_field(model_field, "no model \"" + *model +
                                             "\" (GET /sdapi/v1/sd-models or /v1/models lists "
                                             "them)");
        }
    }
    if (vae && !lib.resolve_vae(*vae, &r.vae)) {
        throw bad_field(vae_field, "no VAE \"" + *vae + "\" (GET /sdapi/v1/sd-vae lists them)");
    }
    r.model_chosen = true;
}

std::optional<bool> model_can(const GenRequest& r, const ModelHost& host, const char* capability) {
    const nlohmann::json info = host.model_info(r.model, r.vae);
    if (!info.is_object() || !info.contains("family") || info["family"].is_null())
        return std::nullopt;
    return info.value(capability, false);
}

void require_capability(GenRequest& r, const ModelHost& host, const char* capability,
                        const std::string& field, const std::string& message) {
    const std::optional<bool> can = model_can(r, host, capability);
    if (!can) {
        r.needs.push_back({capability, field, message});
    } else if (!*can) {
        throw bad_field(field, message);
    }
}

void add_ref_image(GenRequest& r, const ModelHost& host, ImagePtr image, const std::string& field,
                   bool needed) {
    const std::optional<bool> can = model_can(r, host, "ref_images");
    if (can.value_or(false)) {
        r.add_image("ref-image", std::move(image), field);
    } else if (!can) {
        r.pending_refs.push_back({"ref-image", std::move(image), field});
        if (needed) {
            r.needs.push_back({"ref_images", field,
                               "this model takes no reference images (FLUX.1 Kontext, FLUX.2 "
                               "and Qwen Image Edit models do)"});
        }
    }
}

std::string settle_for_model(const GenRequest& r, const nlohmann::json& info,
                             ggdiff_options* options) {
    for (const GenRequest::Need& n : r.needs) {
        if (!info.value(n.capability, false)) return n.field + ": " + n.message;
    }
    if (!info.value("ref_images", false)) return "";
    for (const RequestImage& img : r.pending_refs) {
        if (ggdiff_options_set_image(options, img.option.c_str(), img.image.get()) != 0)
            return img.field + ": " + ggdiff_last_error();
    }
    return "";
}

OptionsPtr build_options(GenRequest& r, const ModelHost& host, const LoraDir& loras,
                         const ServerConfig& config) {
    if (!r.model_chosen) choose_model(r, host, std::nullopt, "");
    for (const char* name : {"prompt", "negative-prompt"}) {
        const RequestOption* p = r.get(name);
        if (p && p->value.size() > kMaxPromptBytes) {
            throw bad_field(p->field, "longer than " + std::to_string(kMaxPromptBytes) + " bytes");
        }
    }
    check_size(r, "width", config);
    check_size(r, "height", config);
    check_range(r, "steps", 1, config.max_steps, " (the server's --max-steps)");
    check_range(r, "batch-count", 1, config.max_batch, " (the server's --max-batch)");
    if (const RequestOption* s = r.get("sampling-method")) {
        r.set("sampling-method", canonical_sampler(s->value, s->field), s->field);
    }
    if (const RequestOption* s = r.get("scheduler")) {
        r.set("scheduler", canonical_scheduler(s->value, s->field), s->field);
    }

    if (r.strip_prompt_loras) {
        for (const char* name : {"prompt", "negative-prompt"}) {
            const RequestOption* p = r.get(name);
            if (!p) continue;
            const std::string field = p->field;
            r.set(name, strip_lora_tags(p->value), field);
        }
    }
    // LoRA: names from the folder's own listing only.
    std::vector<LoraUse> uses = r.loras;
    for (const char* name : {"prompt", "negative-prompt"}) {
        if (const RequestOption* p = r.get(name)) {
            auto tags = prompt_lora_tags(p->value, p->field);
            uses.insert(uses.end(), tags.begin(), tags.end());
        }
    }
    for (const LoraUse& u : uses) {
        if (!host.lora_supported()) throw not_supported(u.field, "LoRA ('" + u.name + "')");
        if (!loras.find(u.name, nullptr)) {
            throw bad_field(u.field, "unknown LoRA '" + u.name + "' (see /sdapi/v1/loras)");
        }
    }
    if (!r.loras.empty()) {
        // Structured LoRA uses become prompt tags, the engine's own syntax.
        const RequestOption* p = r.get("prompt");
        std::string prompt = p ? p->value : host.default_value("prompt");
        const std::string field = p ? p->field : "prompt";
        for (const LoraUse& u : r.loras) {
            prompt += " <lora:" + u.name + ":" + number_text(u.weight) + ">";
        }
        r.set("prompt", prompt, field);
    }

    r.set("seed", std::to_string(resolve_seed(r, host, config.seed_given)),
          r.get("seed") ? r.get("seed")->field : "seed");

    OptionsPtr o = host.request_options(r.model);
    if (!o) throw std::runtime_error("out of memory");
    for (const RequestOption& opt : r.options) {
        if (ggdiff_options_set(o.get(), opt.name.c_str(), opt.value.c_str()) != 0) {
            throw bad_field(opt.field, ggdiff_last_error());
        }
    }
    for (const RequestImage& img : r.images) {
        if (ggdiff_options_set_image(o.get(), img.option.c_str(), img.image.get()) != 0) {
            throw bad_field(img.field, ggdiff_last_error());
        }
    }
    return o;
}

}  // namespace ggdiff::server
