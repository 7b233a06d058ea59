#include "placement/row_split.h"

#include "core/log.h"
#include "placement/spec_text.h"
#include "placement/units.h"

namespace ggdiff::placement {

bool is_row_split_candidate(const TensorRecord& t) {
    if (t.block < 0 || !t.contiguous) return false;
    if (!t.op.empty() && t.op != "MUL_MAT") return false;
    size_t dims = t.ne.size();
    while (dims > 0 && t.ne[dims - 1] == 1) --dims;  // trailing 1s do not count
    return dims == 2 && t.ne[0] >= 256 && t.ne[1] >= 256;
}

RowSplitPlan plan_row_split(const std::string& module, const std::vector<TensorRecord>& tensors,
                            const std::vector<DeviceInfo>& devices) {
    RowSplitPlan plan;
    plan.module = module;
    for (const DeviceInfo& d : devices) plan.devices.push_back(d.name);
    if (devices.empty()) {
        plan.fallback = RowSplitFallback::NoSplitBufferType;
        plan.reason = "no devices";
        return plan;
    }
    for (const DeviceInfo& d : devices) {
        if (!d.has_split_buffer) {
            plan.fallback = RowSplitFallback::NoSplitBufferType;
            plan.reason = "the backend of " + quoted(d.name) +
                          (d.registry.empty() ? std::string() : " (" + d.registry + ")") +
                          " has no split buffer type";
            return plan;
        }
    }
    for (const DeviceInfo& d : devices) {
        if (d.registry != devices[0].registry) {
            plan.fallback = RowSplitFallback::MixedRegistries;
            plan.reason = "devices " + quoted(devices[0].name) + " (" + devices[0].registry +
                          ") and " + quoted(d.name) + " (" + d.registry +
                          ") belong to different registries";
            return plan;
        }
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
        if (is_row_split_candidate(tensors[i])) {
            plan.split_tensors.push_back(i);
            plan.split_bytes += tensors[i].bytes;
        } else {
            plan.main_bytes += tensors[i].bytes;
        }
    }
    if (plan.split_tensors.empty()) {
        plan.fallback = RowSplitFallback::NoQualifyingWeight;
        plan.reason =
            "no weight qualifies (block matmul weights, 2-D, contiguous, both dimensions >= 256)";
        plan.main_bytes = 0;
        return plan;
    }
    plan.row_split = true;
    plan.proportions = split_proportions(devices);
    return plan;
}

std::string row_split_log_line(const RowSplitPlan& plan) {
    if (!plan.row_split)
        return plan.module + " row split is not possible: " + plan.reason +
               "; falling back to layer split";
    std::vector<std::string> parts;
    for (size_t i = 0; i < plan.devices.size(); ++i)
        parts.push_back(string_format("%s %.2f", plan.devices[i].c_str(), plan.proportions[i]));
    return string_format("%s row split: %zu weights (%s) over %s; main device %s",
                         plan.module.c_str(), plan.split_tensors.size(),
                         format_gib(plan.split_bytes).c_str(), join(parts, ", ").c_str(),
                         plan.devices[0].c_str());
}

}  // namespace ggdiff::placement
