#include "pipeline/placement_setup.h"

#include "core/log.h"
#include "devices/devices.h"
#include "io/name_util.h"
#include "io/weight_type.h"
#include "placement/auto_fit_report.h"
#include "placement/data_parallel.h"
#include "placement/max_vram.h"

namespace ggdiff {
namespace {

std::optional<std::string> given(const std::string& s) {
    return s.empty() ? std::nullopt : std::optional<std::string>(s);
}

// The --clip-on-cpu / --vae-on-cpu / --control-net-cpu shorthands as --backend entries.
std::string backend_with_shorthands(const ModelOptions& o) {
    std::string spec = o.backend;
    auto add = [&](const char* entry) { spec += (spec.empty() ? "" : ",") + std::string(entry); };
    if (o.clip_on_cpu) add("te=CPU");
    if (o.vae_on_cpu) add("vae=CPU");
    if (o.control_net_cpu) add("controlnet=CPU");
    // A bare device name means all=DEVICE; keep it valid next to the added entries.
    if ((o.clip_on_cpu || o.vae_on_cpu || o.control_net_cpu) && !o.backend.empty() &&
        o.backend.find('=') == std::string::npos) {
        spec = "all=" + spec;
    }
    return spec;
}

uint64_t converted_bytes(const TensorInfo& t, int weight_type) {
    if (weight_type < 0 || t.shape.size() < 2) return t.nbytes;
    const int type = choose_weight_type(t, weight_type);
    const std::vector<int64_t> ne = t.ne();
    const int64_t rows = t.numel() / std::max<int64_t>(1, ne[0]);
    return ggml_row_size(static_cast<ggml_type>(type), ne[0]) * static_cast<uint64_t>(rows);
}

ModuleDevices module_devices(const placement::PlacementSpec& spec, placement::Module m,
                             size_t replica, const std::vector<placement::DeviceInfo>& devices,
                             bool stream_layers) {
    const placement::ModulePlacement mp = spec.module(m, replica);
    ModuleDevices md;
    md.module = placement::module_name(m);
    md.devices = mp.devices;
    if (mp.params) {
        if (mp.params->kind == placement::ParamsLocation::Kind::Disk) {
            md.params = ModuleDevices::Params::Disk;
        } else if (mp.params->kind == placement::ParamsLocation::Kind::Device) {
            md.params = ModuleDevices::Params::Device;
            md.params_device = mp.params->device;
        }
    }
    md.row_split = mp.split_mode == placement::SplitMode::Row;
    for (const placement::DeviceInfo& d : devices) {
        if (spec.max_vram.gib_for(d.name)) {
            md.free_override[d.name] = placement::split_free_bytes(d, spec.max_vram);
        }
    }
    // Graph cutting applies to the denoiser and the text encoders on one GPU-type device
    // with a --max-vram budget (ModuleRunner leaves it off under a layer split).
    const bool cuttable = m == placement::Module::Diffusion || m == placement::Module::TextEncoder;
    if (cuttable && !md.devices.empty()) {
        for (const placement::DeviceInfo& d : devices) {
            if (d.name != md.devices.front() || !placement::is_gpu_type(d.type)) continue;
            if (spec.max_vram.gib_for(d.name)) {
                md.cut_budget = placement::device_budget(d, spec.max_vram);
                md.stream_layers = stream_layers;
            }
        }
    }
    return md;
}

std::map<placement::Module, uint64_t> by_module(const ComputeFigures& measured) {
    std::map<placement::Module, uint64_t> out;
    for (placement::Module m : {placement::Module::Diffusion, placement::Module::TextEncoder,
                                placement::Module::Vae, placement::Module::PhotoMaker}) {
        auto it = measured.find(placement::module_name(m));
        if (it != measured.end()) out[m] = it->second;
    }
    return out;
}

// LTX-2's part files keep their own names (io/tensor_index.cpp: prefix_for_role): the text
// projection of --embeddings-connectors runs with the text encoders, --audio-vae's decoder and
// vocoder with the VAE.
Component ltx_part_component(const std::string& name) {
    if (starts_with(name, "text_embedding_projection.")) return Component::TextEncoder;
    for (const char* p : {"audio_vae.", "vocoder.", "audio_vae_model."}) {
        if (starts_with(name, p)) return Component::Vae;
    }
    return Component::Other;
}

}  // namespace

ModuleDevices upscaler_module_devices(const placement::PlacementSpec& spec,
                                      const ModelOptions& options) {
    return module_devices(spec, placement::Module::Upscaler, 0, placement_devices(),
                          options.stream_layers);
}

bool placement_uses_headroom(const ModelOptions& o) {
    if (o.auto_fit) return true;
    auto spec = validate_placement(o);
    if (!spec.ok()) return false;
    for (placement::Module m : {placement::Module::Diffusion, placement::Module::TextEncoder}) {
        if (spec->module(m).devices.size() > 1) return true;
    }
    return false;
}

std::vector<placement::DeviceInfo> placement_devices() {
    std::vector<placement::DeviceInfo> out;
    for (const DeviceInfo& d : list_devices()) out.push_back(placement_info(d));
    return out;
}

Result<placement::PlacementSpec> validate_placement(const ModelOptions& o) {
    placement::PlacementArgs args;
    args.backend = given(backend_with_shorthands(o));
    args.params_backend = given(o.params_backend);
    args.split_mode = given(o.split_mode);
    args.max_vram = given(o.max_vram);
    return placement::parse_placement_spec(args, device_names());
}

Result<placement::AutoFitPlan> plan_auto_fit_for(const ModelOptions& o, const TensorIndex& index,
                                                 int weight_type, const ComputeFigures* measured) {
    auto spec = validate_placement(o);
    if (!spec.ok()) return spec.status();
    uint64_t bytes[4] = {0, 0, 0, 0};
    const std::string control_prefix = prefix_for_role("control-net");
    const std::string clip_vision_prefix = prefix_for_role("clip_vision");
    // PuLID-FLUX's modules run inside the DiT (the file's ID encoder is never loaded).
    const std::string pulid_prefix = prefix_for_role("pulid-weights") + "pulid_ca.";
    // PhotoMaker's ID encoder (CLIP vision tower, fuse module, v2's perceiver) is a component
    // of its own (the photomaker module); its UNet LoRA is merged into the diffusion weights.
    const std::string pm_prefix = prefix_for_role("photo-maker");
    uint64_t photomaker_bytes = 0;
    for (const TensorInfo& t : index.tensors()) {
        if (t.name.rfind(pm_prefix, 0) == 0) {
            if (t.name.rfind(pm_prefix + "unet.", 0) != 0)
                photomaker_bytes += converted_bytes(t, weight_type);
            continue;
        }
        Component c = component_of(t.name);
        // A ControlNet runs beside the denoiser, on its first device (resolve_placement), so
        // its weights are planned as part of the diffusion component; a CLIP vision encoder
        // runs where the text encoders run.
        if (c == Component::Other &&
            (t.name.rfind(control_prefix, 0) == 0 || t.name.rfind(pulid_prefix, 0) == 0)) {
            c = Component::Diffusion;
        } else if (c == Component::Other && t.name.rfind(clip_vision_prefix, 0) == 0) {
            c = Component::TextEncoder;
        } else if (c == Component::Other) {
            c = ltx_part_component(t.name);
        }
        bytes[static_cast<int>(c)] += converted_bytes(t, weight_type);
    }
    placement::AutoFitInput in;
    in.devices = placement_devices();
    in.components = placement::standard_components(bytes[static_cast<int>(Component::Diffusion)],
                                                   bytes[static_cast<int>(Component::TextEncoder)],
                                                   bytes[static_cast<int>(Component::Vae)]);
    if (photomaker_bytes) {
        // Not splittable; a 512 MiB reserve until its compute buffer is measured.
        in.components.push_back(
            {placement::Module::PhotoMaker, photomaker_bytes, 512ull << 20, false});
    }
    if (measured) placement::apply_measured_reserves(in.components, by_module(*measured));
    in.max_vram = spec->max_vram;
    in.split_mode = spec->split_mode;
    return placement::plan_auto_fit(in);
}

Result<std::vector<EnginePlacement>> resolve_placement(const ModelOptions& o,
                                                       const TensorIndex& index, int weight_type,
                                                       const ComputeFigures* measured) {
    auto spec = validate_placement(o);
    if (!spec.ok()) return spec.status();
    placement::PlacementSpec effective = *spec;
    bool auto_fit = false;
    if (o.auto_fit) {
        if (!o.backend.empty() || !o.params_backend.empty()) {
            GGDIFF_LOG_WARN("--auto-fit: ignoring --backend and --params-backend%s",
                            placement::replica_count(spec->backend) > 1
                                ? " (also its '|' lists: auto-fit plans one replica)"
                                : "");
        }
        auto plan = plan_auto_fit_for(o, index, weight_type, measured);
        if (!plan.ok()) return plan.status();
        // The planner's warnings already start with "auto-fit: ".
        for (const std::string& w : plan->warnings) GGDIFF_LOG_WARN("%s", w.c_str());
        GGDIFF_LOG_INFO("auto-fit plan (%s):\n%s", placement::fit_mode_name(plan->mode),
                        placement::plan_to_table(*plan).c_str());
        GGDIFF_LOG_INFO("auto-fit: %s", placement::plan_args(*plan).c_str());
        effective = plan->spec;
        effective.max_vram = spec->max_vram;
        auto_fit = true;
    }
    const std::vector<placement::DeviceInfo> devices = placement_devices();
    const size_t replicas = placement::replica_count(effective.backend);
    std::vector<EnginePlacement> out;
    for (size_t k = 0; k < replicas; ++k) {
        EnginePlacement ep;
        ep.auto_fit = auto_fit;
        ep.te =
            module_devices(effective, placement::Module::TextEncoder, k, devices, o.stream_layers);
        ep.diffusion =
            module_devices(effective, placement::Module::Diffusion, k, devices, o.stream_layers);
        ep.vae = module_devices(effective, placement::Module::Vae, k, devices, o.stream_layers);
        ep.control =
            module_devices(effective, placement::Module::ControlNet, k, devices, o.stream_layers);
        ep.upscaler =
            module_devices(effective, placement::Module::Upscaler, k, devices, o.stream_layers);
        // Small encoders beside the text encoders: on their first device unless placed.
        auto beside_te = [&](placement::Module m) {
            if (effective.backend.modules.count(m) || effective.params.modules.count(m) ||
                effective.split_mode.modules.count(m)) {
                return module_devices(effective, m, k, devices, o.stream_layers);
            }
            ModuleDevices d = ep.te.first_device_only();
            d.module = placement::module_name(m);
            d.cut_budget = 0;
            d.block_segments.clear();
            return d;
        };
        ep.clip_vision = beside_te(placement::Module::ClipVision);
        ep.photomaker = beside_te(placement::Module::PhotoMaker);
        if (measured) {
            // Layer-split shares keep the measured compute buffer (with its margin) per device.
            for (ModuleDevices* md : {&ep.te, &ep.diffusion}) {
                auto it = measured->find(md->module);
                if (it != measured->end() && it->second > 0)
                    md->split_headroom = it->second + placement::compute_margin(it->second);
            }
        }
        if (k == 0 && o.stream_layers && ep.diffusion.cut_budget == 0 && ep.te.cut_budget == 0) {
            GGDIFF_LOG_WARN(
                "--stream-layers has no effect: it streams the segments of a module cut by a "
                "--max-vram budget, and neither the diffusion model's nor the text encoder's "
                "device has one (e.g. --max-vram 4 or --max-vram RPC0=4)");
        }
        // The auto-fit plan places the three big modules; a ControlNet runs beside the
        // denoiser (its outputs feed every UNet block), unless --control-net-cpu says otherwise.
        if (ep.auto_fit && !o.control_net_cpu && ep.control.devices.empty() &&
            !ep.diffusion.devices.empty()) {
            ep.control.devices = {ep.diffusion.devices.front()};
        }
        // The upscaler runs after the VAE, where the VAE runs, unless placed itself.
        if (ep.auto_fit && ep.upscaler.devices.empty()) ep.upscaler.devices = ep.vae.devices;
        if (replicas > 1) {
            ep.replica_devices = placement::replica_devices(effective.backend, k);
            ep.replica = placement::replica_name(effective.backend, k);
        }
        out.push_back(std::move(ep));
    }
    return out;
}

}  // namespace ggdiff
