// The C API's modes besides generation: -M info, -M convert, -M metadata, and writing
// images with their parameters.
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "api/c_api_internal.h"
#include "core/output_file.h"
#include "core/safe_text.h"
#include "families/registry.h"
#include "ggdiff.h"
#include "image/image_io.h"
#include "image/image_metadata.h"
#include "image/infotext.h"
#include "io/gguf_writer.h"
#include "io/model_info.h"
#include "io/safetensors_writer.h"
#include "io/tensor_index.h"

namespace {

using ggdiff::api::dup_string;
using ggdiff::api::fail;

// Every model file the options name: each -m (in order), then the component files.
ggdiff::Result<ggdiff::TensorIndex> open_named_files(const ggdiff::ApiOptions& o) {
    std::vector<std::pair<std::string, std::string>> files;
    auto it = o.values.find("model");
    if (it != o.values.end()) {
        for (const ggdiff::api::OptionValue& v : it->second) files.emplace_back(v.text, "model");
    }
    const std::pair<const std::string*, const char*> roles[] = {
        {&o.model.diffusion_model, "diffusion-model"},
        {&o.model.uncond_diffusion_model, "uncond-diffusion-model"},
        {&o.model.vae, "vae"},
        {&o.model.clip_l, "clip_l"},
        {&o.model.clip_g, "clip_g"},
        {&o.model.t5xxl, "t5xxl"},
        {&o.model.llm, "llm"},
        {&o.model.llm_vision, "llm_vision"},
        {&o.model.clip_vision, "clip_vision"},
        {&o.model.taesd, "taesd"}};
    for (const auto& [path, role] : roles) {
        if (!path->empty()) files.emplace_back(*path, role);
    }
    if (files.empty()) return ggdiff::Status::Error("no model file given (-m FILE)");
    ggdiff::TensorIndex index = ggdiff::model_index();
    for (const auto& [path, role] : files) {
        ggdiff::Status st = index.add(path, ggdiff::prefix_for_role(role));
        if (!st.ok()) return st;
    }
    return index;
}

}  // namespace

extern "C" {

int ggdiff_model_info(const ggdiff_options* options, char** out_text) {
    if (!options || !out_text) return fail("ggdiff_model_info: null argument");
    *out_text = nullptr;
    try {
        auto index = open_named_files(options->opts);
        if (!index.ok()) return fail(index.status().message());
        ggdiff::ModelInfo info = ggdiff::summarize(*index);
        // The family is the registry's: its id, display name, and whether it runs here.
        const ggdiff::FamilyRecipe* r = ggdiff::find_family(*index);
        const std::string& uncond = options->opts.model.uncond_diffusion_model;
        std::string part;
        if (!r && !uncond.empty()) {
            // The unconditional DiT alone: the family whose unconditional DiT it is.
            ggdiff::TensorIndex as_dit = ggdiff::model_index();
            if (as_dit.add(uncond, ggdiff::prefix_for_role("diffusion-model")).ok()) {
                r = ggdiff::find_family(as_dit);
                if (r && !r->uncond_model) r = nullptr;
                if (r) part = "; its unconditional DiT";
            }
        }
        if (r) {
            info.family = r->id;
            info.family_note =
                std::string(r->display) + part + (r->load ? "" : "; not supported yet");
        } else {
            info.looked_for = ggdiff::family_signatures();
        }
        *out_text = dup_string(ggdiff::format_model_info(info));
        return 0;
    } catch (const std::exception& e) {
        return fail(std::string("reading the model files failed: ") + e.what());
    }
}

int ggdiff_convert(const ggdiff_options* options, const char* path, ggdiff_progress_fn progress,
                   void* user) {
    if (!options || !path) return fail("ggdiff_convert: null argument");
    try {
        const ggdiff::ApiOptions& o = options->opts;
        // The output is checked before any model file is opened.
        ggdiff::Status target = ggdiff::check_output_target(path);
        if (!target.ok()) return fail(target.with_context("output " + ggdiff::quote_name(path)));
        auto index = open_named_files(o);
        if (!index.ok()) return fail(index.status().message());
        auto report = [&](size_t done, size_t total, const std::string&) {
            if (progress) {
                progress("convert", static_cast<int>(done), static_cast<int>(total), 0.0, user);
            }
        };
        // NAME.safetensors gets a safetensors file (a PyTorch checkpoint made safe to share);
        // anything else GGUF.
        const std::string out = path;
        const bool safetensors =
            out.size() > 12 && out.compare(out.size() - 12, 12, ".safetensors") == 0;
        ggdiff::Status st = safetensors
                                ? ggdiff::convert_to_safetensors(*index, path, o.model.weight_type,
                                                                 report, ggdiff::family_id(*index))
                                : ggdiff::convert_to_gguf(*index, path, o.model.weight_type, report,
                                                          ggdiff::family_id(*index));
        if (!st.ok()) return fail(st.message());
        return 0;
    } catch (const std::exception& e) {
        return fail(std::string("converting failed: ") + e.what());
    }
}

int ggdiff_image_metadata(const char* path, const char* format, char** out_text) {
    if (!path || !out_text) return fail("ggdiff_image_metadata: null argument");
    *out_text = nullptr;
    const std::string fmt = format ? format : "text";
    auto params = ggdiff::read_image_parameters(path);
    if (!params.ok()) return fail(params.status().message());
    if (fmt == "raw") {
        *out_text = dup_string(*params);
        return 0;
    }
    auto text = ggdiff::format_metadata(*params, fmt);
    if (!text.ok()) return fail(text.status().message());
    // Text from a file never reaches a terminal as control sequences (JSON escapes its own).
    *out_text = dup_string(ggdiff::escape_log_text(*text));
    return 0;
}

int ggdiff_image_save(const ggdiff_image* image, const char* path, int with_parameters) {
    if (!image || !path || !image->data) return fail("ggdiff_image_save: null argument");
    if (image->width <= 0 || image->height <= 0 || image->channels < 1 || image->channels > 4) {
        return fail("ggdiff_image_save: bad image size or channel count");
    }
    ggdiff::Image img;
    img.width = image->width;
    img.height = image->height;
    img.channels = image->channels;
    img.pixels.assign(image->data, image->data + static_cast<size_t>(image->width) * image->height *
                                                     image->channels);
    ggdiff::ImageWriteOptions wo;
    if (with_parameters && image->parameters) wo.parameters = image->parameters;
    ggdiff::Status st = ggdiff::write_image(path, img, wo);
    if (!st.ok()) return fail(st.message());
    return 0;
}

int ggdiff_image_check_path(const char* path) {
    if (!path) return fail("ggdiff_image_check_path: null argument");
    ggdiff::Status st = ggdiff::check_image_output_path(path);
    if (!st.ok()) return fail(st.message());
    return 0;
}

}  // extern "C"
