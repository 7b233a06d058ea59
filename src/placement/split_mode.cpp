#include "placement/split_mode.h"

namespace ggdiff::placement {

const char* split_mode_name(SplitMode m) {
    return m == SplitMode::Row ? "row" : "layer";
}

Result<SplitMode> parse_split_mode(const std::string& value) {
    const std::string lower = to_lower(value);
    if (lower == "layer") return SplitMode::Layer;
    if (lower == "row") return SplitMode::Row;
    return Status::Error("bad split mode " + quoted(value) + " (expected layer or row)");
}

Result<SplitModeSpec> parse_split_mode_spec(const std::string& spec) {
    return parse_module_map<SplitMode>(spec, parse_split_mode);
}

std::string to_string(const SplitModeSpec& spec) {
    return module_map_to_string(spec, [](SplitMode m) { return std::string(split_mode_name(m)); });
}

}  // namespace ggdiff::placement
