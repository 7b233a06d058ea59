// The C API over the C++ engine: options by name, errors as codes + a message.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "api/api_handles.h"
#include "core/log.h"
#include "core/safe_text.h"
#include "devices/devices.h"
#include "ggdiff.h"
#include "pipeline/engine.h"
#include "pipeline/model_files.h"
#include "pipeline/placement_setup.h"
#include "placement/auto_fit_report.h"

namespace ggdiff::api {

namespace {
thread_local std::string g_last_error;
}  // namespace

const std::string& last_error() {
    return g_last_error;
}

// One line with control characters escaped, whatever file or request the message quotes.
int fail(const std::string& message) {
    g_last_error = ggdiff::escape_text(message);
    return 1;
}

char* dup_string(const std::string& s) {
    char* p = static_cast<char*>(std::malloc(s.size() + 1));
    if (p) std::memcpy(p, s.c_str(), s.size() + 1);
    return p;
}

}  // namespace ggdiff::api

namespace {

using ggdiff::api::dup_string;
using ggdiff::api::fail;

void ggdiff_images_free_list(std::vector<ggdiff_image>& images) {
    for (ggdiff_image& i : images) {
        std::free(i.data);
        std::free(i.parameters);
    }
    images.clear();
}

}  // namespace

extern "C" {

const char* ggdiff_version(void) {
    return "0.1.0";
}

const char* ggdiff_last_error(void) {
    return ggdiff::api::last_error().c_str();
}

ggdiff_options* ggdiff_options_new(void) {
    return new (std::nothrow) ggdiff_options();
}

ggdiff_options* ggdiff_options_clone(const ggdiff_options* options) {
    if (!options) return nullptr;
    return new (std::nothrow) ggdiff_options(*options);
}

void ggdiff_options_free(ggdiff_options* options) {
    delete options;
}

int ggdiff_option_count(void) {
    return static_cast<int>(ggdiff::api::option_schema().size());
}

int ggdiff_option_info(int index, ggdiff_option_desc* out) {
    const auto& schema = ggdiff::api::option_schema();
    if (!out || index < 0 || index >= static_cast<int>(schema.size())) {
        return fail("ggdiff_option_info: index " + std::to_string(index) + " out of range");
    }
    // Joined value lists are built once per option and live with the library.
    static const std::vector<std::string> values = [&] {
        std::vector<std::string> v;
        for (const auto& s : schema) {
            std::string joined;
            if (s.values) {
                for (const std::string& x : s.values()) joined += (joined.empty() ? "" : ",") + x;
            }
            v.push_back(joined);
        }
        return v;
    }();
    const ggdiff::api::OptionSpec& s = schema[static_cast<size_t>(index)];
    out->name = s.name.c_str();
    out->aliases = s.aliases.c_str();
    out->short_name = s.short_name.c_str();
    out->type = static_cast<int>(s.type);
    out->flags = s.flags;
    out->support = static_cast<int>(s.support);
    out->min = s.min;
    out->max = s.max;
    out->default_value = s.default_text.c_str();
    out->values = values[static_cast<size_t>(index)].c_str();
    out->unsupported_values = s.unsupported_values.c_str();
    out->help = s.help.c_str();
    out->note = s.note.c_str();
    out->group = s.group.c_str();
    return 0;
}

int ggdiff_option_find(const char* name) {
    return name ? ggdiff::api::option_index(name) : -1;
}

int ggdiff_options_set(ggdiff_options* options, const char* name, const char* value) {
    if (!options || !name) return fail("ggdiff_options_set: null argument");
    ggdiff::Status st = ggdiff::set_api_option(options->opts, name, value ? value : "");
    return st.ok() ? 0 : fail(st);
}

int ggdiff_options_is_set(const ggdiff_options* options, const char* name) {
    const ggdiff::api::OptionSpec* s = name ? ggdiff::api::find_option(name) : nullptr;
    if (!options || !s) return -1;
    auto it = options->opts.values.find(s->name);
    return it != options->opts.values.end() && !it->second.empty() ? 1 : 0;
}

namespace {

const ggdiff::api::OptionValue* value_of(const ggdiff_options* options, const char* name,
                                         int index = -1) {
    if (!options || !name) {
        fail("null argument");
        return nullptr;
    }
    const ggdiff::api::OptionValue* v = ggdiff::api::option_value(options->opts, name, index);
    if (!v) {
        fail(ggdiff::api::find_option(name)
                 ? std::string("option \"") + name + "\" has no value " + std::to_string(index)
                 : std::string("unknown option \"") + name + "\"");
    }
    return v;
}

}  // namespace

int ggdiff_options_get(const ggdiff_options* options, const char* name, const char** out_text) {
    const ggdiff::api::OptionValue* v = value_of(options, name);
    if (!v || !out_text) return 1;
    *out_text = v->text.c_str();
    return 0;
}

int ggdiff_options_get_int(const ggdiff_options* options, const char* name, int64_t* out) {
    const ggdiff::api::OptionValue* v = value_of(options, name);
    if (!v || !out) return 1;
    *out = v->i;
    return 0;
}

int ggdiff_options_get_float(const ggdiff_options* options, const char* name, double* out) {
    const ggdiff::api::OptionValue* v = value_of(options, name);
    if (!v || !out) return 1;
    *out = v->f;
    return 0;
}

int ggdiff_options_get_bool(const ggdiff_options* options, const char* name, int* out) {
    const ggdiff::api::OptionValue* v = value_of(options, name);
    if (!v || !out) return 1;
    *out = v->b ? 1 : 0;
    return 0;
}

int ggdiff_options_count(const ggdiff_options* options, const char* name) {
    const ggdiff::api::OptionSpec* s = name ? ggdiff::api::find_option(name) : nullptr;
    if (!options || !s) return -1;
    auto it = options->opts.values.find(s->name);
    return it == options->opts.values.end() ? 0 : static_cast<int>(it->second.size());
}

int ggdiff_options_get_at(const ggdiff_options* options, const char* name, int index,
                          const char** out_text) {
    if (index < 0) return fail("ggdiff_options_get_at: negative index");
    const ggdiff::api::OptionValue* v = value_of(options, name, index);
    if (!v || !out_text) return 1;
    *out_text = v->text.c_str();
    return 0;
}

void ggdiff_set_log_level(int level) {
    level = std::max(0, std::min(level, static_cast<int>(ggdiff::LogLevel::Quiet)));
    ggdiff::set_log_level(static_cast<ggdiff::LogLevel>(level));
}

void ggdiff_set_log_color(int enabled) {
    ggdiff::set_log_color(enabled != 0);
}

int ggdiff_model_load(const ggdiff_options* options, ggdiff_model** out_model) {
    if (!options || !out_model) return fail("ggdiff_model_load: null argument");
    *out_model = nullptr;
    try {
        ggdiff::Status pairs = ggdiff::check_option_pairs(options->opts);
        if (!pairs.ok()) return fail(pairs);
        if (options->opts.model.taesd_preview_only && options->opts.model.taesd.empty()) {
            GGDIFF_LOG_WARN("--taesd-preview-only has no effect without --taesd");
        }
        if (!options->opts.rpc_servers.empty()) {
            ggdiff::Status st = ggdiff::add_rpc_servers(options->opts.rpc_servers);
            if (!st.ok()) return fail(st);
        }
        const ggdiff::GenerateOptions request = ggdiff::measuring_request(options->opts);
        auto engine =
            ggdiff::Engine::load(ggdiff::effective_model_options(options->opts), &request);
        if (!engine.ok()) return fail(engine.status());
        *out_model = new ggdiff_model{std::move(*engine), options->opts.model, nullptr};
        return 0;
    } catch (const std::exception& e) {
        return fail(std::string("loading failed: ") + e.what());
    }
}

void ggdiff_model_free(ggdiff_model* model) {
    delete model;
}

int ggdiff_generate(ggdiff_model* model, const ggdiff_options* options, ggdiff_progress_fn progress,
                    void* user, ggdiff_image** out_images, int* out_count) {
    if (!out_images || !out_count) return fail("ggdiff_generate: null argument");
    *out_images = nullptr;
    *out_count = 0;
    // Collect copies of what generate_each hands over.
    struct Collected {
        std::vector<ggdiff_image> images;
        ggdiff_progress_fn progress;
        void* user;
    } c{{}, progress, user};
    auto keep = [](const ggdiff_image* image, int, void* u) {
        ggdiff_image copy = *image;
        const size_t n = static_cast<size_t>(image->width) * image->height * image->channels;
        copy.data = static_cast<unsigned char*>(std::malloc(n));
        if (copy.data) std::memcpy(copy.data, image->data, n);
        copy.parameters = dup_string(image->parameters ? image->parameters : "");
        static_cast<Collected*>(u)->images.push_back(copy);
    };
    auto relay = [](const char* phase, int step, int total, double secs, void* u) {
        auto* col = static_cast<Collected*>(u);
        return col->progress ? col->progress(phase, step, total, secs, col->user) : 1;
    };
    const int rc = ggdiff_generate_each(model, options, relay, keep, &c);
    const int n = static_cast<int>(c.images.size());
    if (rc != 0) {
        ggdiff_images_free_list(c.images);
        return rc;
    }
    auto* out = static_cast<ggdiff_image*>(
        std::calloc(static_cast<size_t>(std::max(n, 1)), sizeof(ggdiff_image)));
    if (!out) {
        ggdiff_images_free_list(c.images);
        return fail("out of memory");
    }
    std::copy(c.images.begin(), c.images.end(), out);
    *out_images = out;
    *out_count = n;
    return 0;
}

int ggdiff_image_count(const ggdiff_model* model, const ggdiff_options* options, int* out_count) {
    if (!model || !options || !out_count) return fail("ggdiff_image_count: null argument");
    *out_count = model->engine->image_count(options->opts.gen);
    return 0;
}

int ggdiff_generate_each(ggdiff_model* model, const ggdiff_options* options,
                         ggdiff_progress_fn progress, ggdiff_image_fn on_image, void* user) {
    if (!model || !options || !on_image) return fail("ggdiff_generate_each: null argument");
    return ggdiff_generate_each_preview(model, options, progress, on_image, nullptr, user);
}

int ggdiff_generate_each_preview(ggdiff_model* model, const ggdiff_options* options,
                                 ggdiff_progress_fn progress, ggdiff_image_fn on_image,
                                 ggdiff_preview_fn on_preview, void* user) {
    if (!model || !options || !on_image) {
        return fail("ggdiff_generate_each_preview: null argument");
    }
    try {
        ggdiff::ApiOptions opts = options->opts;
        ggdiff::Status st = ggdiff::resolve_api_inputs(opts);
        if (!st.ok()) return fail(st);
        ggdiff::ProgressFn fn;
        if (progress) {
            fn = [&](const std::string& phase, int step, int total, double secs) {
                return progress(phase.c_str(), step, total, secs, user) != 0;
            };
        }
        int index = 0;
        auto each = [&](const ggdiff::GeneratedImage& g) {
            ggdiff_image img{};
            img.width = g.image.width;
            img.height = g.image.height;
            img.channels = g.image.channels;
            img.seed = g.seed;
            img.data = const_cast<unsigned char*>(g.image.pixels.data());
            img.parameters = const_cast<char*>(g.infotext.c_str());
            model->audio = g.audio;
            on_image(&img, index++, user);
            model->audio.reset();
        };
        ggdiff::PreviewFn preview;
        if (on_preview) {
            preview = [&](const ggdiff::Image& p, int64_t seed, int step, int total) {
                ggdiff_image img{};
                img.width = p.width;
                img.height = p.height;
                img.channels = p.channels;
                img.seed = seed;
                img.data = const_cast<unsigned char*>(p.pixels.data());
                on_preview(&img, step, total, user);
            };
        }
        auto images = model->engine->generate(opts.gen, fn, each, preview);
        if (!images.ok()) return fail(images.status());
        return 0;
    } catch (const std::exception& e) {
        return fail(std::string("generation failed: ") + e.what());
    }
}

void ggdiff_images_free(ggdiff_image* images, int count) {
    if (!images) return;
    for (int i = 0; i < count; ++i) {
        std::free(images[i].data);
        std::free(images[i].parameters);
    }
    std::free(images);
}

int ggdiff_auto_fit_plan(const ggdiff_options* options, char** out_json) {
    if (!options || !out_json) return fail("ggdiff_auto_fit_plan: null argument");
    *out_json = nullptr;
    const ggdiff::ApiOptions& o = options->opts;
    if (!o.rpc_servers.empty()) {
        ggdiff::Status st = ggdiff::add_rpc_servers(o.rpc_servers);
        if (!st.ok()) return fail(st);
    }
    const ggdiff::ModelOptions model = ggdiff::effective_model_options(o);
    auto spec = ggdiff::validate_placement(model);
    if (!spec.ok()) return fail(spec.status());
    auto index = ggdiff::open_model_files(model);
    if (!index.ok()) return fail(index.status());
    // The reserves are the compute buffers measured at the requested size (graphs built, no
    // weight read); the standard ones if that fails.
    auto measured = ggdiff::Engine::measure_compute(model, *index, ggdiff::measuring_request(o));
    if (!measured.ok()) {
        GGDIFF_LOG_WARN("could not measure the compute buffers (%s); using the standard reserves",
                        measured.status().message().c_str());
    }
    auto plan = ggdiff::plan_auto_fit_for(model, *index, model.weight_type,
                                          measured.ok() ? &*measured : nullptr);
    if (!plan.ok()) return fail(plan.status());
    *out_json = dup_string(ggdiff::placement::plan_to_json(*plan));
    return 0;
}

int ggdiff_list_devices(const char* rpc_servers, char** out_text) {
    if (!out_text) return fail("ggdiff_list_devices: null argument");
    if (rpc_servers && *rpc_servers) {
        ggdiff::Status st = ggdiff::add_rpc_servers(rpc_servers);
        if (!st.ok()) return fail(st);
    }
    std::string text;
    for (const ggdiff::DeviceInfo& d : ggdiff::list_devices()) {
        text += d.name + "\t" + d.description + "\n";
    }
    *out_text = dup_string(text);
    return 0;
}

}  // extern "C"
