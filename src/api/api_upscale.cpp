// The C API's upscaler handle (-M upscale, the server's extras route): an ESRGAN on its
// device without any diffusion model.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "api/c_api_internal.h"
#include "devices/devices.h"
#include "ggdiff.h"
#include "pipeline/latent_image.h"
#include "pipeline/upscale.h"

struct ggdiff_upscaler {
    std::unique_ptr<ggdiff::models::EsrganUpscaler> model;
};

namespace {

using ggdiff::api::dup_string;
using ggdiff::api::fail;

ggdiff::Image from_c(const ggdiff_image& image) {
    ggdiff::Image in;
    in.width = image.width;
    in.height = image.height;
    in.channels = image.channels;
    in.pixels.assign(image.data, image.data + in.byte_size());
    return in;
}

bool valid_c_image(const ggdiff_image* image) {
    return image && image->width > 0 && image->height > 0 && image->channels >= 1 &&
           image->channels <= 4 && image->data;
}

// A malloc'd ggdiff_image of `img` (nullptr when out of memory).
ggdiff_image* to_c(const ggdiff::Image& img, int64_t seed, const std::string& parameters) {
    auto* out = static_cast<ggdiff_image*>(std::calloc(1, sizeof(ggdiff_image)));
    if (!out) return nullptr;
    out->width = img.width;
    out->height = img.height;
    out->channels = img.channels;
    out->seed = seed;
    out->data = static_cast<unsigned char*>(std::malloc(img.pixels.size()));
    out->parameters = dup_string(parameters);
    if (!out->data || !out->parameters) {
        std::free(out->data);
        std::free(out->parameters);
        std::free(out);
        return nullptr;
    }
    std::memcpy(out->data, img.pixels.data(), img.pixels.size());
    return out;
}

}  // namespace

extern "C" {

int ggdiff_upscaler_load(const ggdiff_options* options, ggdiff_upscaler** out_upscaler) {
    if (!options || !out_upscaler) return fail("ggdiff_upscaler_load: null argument");
    *out_upscaler = nullptr;
    try {
        const ggdiff::ModelOptions model = ggdiff::effective_model_options(options->opts);
        if (model.upscale_model.empty()) {
            return fail("no upscaler given: pass --upscale-model with an ESRGAN model file");
        }
        if (!options->opts.rpc_servers.empty()) {
            ggdiff::Status st = ggdiff::add_rpc_servers(options->opts.rpc_servers);
            if (!st.ok()) return fail(st);
        }
        auto where = ggdiff::upscaler_placement(model);
        if (!where.ok()) return fail(where.status());
        auto u = ggdiff::load_upscaler(model, *where);
        if (!u.ok()) return fail(u.status());
        *out_upscaler = new ggdiff_upscaler{std::move(*u)};
        return 0;
    } catch (const std::exception& e) {
        return fail(std::string("loading the upscaler failed: ") + e.what());
    }
}

void ggdiff_upscaler_free(ggdiff_upscaler* upscaler) {
    delete upscaler;
}

int ggdiff_upscaler_scale(const ggdiff_upscaler* upscaler) {
    return upscaler && upscaler->model ? upscaler->model->scale() : 0;
}

const char* ggdiff_upscaler_name(const ggdiff_upscaler* upscaler) {
    return upscaler && upscaler->model ? upscaler->model->name().c_str() : "";
}

int ggdiff_upscale(ggdiff_upscaler* upscaler, const ggdiff_options* options,
                   const ggdiff_image* image, ggdiff_progress_fn progress, void* user,
                   ggdiff_image** out_image) {
    if (!upscaler || !upscaler->model || !image || !out_image) {
        return fail("ggdiff_upscale: null argument");
    }
    *out_image = nullptr;
    try {
        const ggdiff::GenerateOptions defaults;
        const ggdiff::GenerateOptions& gen = options ? options->opts.gen : defaults;
        if (!valid_c_image(image)) {
            return fail("ggdiff_upscale: not an image (" + std::to_string(image->width) + "x" +
                        std::to_string(image->height) + ", " + std::to_string(image->channels) +
                        " channels)");
        }
        const ggdiff::Image in = from_c(*image);
        const auto t0 = std::chrono::steady_clock::now();
        auto on_pass = [&](int pass, int total) {
            if (!progress) return true;
            const double secs =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            return progress("upscale", pass, total, secs, user) != 0;
        };
        auto up = ggdiff::upscale_image(*upscaler->model, in, gen.upscale_repeats,
                                        gen.upscale_tile_size, on_pass);
        upscaler->model->end_phase();
        if (!up.ok()) return fail(up.status());
        int factor = 1;
        for (int i = 0; i < gen.upscale_repeats; ++i) factor *= upscaler->model->scale();
        *out_image =
            to_c(*up, image->seed,
                 ggdiff::parameters_with_upscale(image->parameters ? image->parameters : "", factor,
                                                 upscaler->model->name()));
        return *out_image ? 0 : fail("out of memory");
    } catch (const std::exception& e) {
        return fail(std::string("upscaling failed: ") + e.what());
    }
}

int ggdiff_upscaler_file_scale(const char* path, int* out_scale) {
    if (!path || !out_scale) return fail("ggdiff_upscaler_file_scale: null argument");
    *out_scale = 0;
    try {
        auto scale = ggdiff::models::esrgan_file_scale(path);
        if (!scale.ok()) return fail(scale.status());
        *out_scale = *scale;
        return 0;
    } catch (const std::exception& e) {
        return fail(std::string("reading the upscaler failed: ") + e.what());
    }
}

int ggdiff_image_resize(const ggdiff_image* image, int width, int height,
                        ggdiff_image** out_image) {
    if (!out_image) return fail("ggdiff_image_resize: null argument");
    *out_image = nullptr;
    if (!valid_c_image(image)) return fail("ggdiff_image_resize: not an image");
    try {
        ggdiff::Status st = ggdiff::check_image_dimensions(width, height);
        if (!st.ok()) return fail(st.with_context("ggdiff_image_resize"));
        const ggdiff::Image out = ggdiff::resize_image(from_c(*image), width, height);
        *out_image = to_c(out, image->seed, image->parameters ? image->parameters : "");
        return *out_image ? 0 : fail("out of memory");
    } catch (const std::exception& e) {
        return fail(std::string("resizing failed: ") + e.what());
    }
}

}  // extern "C"
