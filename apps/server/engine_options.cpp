#include "engine_options.h"

#include <cmath>
#include <sstream>

#include "json_fields.h"
#include "request_error.h"

namespace ggdiff::server {

namespace {

const char* type_word(int type) {
    switch (type) {
        case GGDIFF_OPTION_STRING:
            return "string";
        case GGDIFF_OPTION_PATH:
            return "path";
        case GGDIFF_OPTION_INT:
            return "integer";
        case GGDIFF_OPTION_FLOAT:
            return "number";
        case GGDIFF_OPTION_BOOL:
            return "boolean";
        case GGDIFF_OPTION_ENUM:
            return "enum";
        case GGDIFF_OPTION_FLOAT_LIST:
            return "number list";
        case GGDIFF_OPTION_INT_LIST:
            return "integer list";
        case GGDIFF_OPTION_PAIR:
            return "pair";
    }
    return "value";
}

std::string number_text(double v) {
    std::ostringstream os;
    os.precision(12);
    os << v;
    return os.str();
}

nlohmann::json split_list(const char* text) {
    nlohmann::json out = nlohmann::json::array();
    std::string s = text ? text : "";
    size_t start = 0;
    while (!s.empty() && start <= s.size()) {
        const size_t comma = s.find(',', start);
        out.push_back(s.substr(start, comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

}  // namespace

std::optional<ggdiff_option_desc> engine_option(const std::string& name, bool json_spelling) {
    int index = ggdiff_option_find(name.c_str());
    if (index < 0 && json_spelling && name.find('_') != std::string::npos) {
        std::string dashed = name;
        for (char& c : dashed)
            if (c == '_') c = '-';
        index = ggdiff_option_find(dashed.c_str());
    }
    ggdiff_option_desc d{};
    if (index < 0 || ggdiff_option_info(index, &d) != 0) return std::nullopt;
    return d;
}

void require_supported(const std::string& option, const std::string& field) {
    auto d = engine_option(option, false);
    if (!d) throw bad_field(field, "--" + option + " is not supported yet");
    if (d->support == GGDIFF_SUPPORT_NOT_YET) {
        throw bad_field(field, "--" + option + " is not supported yet" +
                                   (*d->note ? std::string(" (") + d->note + ")" : std::string()));
    }
}

bool option_supported(const std::string& option) {
    auto d = engine_option(option, false);
    return d && d->support != GGDIFF_SUPPORT_NOT_YET;
}

bool is_bool_word(const std::string& t) {
    for (const char* w : {"true", "false", "on", "off", "1", "0", "yes", "no"})
        if (t == w) return true;
    return false;
}

std::string option_text_from_json(const ggdiff_option_desc& d, const nlohmann::json& v,
                                  const std::string& field) {
    auto wrong = [&](const char* want) {
        return bad_field(field, std::string("expected ") + want + ", got " + json_type_phrase(v));
    };
    switch (d.type) {
        case GGDIFF_OPTION_INT: {
            if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
            if (v.is_number_float() && std::isfinite(v.get<double>()) &&
                v.get<double>() == std::floor(v.get<double>()) &&
                std::fabs(v.get<double>()) < 9e15) {
                return std::to_string(static_cast<int64_t>(v.get<double>()));
            }
            throw wrong("an integer");
        }
        case GGDIFF_OPTION_FLOAT:
            if (!v.is_number()) throw wrong("a number");
            return number_text(v.get<double>());
        case GGDIFF_OPTION_BOOL:
            if (!v.is_boolean()) throw wrong("true or false");
            return v.get<bool>() ? "true" : "false";
        case GGDIFF_OPTION_FLOAT_LIST:
        case GGDIFF_OPTION_INT_LIST: {
            if (!v.is_array()) throw wrong("an array of numbers");
            std::string out;
            for (size_t i = 0; i < v.size(); ++i) {
                if (!v[i].is_number()) {
                    throw bad_field(field + "[" + std::to_string(i) + "]",
                                    "expected a number, got " + json_type_phrase(v[i]));
                }
                out += (i ? "," : "") + number_text(v[i].get<double>());
            }
            return out;
        }
        case GGDIFF_OPTION_PAIR:
            if (v.is_number_integer()) return v.dump();
            if (v.is_string()) return v.get<std::string>();
            if (v.is_array() && v.size() == 2 && v[0].is_number_integer() &&
                v[1].is_number_integer()) {
                return v[0].dump() + "x" + v[1].dump();
            }
            throw wrong("N, \"WxH\" or [W, H]");
        default:
            if (!v.is_string()) throw wrong("a string");
            return v.get<std::string>();
    }
}

std::string option_text(const ggdiff_options* options, const char* name) {
    const char* text = nullptr;
    if (ggdiff_options_get(options, name, &text) != 0 || !text) return "";
    return text;
}

nlohmann::json request_options_json(const ggdiff_options* defaults) {
    nlohmann::json out = nlohmann::json::array();
    const int n = ggdiff_option_count();
    for (int i = 0; i < n; ++i) {
        ggdiff_option_desc d{};
        if (ggdiff_option_info(i, &d) != 0) continue;
        if (!(d.flags & GGDIFF_OPTION_GENERATE) || (d.flags & GGDIFF_OPTION_FRONTEND) ||
            d.type == GGDIFF_OPTION_PATH) {
            continue;
        }
        nlohmann::json j = {{"name", d.name},
                            {"type", type_word(d.type)},
                            {"default", option_text(defaults, d.name)},
                            {"help", d.help},
                            {"group", d.group},
                            {"support", d.support == GGDIFF_SUPPORT_WORKS       ? "works"
                                        : d.support == GGDIFF_SUPPORT_NO_EFFECT ? "no_effect"
                                                                                : "not_yet"}};
        if (d.min > -1e299) j["min"] = d.min;
        if (d.max < 1e299) j["max"] = d.max;
        if (*d.values) j["values"] = split_list(d.values);
        out.push_back(j);
    }
    return out;
}

}  // namespace ggdiff::server
