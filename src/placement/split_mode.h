// --split-mode SPEC: "layer" or "row" for every module, or per module
// ("diffusion=row,te=layer", all= allowed). Layer is the default.
#pragma once

#include <string>

#include "core/status.h"
#include "placement/module_map.h"

namespace ggdiff::placement {

enum class SplitMode { Layer, Row };
using SplitModeSpec = ModuleMap<SplitMode>;

const char* split_mode_name(SplitMode m);  // "layer" / "row"
// Case-insensitive. Error: bad split mode "X" (expected layer or row).
Result<SplitMode> parse_split_mode(const std::string& value);
Result<SplitModeSpec> parse_split_mode_spec(const std::string& spec);

std::string to_string(const SplitModeSpec& spec);

}  // namespace ggdiff::placement
