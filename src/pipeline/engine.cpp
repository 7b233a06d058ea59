#include "pipeline/engine.h"

#include <filesystem>

#include "devices/devices.h"
#include "io/model_info.h"
#include "pipeline/family_registry.h"
#include "pipeline/model_files.h"
#include "pipeline/placement_setup.h"

namespace ggdiff {

Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::load(const ModelOptions& options) {
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
    const std::string main_file = !options.model.empty()             ? options.model
                                  : !options.diffusion_model.empty() ? options.diffusion_model
                                                                     : default_model_path();
    engine->model_name_ = std::filesystem::path(main_file).stem().string();

    auto lora_mode = parse_lora_apply_mode(options.lora_apply_mode);
    if (!lora_mode.ok()) return lora_mode.status();
    auto placement = resolve_placement(options, engine->index_, wtype);
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
