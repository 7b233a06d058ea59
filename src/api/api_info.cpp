// C API: what a front end shows about the engine (the loaded model, samplers, schedulers) and
// reading an image's A1111 parameters back as JSON.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "api/api_handles.h"
#include "families/registry.h"
#include "ggdiff.h"
#include "image/infotext.h"
#include "pipeline/model_files.h"
#include "runtime/sgemm_rate.h"
#include "sampling/samplers.h"
#include "sampling/schedules.h"

using ggdiff::api::dup_string;
using ggdiff::api::fail;

namespace {

int out_json(const nlohmann::json& j, char** out) {
    *out = dup_string(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return *out ? 0 : fail("out of memory");
}

// Names handed out by ggdiff_sampler_name / ggdiff_scheduler_name live as long as the process.
const char* stable(const std::string& s) {
    static const std::vector<std::string>* pool = [] {
        auto* v = new std::vector<std::string>();
        for (const auto& n : ggdiff::sampling::sampler_names()) v->push_back(n);
        for (const auto& n : ggdiff::sampling::schedule_names()) v->push_back(n);
        return v;
    }();
    for (const auto& p : *pool)
        if (p == s) return p.c_str();
    return nullptr;
}

}  // namespace

extern "C" {

int ggdiff_loaded_model_info(const ggdiff_model* model, char** out) {
    if (!model || !out) return fail("ggdiff_loaded_model_info: null argument");
    const ggdiff::ModelOptions& f = model->files;
    nlohmann::json files = nlohmann::json::object();
    const std::pair<const char*, const std::string*> roles[] = {
        {"model", &f.model},   {"diffusion-model", &f.diffusion_model},
        {"vae", &f.vae},       {"clip_l", &f.clip_l},
        {"clip_g", &f.clip_g}, {"t5xxl", &f.t5xxl},
        {"llm", &f.llm},       {"llm_vision", &f.llm_vision},
        {"taesd", &f.taesd},   {"clip_vision", &f.clip_vision}};
    for (const auto& [role, path] : roles)
        if (!path->empty()) files[role] = *path;
    if (f.model.empty() && f.diffusion_model.empty()) {
        files["model"] = ggdiff::default_model_path();  // the engine loaded the built-in one
    }
    nlohmann::json j;
    j["name"] = model->engine->model_name();
    j["family"] = model->engine->family();
    j["family_id"] = model->engine->family_id();
    const ggdiff::Family& family = model->engine->family_parts();
    j["ref_images"] = family.ref_image_multiple > 0;
    j["control_video"] = family.takes_control_video;  // Wan VACE: --control-video
    j["end_image"] = family.takes_end_image;          // Wan I2V / FLF2V / TI2V, LTX-2: --end-img
    // --hires on a video: the family's latent upscaler models (LTX-2).
    j["video_hires"] = static_cast<bool>(family.latent_upscaler);
    // Skip-layer guidance (--slg-scale) and the blocks --skip-layers may name.
    j["skip_layers"] = family.skips_layers;
    j["skip_layer_count"] = family.skip_layer_count;
    nlohmann::json defaults = {{"sample_method", family.defaults.sampler},
                               {"cfg_scale", family.defaults.cfg_scale},
                               {"width", family.defaults.width},
                               {"height", family.defaults.height},
                               {"clip_skip", family.defaults.clip_skip}};
    // FLUX's shift (mu) follows the image size: only a fixed one is a default.
    if (family.param.time_map() == ggdiff::sampling::Parameterization::TimeMap::FlowSnr)
        defaults["flow_shift"] = family.param.shift();
    // The samplers' eta where the family sets one (HiDream-O1: 8, which also scales the noise).
    if (family.defaults.eta) defaults["eta"] = *family.defaults.eta;
    // The family's own schedule when a request names none (LTX-2: ltx2).
    if (family.default_sigmas && !family.default_sigmas_name.empty())
        defaults["scheduler"] = family.default_sigmas_name;
    j["defaults"] = defaults;
    j["files"] = files;
    j["vae"] = f.vae.empty() ? nlohmann::json(nullptr)
                             : nlohmann::json(std::filesystem::path(f.vae).stem().string());
    j["version"] = ggdiff_version();
    return out_json(j, out);
}

int ggdiff_last_generation_stats(const ggdiff_model* model, char** out) {
    if (!model || !out) return fail("ggdiff_last_generation_stats: null argument");
    const ggdiff::PhaseTimings& t = model->engine->timings();
    nlohmann::json phases = nlohmann::json::array();
    auto add = [&phases](const char* name, double seconds, const ggdiff::PhaseFigures& f) {
        phases.push_back({{"name", name},
                          {"seconds", seconds},
                          {"gflop", f.flops / 1e9},
                          {"peak_rss_mib", static_cast<double>(f.peak_rss) / 1048576.0},
                          {"uploaded_mib", static_cast<double>(f.uploaded) / 1048576.0}});
    };
    add("text", t.text, t.text_figures);
    if (t.encode > 0) add("encode", t.encode, t.encode_figures);
    add("sampling", t.sampling, t.sampling_figures);
    add("decode", t.decode, t.decode_figures);
    return out_json({{"phases", phases}}, out);
}

int ggdiff_measure_sgemm(int threads, int size, double* out_gflops) {
    if (!out_gflops || threads < 1 || size < 16 || size > 8192)
        return fail("ggdiff_measure_sgemm: threads >= 1 and size in [16, 8192] expected");
    auto rate = ggdiff::measure_sgemm_gflops(threads, size);
    if (!rate.ok()) return fail(rate.status().message());
    *out_gflops = *rate;
    return 0;
}

const char* ggdiff_default_model(void) {
    thread_local std::string path;
    path = ggdiff::default_model_path();
    if (path.empty()) {
        fail(
            "the built-in model (models/ggdiff-toy-shapes.safetensors) was not found next to "
            "the executable or in the source tree, and GGDIFF_DEFAULT_MODEL is not set");
        return nullptr;
    }
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
        fail("the built-in model " + path + " (from GGDIFF_DEFAULT_MODEL) is not a file");
        return nullptr;
    }
    return path.c_str();
}

int ggdiff_list_families(char** out) {
    if (!out) return fail("ggdiff_list_families: null argument");
    nlohmann::json list = nlohmann::json::array();
    for (const ggdiff::FamilyRecipe* r : ggdiff::family_recipes()) {
        list.push_back({{"id", r->id},
                        {"name", r->display},
                        {"supported", r->load != nullptr},
                        {"detects", r->signature}});
    }
    return out_json(list, out);
}

int ggdiff_list_samplers(char** out) {
    if (!out) return fail("ggdiff_list_samplers: null argument");
    nlohmann::json list = nlohmann::json::array();
    for (auto kind : ggdiff::sampling::all_samplers()) {
        list.push_back({{"name", ggdiff::sampling::sampler_cli_name(kind)},
                        {"a1111", ggdiff::sampling::sampler_a1111_name(kind)},
                        {"aliases", ggdiff::sampling::sampler_aliases(kind)}});
    }
    return out_json(list, out);
}

int ggdiff_list_schedulers(char** out) {
    if (!out) return fail("ggdiff_list_schedulers: null argument");
    nlohmann::json list = nlohmann::json::array();
    for (const auto& name : ggdiff::sampling::schedule_names()) {
        auto kind = ggdiff::sampling::parse_schedule(name);
        if (!kind.ok()) continue;
        list.push_back({{"name", name},
                        {"a1111", ggdiff::sampling::schedule_a1111_name(*kind)},
                        {"aliases", ggdiff::sampling::schedule_aliases(*kind)}});
    }
    return out_json(list, out);
}

const char* ggdiff_sampler_name(const char* any_name) {
    if (!any_name) {
        fail("ggdiff_sampler_name: null argument");
        return nullptr;
    }
    auto kind = ggdiff::sampling::parse_sampler(any_name);
    if (!kind.ok()) {
        fail(kind.status());
        return nullptr;
    }
    return stable(ggdiff::sampling::sampler_cli_name(*kind));
}

const char* ggdiff_scheduler_name(const char* any_name) {
    if (!any_name) {
        fail("ggdiff_scheduler_name: null argument");
        return nullptr;
    }
    auto kind = ggdiff::sampling::parse_schedule(any_name);
    if (!kind.ok()) {
        fail(kind.status());
        return nullptr;
    }
    return stable(ggdiff::sampling::schedule_name(*kind));
}

int ggdiff_parameters_to_json(const char* parameters, char** out) {
    if (!parameters || !out) return fail("ggdiff_parameters_to_json: null argument");
    try {
        auto info = ggdiff::parse_infotext(parameters);
        if (!info.ok()) return fail(info.status());
        return out_json(ggdiff::infotext_to_json(*info), out);
    } catch (const std::exception& e) {
        return fail(std::string("reading parameters failed: ") + e.what());
    }
}

}  // extern "C"
