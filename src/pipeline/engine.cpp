#include "pipeline/engine.h"

#include <filesystem>

#include "core/log.h"
#include "devices/devices.h"
#include "io/model_info.h"
#include "pipeline/family_registry.h"
#include "pipeline/lora_tags.h"
#include "pipeline/model_files.h"
#include "pipeline/placement_setup.h"

namespace ggdiff {

Engine::~Engine() = default;

namespace {

std::string main_file_of(const ModelOptions& options) {
    return !options.model.empty()             ? options.model
           : !options.diffusion_model.empty() ? options.diffusion_model
                                              : default_model_path();
}

}  // namespace

Result<std::map<std::string, uint64_t>> Engine::measure_compute(const ModelOptions& options,
                                                                const TensorIndex& index,
                                                                GenerateOptions request) {
    const FamilyRecipe* recipe = find_family(index);
    if (!recipe) return Status::Error("no model family to measure");
    ComputeProbe probe;
    EnginePlacement cpu;  // graphs as built for one device; nothing is loaded
    cpu.te.module = placement::module_name(placement::Module::TextEncoder);
    cpu.diffusion.module = placement::module_name(placement::Module::Diffusion);
    cpu.vae.module = placement::module_name(placement::Module::Vae);
    cpu.control.module = placement::module_name(placement::Module::ControlNet);
    const FamilyContext ctx{options,
                            index,
                            cpu,
                            options.weight_type,
                            options.threads > 0 ? options.threads : default_threads(),
                            main_file_of(options)};
    auto family = recipe->load(ctx);
    if (!family.ok()) return family.status();
    std::unique_ptr<Engine> probe_engine(new Engine());
    probe_engine->family_ = std::move(*family);
    probe_engine->lora_ = std::make_unique<LoraManager>("", LoraApplyMode::Auto, ctx.threads);
    std::vector<LoraRequest> tags;
    auto prompt = extract_lora_tags(request.prompt, &tags);
    if (prompt.ok()) request.prompt = *prompt;
    request.steps = 1;
    request.batch = 1;
    auto images = probe_engine->generate(request, nullptr);
    if (!images.ok()) return images.status();
    return probe.bytes();
}

Result<std::unique_ptr<Engine>> Engine::load(const ModelOptions& options,
                                             const GenerateOptions* request) {
    // Placement flags are checked before any file is opened.
    auto spec = validate_placement(options);
    if (!spec.ok()) return spec.status();
    const int wtype = options.weight_type;
    auto index = open_model_files(options);
    if (!index.ok()) return index.status();
    if (!options.control_net.empty() && !index->has("control_model.input_hint_block.0.weight")) {
        return Status::Error("--control-net " + options.control_net +
                             ": no ControlNet found in it (no input_hint_block / "
                             "controlnet_cond_embedding weights)");
    }

    const FamilyRecipe* recipe = find_family(*index);
    if (!recipe) {
        const std::string family = detect_family(*index);
        if (family == "unknown") {
            return Status::Error(
                "cannot tell which model family these files hold (no known diffusion model, "
                "text encoder and VAE found); ggdiff -M info lists what is in them");
        }
        return Status::Error(family + " models are not supported yet");
    }
    // A part file no part reads would be silently unused: say so before loading.
    GGDIFF_TRY(check_part_files(*recipe, options));

    std::unique_ptr<Engine> engine(new Engine());
    engine->index_ = std::move(*index);
    const std::string main_file = main_file_of(options);
    engine->model_name_ = std::filesystem::path(main_file).stem().string();

    auto lora_mode = parse_lora_apply_mode(options.lora_apply_mode);
    if (!lora_mode.ok()) return lora_mode.status();
    // With --auto-fit or a layer split, the compute buffers at the requested size decide the
    // headroom (instead of the standard reserves).
    std::optional<ComputeFigures> measured;
    if (request && placement_uses_headroom(options)) {
        auto m = measure_compute(options, engine->index_, *request);
        if (m.ok()) {
            measured = std::move(*m);
            const std::string size =
                request->width > 0 && request->height > 0
                    ? std::to_string(request->width) + "x" + std::to_string(request->height)
                    : "the model's default size";
            for (const auto& [module, bytes] : *measured) {
                GGDIFF_LOG_INFO("%s: compute buffer %.1f MiB at %s (measured)", module.c_str(),
                                bytes / 1048576.0, size.c_str());
            }
        } else {
            GGDIFF_LOG_WARN(
                "could not measure the compute buffers (%s); using the standard "
                "reserves",
                m.status().message().c_str());
        }
    }
    auto placement =
        resolve_placement(options, engine->index_, wtype, measured ? &*measured : nullptr);
    if (!placement.ok()) return placement.status();
    engine->auto_fit_ = placement->auto_fit;
    const FamilyContext ctx{options,
                            engine->index_,
                            *placement,
                            wtype,
                            options.threads > 0 ? options.threads : default_threads(),
                            main_file};
    auto family = recipe->load(ctx);
    if (!family.ok()) return family.status();
    if (!options.control_net.empty() && !family->takes_control) {
        return Status::Error("--control-net: " + std::string(recipe->display) +
                             " models do not take a ControlNet here");
    }
    engine->family_ = std::move(*family);
    engine->lora_ = std::make_unique<LoraManager>(options.lora_model_dir, *lora_mode, ctx.threads);
    return engine;
}

}  // namespace ggdiff
