#include "placement/auto_fit_report.h"

#include <algorithm>

#include "placement/json_writer.h"
#include "placement/spec_text.h"
#include "placement/units.h"

namespace ggdiff::placement {
namespace {

// Rows of cells with column widths; numeric columns (right[i]) are right-aligned.
std::string format_table(const std::vector<std::vector<std::string>>& rows,
                         const std::vector<bool>& right, const std::string& indent) {
    std::vector<size_t> width;
    for (const auto& row : rows) {
        if (width.size() < row.size()) width.resize(row.size(), 0);
        for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
    }
    std::string out;
    for (const auto& row : rows) {
        std::string line = indent;
        for (size_t c = 0; c < row.size(); ++c) {
            const std::string pad(width[c] - row[c].size(), ' ');
            const bool last = c + 1 == row.size();
            if (c) line += "  ";
            if (c < right.size() && right[c]) {
                line += pad + row[c];
            } else {
                line += row[c];
                if (!last) line += pad;
            }
        }
        out += line + "\n";
    }
    return out;
}

std::string target_text(const FitComponent& c) {
    if (c.targets.empty()) return "default device";
    std::string t = join(c.targets, "&");
    if (c.split) t += std::string(" (") + split_mode_name(c.split_mode) + " split)";
    if (c.on_cpu) t += " (fits on no GPU)";
    if (c.disk_params) t += ", params from disk";
    return t;
}

}  // namespace

std::string plan_args(const AutoFitPlan& plan) {
    return to_string(plan.spec);
}

std::string plan_to_json(const AutoFitPlan& plan) {
    JsonWriter w;
    w.begin_object();
    w.key("mode").value(fit_mode_name(plan.mode));
    w.key("time_share").value(plan.time_share());
    w.key("devices").begin_array();
    for (const FitDevice& d : plan.devices) {
        w.begin_object();
        w.key("name").value(d.name);
        w.key("free_bytes").value(d.free_bytes);
        w.key("budget_bytes").value(d.budget_bytes);
        w.end_object();
    }
    w.end_array();
    w.key("components").begin_array();
    for (const FitComponent& c : plan.components) {
        w.begin_object();
        w.key("module").value(module_name(c.module));
        w.key("params_bytes").value(c.params_bytes);
        w.key("reserve_bytes").value(c.reserve_bytes);
        w.key("compute_measured_bytes");
        if (c.measured_bytes) {
            w.value(c.measured_bytes);
        } else {
            w.null();
        }
        w.key("default_reserve_bytes").value(c.default_reserve_bytes);
        w.key("splittable").value(c.splittable);
        w.key("targets").begin_array();
        for (const std::string& t : c.targets) w.value(t);
        w.end_array();
        w.key("split").value(c.split);
        w.key("split_mode");
        if (c.split) {
            w.value(split_mode_name(c.split_mode));
        } else {
            w.null();
        }
        w.key("on_cpu").value(c.on_cpu);
        w.key("params").value(c.disk_params ? "disk" : "compute");
        w.end_object();
    }
    w.end_array();
    w.key("backend").value(plan.backend());
    w.key("params_backend").value(plan.params_backend());
    w.key("split_mode").value(plan.split_mode());
    w.key("args").value(plan_args(plan));
    w.key("warnings").begin_array();
    for (const std::string& s : plan.warnings) w.value(s);
    w.end_array();
    w.end_object();
    return w.str();
}

std::string plan_to_table(const AutoFitPlan& plan) {
    std::string out;
    switch (plan.mode) {
        case FitMode::Resident:
            out += "auto-fit: resident plan (every component stays loaded)\n";
            break;
        case FitMode::TimeShare:
            out +=
                "auto-fit: time-share plan (components load for their phase and are freed after)\n";
            break;
        case FitMode::DefaultDevice:
            out += "auto-fit: no GPU devices; using the default device\n";
            break;
    }
    if (!plan.devices.empty()) {
        std::vector<std::vector<std::string>> rows = {{"device", "free", "budget"}};
        for (const FitDevice& d : plan.devices)
            rows.push_back({d.name, format_gib(d.free_bytes), format_gib(d.budget_bytes)});
        out += format_table(rows, {false, true, true}, "  ");
    }
    std::vector<std::vector<std::string>> rows = {
        {"component", "params", "compute", "reserve", "target"}};
    bool measured = false;
    for (const FitComponent& c : plan.components) {
        rows.push_back({module_name(c.module), format_gib(c.params_bytes),
                        c.measured_bytes ? format_size(c.measured_bytes) : "-",
                        format_size(c.reserve_bytes), target_text(c)});
        measured = measured || c.measured_bytes > 0;
    }
    out += format_table(rows, {false, true, true, true, false}, "  ");
    out += measured ? "  compute: measured at the requested size; reserve: compute + margin "
                      "(standard reserves where not measured)\n"
                    : "  reserve: the standard compute reserves (nothing measured)\n";
    const std::string args = plan_args(plan);
    if (!args.empty()) out += "  derived: " + args + "\n";
    return out;
}

}  // namespace ggdiff::placement
