// A per-module setting as the flags write it: "VALUE" or "all=VALUE,module=VALUE,...".
// An explicit module entry wins over all=. Shared by --backend, --params-backend and
// --split-mode.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "placement/module.h"
#include "placement/spec_text.h"

namespace ggdiff::placement {

template <class V>
struct ModuleMap {
    std::optional<V> all;  // all= (or the bare form)
    std::map<Module, V> modules;

    // The module's entry, else all=, else nullopt (not given).
    std::optional<V> get(Module m) const {
        auto it = modules.find(m);
        if (it != modules.end()) return it->second;
        return all;
    }
    bool empty() const { return !all && modules.empty(); }
    bool operator==(const ModuleMap& o) const { return all == o.all && modules == o.modules; }
    bool operator!=(const ModuleMap& o) const { return !(*this == o); }
};

// Parses `spec` with `parse_value(const std::string&) -> Result<V>` for each value.
// Keys: "all" or a module name (folded, see module.h); a key given twice is an error.
template <class V, class ParseValue>
Result<ModuleMap<V>> parse_module_map(const std::string& spec, ParseValue parse_value) {
    auto entries = split_spec(spec);
    if (!entries) return entries.status();
    ModuleMap<V> out;
    for (const SpecEntry& e : *entries) {
        if (e.key.empty() || fold_name(e.key) == "all") {
            if (out.all) return Status::Error(quoted("all") + " given twice");
            Result<V> value = parse_value(e.value);
            if (!value) return value.status();
            out.all = std::move(value).value();
            continue;
        }
        Result<Module> m = parse_module(e.key);
        if (!m) return m.status();
        if (out.modules.count(*m))
            return Status::Error("module " + quoted(e.key) + " given twice (as " + module_name(*m) +
                                 ")");
        Result<V> value = parse_value(e.value);
        if (!value) return value.status();
        out.modules.emplace(*m, std::move(value).value());
    }
    return out;
}

// Canonical text: the bare value when only all= is set, else "all=V,diffusion=V,..." in
// module order. Empty for an empty map.
template <class V, class FormatValue>
std::string module_map_to_string(const ModuleMap<V>& map, FormatValue format_value) {
    if (map.all && map.modules.empty()) return format_value(*map.all);
    std::vector<std::string> parts;
    if (map.all) parts.push_back("all=" + format_value(*map.all));
    for (Module m : all_modules()) {
        auto it = map.modules.find(m);
        if (it != map.modules.end())
            parts.push_back(std::string(module_name(m)) + "=" + format_value(it->second));
    }
    return join(parts, ",");
}

}  // namespace ggdiff::placement
