#include "pipeline/engine.h"

#include <filesystem>

#include "core/log.h"
#include "devices/devices.h"
#include "families/registry.h"
#include "pipeline/lora_tags.h"
#include "pipeline/model_files.h"
#include "pipeline/placement_setup.h"
#include "pipeline/upscale.h"
#include "placement/spec_text.h"
#include "runtime/graph_runner.h"

namespace ggdiff {

Engine::~Engine() = default;

namespace {

std::string main_file_of(const ModelOptions& options) {
    return !options.model.empty()             ? options.model
           : !options.diffusion_model.empty() ? options.diffusion_model
                                              : default_model_path();
}

// The devices a module computes on or keeps its weights on; the default device is the CPU.
std::vector<std::string> module_device_names(const ModuleDevices& m) {
    std::vector<std::string> out = m.devices;
    if (m.params == ModuleDevices::Params::Device) out.push_back(m.params_device);
    return out;
}

// Builds the recipe's family and names it from the registry: the recipe's display name and
// the variant its load found ("FLUX.1 dev", "SD1 inpainting").
Result<Family> load_family(const FamilyRecipe& recipe, const FamilyContext& ctx) {
    auto family = recipe.load(ctx);
    if (!family.ok()) return family.status();
    family->name = recipe.display;
    if (!family->variant.empty()) family->name += " " + family->variant;
    return family;
}

// Model options only some families honour: refused (--circular*) or warned about
// (--embd-dir) before any weight is read.
Status check_family_options(const FamilyRecipe& recipe, const ModelOptions& o) {
    if ((o.circular_x() || o.circular_y()) && !recipe.circular) {
        const char* flag = o.circular ? "--circular" : o.circularx ? "--circularx" : "--circulary";
        return Status::Error(std::string(flag) + " is not supported yet for " + recipe.display +
                             " (seamless tiling works with SD1, SD2, SDXL, SD3, FLUX.1, FLUX.2, "
                             "Chroma, Z-Image and Qwen Image)");
    }
    if (!o.high_noise_diffusion_model.empty() && !recipe.high_noise_expert) {
        return Status::Error(std::string("--high-noise-diffusion-model: ") + recipe.display +
                             " has no high-noise expert (Wan 2.2 A14B has)");
    }
    if (!o.uncond_diffusion_model.empty() && !recipe.uncond_model) {
        return Status::Error(std::string("--uncond-diffusion-model: ") + recipe.display +
                             " has no unconditional DiT (Ideogram 4 has)");
    }
    if (!o.embd_dir.empty() && !recipe.text_embeddings) {
        GGDIFF_LOG_WARN(
            "--embd-dir has no effect on %s: textual-inversion embeddings are for the CLIP "
            "text encoders of SD1, SD2 and SDXL",
            recipe.display);
    }
    return Status::Ok();
}

// The placement a recipe loads with: the diffusion model's blocks are the recipe's.
EnginePlacement with_family_blocks(EnginePlacement p, const FamilyRecipe& recipe) {
    p.diffusion.block_segments = recipe.block_segments;
    return p;
}

bool is_cpu_device(const std::string& name) {
    ggml_backend_dev_t dev = find_device(name);
    return dev && ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU;
}

}  // namespace

void Engine::share_devices(const std::vector<EnginePlacement>& placements, bool control) {
    // Which replicas use each non-CPU device. The CPU is safe to share: every replica has
    // its own CPU backend instance. Other devices may not be: ggml promises nothing for two
    // backends driving one device at once (two RPC backends of one endpoint share its
    // connection), so the replicas take turns on them.
    std::map<std::string, std::vector<size_t>> users;
    auto modules = [control](const EnginePlacement& p) {
        std::vector<const ModuleDevices*> m = {&p.te, &p.diffusion, &p.vae, &p.photomaker};
        if (control) m.push_back(&p.control);
        return m;
    };
    for (size_t k = 0; k < placements.size(); ++k) {
        for (const ModuleDevices* m : modules(placements[k])) {
            for (const std::string& d : module_device_names(*m)) {
                if (is_cpu_device(d)) continue;
                std::vector<size_t>& u = users[d];
                if (u.empty() || u.back() != k) u.push_back(k);
            }
        }
    }
    for (const auto& [device, replicas] : users) {
        if (replicas.size() < 2) continue;
        device_locks_[device] = std::make_unique<std::mutex>();
        GGDIFF_LOG_INFO(
            "data parallel: %s serves %zu replicas; their phases on it take turns (give each "
            "replica its own device with '|' to run them at once)",
            device.c_str(), replicas.size());
    }
    // Each replica's locks per phase, in the map's (name) order: one order for every thread.
    auto locks_of = [this](const std::vector<const ModuleDevices*>& mods) {
        std::vector<std::mutex*> out;
        for (const auto& [device, mutex] : device_locks_) {
            bool used = false;
            for (const ModuleDevices* m : mods) {
                for (const std::string& d : module_device_names(*m)) used = used || d == device;
            }
            if (used) out.push_back(mutex.get());
        }
        return out;
    };
    for (size_t k = 0; k < placements.size(); ++k) {
        const EnginePlacement& p = placements[k];
        Replica& r = *replicas_[k];
        r.prepare_locks = locks_of(modules(p));
        std::vector<const ModuleDevices*> sampling = {&p.diffusion};
        if (control) sampling.push_back(&p.control);
        r.sampling_locks = locks_of(sampling);
        r.decode_locks = locks_of({&p.vae});
    }
}

Result<std::map<std::string, uint64_t>> Engine::measure_compute(const ModelOptions& options,
                                                                const TensorIndex& index,
                                                                GenerateOptions request) {
    auto runnable = runnable_family(index);
    if (!runnable.ok()) return runnable.status();
    const FamilyRecipe* recipe = *runnable;
    ComputeProbe probe;
    EnginePlacement cpu;  // graphs as built for one device; nothing is loaded
    cpu.te.module = placement::module_name(placement::Module::TextEncoder);
    cpu.diffusion.module = placement::module_name(placement::Module::Diffusion);
    cpu.vae.module = placement::module_name(placement::Module::Vae);
    cpu.photomaker.module = placement::module_name(placement::Module::PhotoMaker);
    cpu.control.module = placement::module_name(placement::Module::ControlNet);
    const EnginePlacement where = with_family_blocks(cpu, *recipe);
    const FamilyContext ctx{options,
                            index,
                            where,
                            options.weight_type,
                            options.threads > 0 ? options.threads : default_threads(),
                            main_file_of(options),
                            recipe};
    auto family = load_family(*recipe, ctx);
    if (!family.ok()) return family.status();
    std::unique_ptr<Engine> probe_engine(new Engine());
    auto replica = std::make_unique<Replica>();
    replica->family = std::move(*family);
    replica->lora = std::make_unique<LoraManager>("", LoraApplyMode::Auto, ctx.threads);
    probe_engine->replicas_.push_back(std::move(replica));
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

    // Files of no family, or of one ggdiff recognises but cannot run yet, stop here.
    auto runnable = runnable_family(*index);
    if (!runnable.ok()) return runnable.status();
    const FamilyRecipe* recipe = *runnable;
    // A part file no part reads would be silently unused: say so before loading.
    GGDIFF_TRY(check_part_files(*recipe, options));
    GGDIFF_TRY(check_family_options(*recipe, options));

    std::unique_ptr<Engine> engine(new Engine());
    engine->index_ = std::move(*index);
    engine->family_id_ = recipe->id;
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
                "could not measure the compute buffers (%s); using the standard reserves",
                m.status().message().c_str());
        }
    }
    auto placements =
        resolve_placement(options, engine->index_, wtype, measured ? &*measured : nullptr);
    if (!placements.ok()) return placements.status();
    engine->auto_fit_ = placements->front().auto_fit;
    engine->hires_upscalers_dir_ = options.hires_upscalers_dir;
    const size_t n = placements->size();
    const int threads = options.threads > 0 ? options.threads : default_threads();
    if (n > 1) {
        std::vector<std::string> names;
        for (const EnginePlacement& p : *placements) names.push_back(p.replica);
        GGDIFF_LOG_INFO(
            "data parallel: %zu replicas (%s), each with its own copy of the weights on its "
            "devices (the checkpoint is mapped once)",
            n, placement::join(names, ", ").c_str());
        bool cpu_replica = false;
        for (const EnginePlacement& p : *placements) {
            for (const std::string& d : p.replica_devices)
                cpu_replica = cpu_replica || is_cpu_device(d);
        }
        if (cpu_replica) {
            GGDIFF_LOG_INFO(
                "data parallel: the CPU is one of the replicas; its compute threads (-t %d) "
                "contend for cores with the host work that drives the other replicas",
                threads);
        }
    }
    for (size_t k = 0; k < n; ++k) {
        const EnginePlacement where = with_family_blocks((*placements)[k], *recipe);
        const std::string context = "data parallel replica on " + where.replica;
        if (n > 1) {
            GGDIFF_LOG_INFO("data parallel: loading replica %zu of %zu (%s)", k + 1, n,
                            where.replica.c_str());
        }
        // The replica's runners take their own backend instances (see graph_runner.h).
        BackendInstanceScope instance(static_cast<int>(k));
        const FamilyContext ctx{options, engine->index_, where, wtype, threads, main_file, recipe};
        auto family = load_family(*recipe, ctx);
        if (!family.ok()) return n > 1 ? family.status().with_context(context) : family.status();
        if (!options.control_net.empty() && !family->takes_control) {
            return Status::Error("--control-net: " + std::string(recipe->display) +
                                 " models do not take a ControlNet here");
        }
        if (!options.photo_maker.empty() && !family->id_conditions) {
            return Status::Error(
                "--photo-maker: PhotoMaker works with SDXL models only; this is "
                "a " +
                std::string(recipe->display) + " model");
        }
        family->circular_x = options.circular_x();
        family->circular_y = options.circular_y();
        auto replica = std::make_unique<Replica>();
        replica->name = where.replica;
        replica->family = std::move(*family);
        replica->lora = std::make_unique<LoraManager>(options.lora_model_dir, *lora_mode, threads);
        engine->replicas_.push_back(std::move(replica));
    }
    if (n > 1) engine->share_devices(*placements, !options.control_net.empty());
    engine->options_ = options;
    engine->upscaler_where_ = placements->front().upscaler;
    if (!options.upscale_model.empty()) {
        auto up = load_upscaler(options, placements->front().upscaler);
        if (!up.ok()) return up.status();
        engine->upscaler_ = std::move(*up);
    }
    return engine;
}

Result<std::function<Result<HostTensor>(const HostTensor&)>> Engine::hires_upscaler(
    const std::string& path, int tile) {
    if (!hires_upscaler_ || hires_upscaler_path_ != path) {
        hires_upscaler_.reset();
        GGDIFF_LOG_INFO("hires fix: loading the upscaler model %s", path.c_str());
        auto u = load_upscaler(options_, upscaler_where_, path);
        if (!u.ok()) return u.status();
        hires_upscaler_ = std::move(*u);
        hires_upscaler_path_ = path;
    }
    models::EsrganUpscaler* u = hires_upscaler_.get();
    std::mutex* m = &hires_upscaler_mutex_;
    return std::function<Result<HostTensor>(const HostTensor&)>(
        [u, m, tile](const HostTensor& rgb) -> Result<HostTensor> {
            std::lock_guard<std::mutex> lock(*m);  // data-parallel replicas take turns
            auto out = u->upscale(rgb, tile);
            u->end_phase();
            return out;
        });
}

Result<std::shared_ptr<LatentUpscaler>> Engine::latent_upscaler(const std::string& path) const {
    std::lock_guard<std::mutex> lock(latent_upscaler_mutex_);
    if (!latent_upscaler_ || latent_upscaler_path_ != path) {
        latent_upscaler_.reset();
        const Family& f = replicas_.front()->family;
        if (!f.latent_upscaler) {
            return Status::Error(f.name + " takes no latent upscaler models");
        }
        auto u = f.latent_upscaler(path);
        if (!u.ok()) return u.status();
        latent_upscaler_ = std::move(*u);
        latent_upscaler_path_ = path;
    }
    return latent_upscaler_;
}

}  // namespace ggdiff
