#include "placement/auto_fit.h"

#include <algorithm>

#include "core/log.h"
#include "placement/units.h"

namespace ggdiff::placement {
namespace {

FitComponent make_component(const ComponentSize& c) {
    FitComponent f;
    f.module = c.module;
    f.params_bytes = c.params_bytes;
    f.reserve_bytes = c.reserve_bytes;
    f.splittable = c.splittable;
    f.measured_bytes = c.measured_bytes;
    f.default_reserve_bytes = c.default_reserve_bytes ? c.default_reserve_bytes : c.reserve_bytes;
    return f;
}

// Resident: every component stays loaded. False when one does not fit anywhere.
bool plan_resident(const std::vector<ComponentSize>& order, std::vector<FitDevice>& devices,
                   std::vector<FitComponent>& out) {
    std::vector<uint64_t> params(devices.size(), 0), reserve(devices.size(), 0);
    for (const ComponentSize& c : order) {
        size_t best = devices.size();
        for (size_t d = 0; d < devices.size(); ++d) {
            const uint64_t need =
                params[d] + c.params_bytes + std::max(reserve[d], c.reserve_bytes);
            if (need > devices[d].budget_bytes) continue;
            if (best == devices.size() ||
                devices[d].budget_bytes - params[d] > devices[best].budget_bytes - params[best])
                best = d;
        }
        if (best == devices.size()) return false;
        params[best] += c.params_bytes;
        reserve[best] = std::max(reserve[best], c.reserve_bytes);
        FitComponent f = make_component(c);
        f.targets = {devices[best].name};
        out.push_back(f);
    }
    for (size_t d = 0; d < devices.size(); ++d) devices[d].planned_bytes = params[d] + reserve[d];
    return true;
}

// Time-share: one component's params at a time.
FitComponent place_time_shared(const ComponentSize& c, const std::vector<FitDevice>& devices,
                               const SplitModeSpec& split_mode, const std::string& cpu_name) {
    FitComponent f = make_component(c);
    size_t best = devices.size();
    for (size_t d = 0; d < devices.size(); ++d) {
        if (c.params_bytes + c.reserve_bytes > devices[d].budget_bytes) continue;
        if (best == devices.size() || devices[d].budget_bytes > devices[best].budget_bytes)
            best = d;
    }
    if (best < devices.size()) {
        f.targets = {devices[best].name};
        f.disk_params = true;
        return f;
    }
    if (c.splittable) {
        std::vector<size_t> part;
        uint64_t room = 0;
        for (size_t d = 0; d < devices.size(); ++d) {
            if (devices[d].budget_bytes <= c.reserve_bytes) continue;
            part.push_back(d);
            room += devices[d].budget_bytes - c.reserve_bytes;
        }
        if (part.size() > 1 && c.params_bytes <= room) {
            std::stable_sort(part.begin(), part.end(), [&](size_t a, size_t b) {
                return devices[a].budget_bytes > devices[b].budget_bytes;
            });
            for (size_t d : part) f.targets.push_back(devices[d].name);
            f.split = true;
            f.split_mode = split_mode.get(c.module).value_or(SplitMode::Layer);
            f.disk_params = true;
            return f;
        }
    }
    f.targets = {cpu_name};
    f.on_cpu = true;
    return f;
}

}  // namespace

std::vector<ComponentSize> standard_components(uint64_t diffusion_bytes, uint64_t te_bytes,
                                               uint64_t vae_bytes) {
    std::vector<ComponentSize> out;
    if (diffusion_bytes) out.push_back({Module::Diffusion, diffusion_bytes, 2 * kGiB, true});
    if (te_bytes) out.push_back({Module::TextEncoder, te_bytes, 2 * kGiB, true});
    if (vae_bytes) out.push_back({Module::Vae, vae_bytes, 1 * kGiB, false});
    return out;
}

void apply_measured_reserves(std::vector<ComponentSize>& components,
                             const std::map<Module, uint64_t>& measured) {
    for (ComponentSize& c : components) {
        auto it = measured.find(c.module);
        if (it == measured.end() || it->second == 0) continue;
        c.default_reserve_bytes = c.reserve_bytes;
        c.measured_bytes = it->second;
        c.reserve_bytes = it->second + compute_margin(it->second);
    }
}

const char* fit_mode_name(FitMode m) {
    switch (m) {
        case FitMode::Resident:
            return "resident";
        case FitMode::TimeShare:
            return "time-share";
        case FitMode::DefaultDevice:
            return "default-device";
    }
    return "?";
}

AutoFitPlan plan_auto_fit(const AutoFitInput& input) {
    AutoFitPlan plan;
    std::string cpu_name = "CPU";
    for (const DeviceInfo& d : input.devices) {
        if (d.type == DeviceType::Cpu) {
            cpu_name = d.name;
            break;
        }
    }
    for (const DeviceInfo& d : input.devices) {
        if (!is_gpu_type(d.type)) continue;
        plan.devices.push_back({d.name, d.free_bytes, device_budget(d, input.max_vram), 0});
    }

    std::vector<ComponentSize> order;
    for (const ComponentSize& c : input.components) {
        if (c.params_bytes > 0) order.push_back(c);
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const ComponentSize& a, const ComponentSize& b) {
                         return a.params_bytes > b.params_bytes;
                     });

    if (plan.devices.empty()) {
        plan.mode = FitMode::DefaultDevice;
        for (const ComponentSize& c : order) plan.components.push_back(make_component(c));
        plan.warnings.push_back("auto-fit: no GPU devices; using the default device");
        return plan;
    }

    if (plan_resident(order, plan.devices, plan.components)) {
        plan.mode = FitMode::Resident;
    } else {
        plan.mode = FitMode::TimeShare;
        plan.components.clear();
        for (const ComponentSize& c : order) {
            plan.components.push_back(
                place_time_shared(c, plan.devices, input.split_mode, cpu_name));
            const FitComponent& f = plan.components.back();
            if (f.on_cpu)
                plan.warnings.push_back(
                    string_format("auto-fit: %s (%s + %s compute) fits on no GPU; running it on %s",
                                  module_name(f.module), format_gib(f.params_bytes).c_str(),
                                  format_gib(f.reserve_bytes).c_str(), cpu_name.c_str()));
        }
    }

    for (const FitComponent& f : plan.components) {
        plan.spec.backend.modules[f.module] = f.targets;
        if (f.disk_params) plan.spec.params.modules[f.module] = ParamsLocation::disk();
        if (f.split && f.split_mode == SplitMode::Row)
            plan.spec.split_mode.modules[f.module] = SplitMode::Row;
    }
    return plan;
}

}  // namespace ggdiff::placement
