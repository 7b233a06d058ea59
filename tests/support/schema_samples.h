#pragma once
// A valid command-line spelling of every option in the library's schema, made from its entry
// (type, default, value set, range), for tests that check a front end takes every schema flag
// it should (ggdiff-bench, ggdiff-server). Paths are a real image, so that image inputs, which
// the library reads when they are set, parse too.

#include <string>
#include <vector>

#include "ggdiff.h"

namespace ggdiff::schema_samples {

inline std::string first_item(const std::string& csv) {
    return csv.substr(0, csv.find(','));
}

inline std::string number(double v) {
    std::string s = std::to_string(v);
    while (s.find('.') != std::string::npos && (s.back() == '0' || s.back() == '.')) s.pop_back();
    return s;
}

// A value option `d` accepts.
inline std::string sample_value(const ggdiff_option_desc& d) {
    const std::string name = d.name;
    // Strings whose form the library checks.
    if (name == "backend") return "CPU";
    if (name == "params-backend") return "cpu";
    if (name == "split-mode") return "layer";
    if (name == "max-vram") return "8";
    if (name == "rpc-servers") return "127.0.0.1:50052";
    if (name == "cache-option") return "threshold=0.5";
    if (name == "scm-mask") return "1,0,1";
    if (name == "extra-tiling-args") return "temporal_tile_frames=2";
    // A folder of frame images (Wan VACE).
    if (name == "control-video") return GGDIFF_SOURCE_DIR "/tests/golden/wan_vace/control";
    if (d.default_value[0] && d.type != GGDIFF_OPTION_BOOL) return d.default_value;
    const bool has_min = d.min > -1e299;
    switch (d.type) {
        case GGDIFF_OPTION_PATH:
            return GGDIFF_SHARED_DIR "/golden/sd1_control/circle.png";
        case GGDIFF_OPTION_INT:
        case GGDIFF_OPTION_FLOAT:
            return has_min ? number(d.min) : "1";
        case GGDIFF_OPTION_ENUM:
            return first_item(d.values);
        case GGDIFF_OPTION_FLOAT_LIST:
            return "1,0.5,0";
        case GGDIFF_OPTION_INT_LIST:
            return "1,2";
        case GGDIFF_OPTION_PAIR:
            return has_min ? number(d.min) + "x" + number(d.min) : "64x64";
        case GGDIFF_OPTION_BOOL:
            return "on";
        default:
            return "a cat";
    }
}

// The arguments that set `d` through flag `spelled` ("--name", "-X" or an alias): a switch
// alone, anything else with its sample value.
inline std::vector<std::string> sample_args(const ggdiff_option_desc& d,
                                            const std::string& spelled) {
    if (d.type == GGDIFF_OPTION_BOOL && !(d.flags & GGDIFF_OPTION_VALUE_OPTIONAL)) return {spelled};
    return {spelled, sample_value(d)};
}

// Every spelling of `d` on a command line: --name, -X, --alias.
inline std::vector<std::string> spellings(const ggdiff_option_desc& d) {
    std::vector<std::string> out = {std::string("--") + d.name};
    if (d.short_name[0]) out.push_back(std::string("-") + d.short_name);
    std::string aliases = d.aliases;
    size_t start = 0;
    while (start < aliases.size()) {
        const size_t comma = aliases.find(',', start);
        const std::string a = aliases.substr(start, comma - start);
        if (!a.empty()) out.push_back("--" + a);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

// Every schema entry.
inline std::vector<ggdiff_option_desc> all_options() {
    std::vector<ggdiff_option_desc> out;
    for (int i = 0; i < ggdiff_option_count(); ++i) {
        ggdiff_option_desc d{};
        if (ggdiff_option_info(i, &d) == 0) out.push_back(d);
    }
    return out;
}

}  // namespace ggdiff::schema_samples
