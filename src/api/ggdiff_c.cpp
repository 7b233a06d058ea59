// The C API over the C++ engine: options by name, errors as codes + a message.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "api/api_options.h"
#include "devices/devices.h"
#include "ggdiff.h"
#include "io/weight_type.h"
#include "pipeline/engine.h"
#include "pipeline/model_files.h"
#include "pipeline/placement_setup.h"
#include "placement/auto_fit_report.h"

struct ggdiff_options {
    ggdiff::ApiOptions opts;
};

struct ggdiff_model {
    std::unique_ptr<ggdiff::Engine> engine;
};

namespace {

thread_local std::string g_last_error;

int fail(const std::string& message) {
    g_last_error = message;
    return 1;
}

int fail(const ggdiff::Status& st) {
    return fail(st.message());
}

char* dup_string(const std::string& s) {
    char* p = static_cast<char*>(std::malloc(s.size() + 1));
    if (p) std::memcpy(p, s.c_str(), s.size() + 1);
    return p;
}

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
    return g_last_error.c_str();
}

ggdiff_options* ggdiff_options_new(void) {
    return new (std::nothrow) ggdiff_options();
}

void ggdiff_options_free(ggdiff_options* options) {
    delete options;
}

int ggdiff_options_set(ggdiff_options* options, const char* name, const char* value) {
    if (!options || !name) return fail("ggdiff_options_set: null argument");
    ggdiff::Status st = ggdiff::set_api_option(options->opts, name, value ? value : "");
    return st.ok() ? 0 : fail(st);
}

int ggdiff_model_load(const ggdiff_options* options, ggdiff_model** out_model) {
    if (!options || !out_model) return fail("ggdiff_model_load: null argument");
    *out_model = nullptr;
    try {
        if (!options->opts.rpc_servers.empty()) {
            ggdiff::Status st = ggdiff::add_rpc_servers(options->opts.rpc_servers);
            if (!st.ok()) return fail(st);
        }
        auto engine = ggdiff::Engine::load(options->opts.model);
        if (!engine.ok()) return fail(engine.status());
        *out_model = new ggdiff_model{std::move(*engine)};
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

int ggdiff_generate_each(ggdiff_model* model, const ggdiff_options* options,
                         ggdiff_progress_fn progress, ggdiff_image_fn on_image, void* user) {
    if (!model || !options || !on_image) return fail("ggdiff_generate_each: null argument");
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
            on_image(&img, index++, user);
        };
        auto images = model->engine->generate(opts.gen, fn, each);
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
    auto spec = ggdiff::validate_placement(o.model);
    if (!spec.ok()) return fail(spec.status());
    auto index = ggdiff::open_model_files(o.model);
    if (!index.ok()) return fail(index.status());
    int wtype = -1;
    if (!o.model.weight_type.empty()) {
        auto t = ggdiff::parse_weight_type(o.model.weight_type);
        if (!t.ok()) return fail(t.status());
        wtype = *t;
    }
    auto plan = ggdiff::plan_auto_fit_for(o.model, *index, wtype);
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
