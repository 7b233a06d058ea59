// Checking option values against the schema and storing them; see option_schema.h.
#include "api/option_schema.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <unordered_map>

namespace ggdiff::api {
namespace {

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string trim(const std::string& s) {
    const char* ws = " \t\r\n";
    const size_t b = s.find_first_not_of(ws);
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

std::vector<std::string> split(const std::string& text, char sep) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, sep)) out.push_back(trim(item));
    return out;
}

std::string join(const std::vector<std::string>& items) {
    std::string out;
    for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
    return out;
}

std::string number_text(double v) {
    std::ostringstream os;
    os.precision(9);
    os << v;
    return os.str();
}

bool parse_int(const std::string& text, int64_t* out) {
    const std::string t = trim(text);
    if (t.empty()) return false;
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(t.c_str(), &end, 10);
    if (errno != 0 || end != t.c_str() + t.size()) return false;
    *out = v;
    return true;
}

bool parse_float(const std::string& text, double* out) {
    const std::string t = trim(text);
    if (t.empty()) return false;
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (errno != 0 || end != t.c_str() + t.size() || !std::isfinite(v)) return false;
    *out = v;
    return true;
}

Status bad(const OptionSpec& s, const std::string& value, const std::string& why) {
    return Status::Error(s.flag_name() + ": invalid value '" + value + "': " + why);
}

std::string range_text(const OptionSpec& s) {
    const bool lo = s.min > -1e299, hi = s.max < 1e299;
    if (lo && hi) return "must be between " + number_text(s.min) + " and " + number_text(s.max);
    if (lo) return "must be at least " + number_text(s.min);
    return "must be at most " + number_text(s.max);
}

bool in_range(const OptionSpec& s, double v) {
    return v >= s.min && v <= s.max;
}

// Whether `value` is one of the entry's values that are not supported yet ("a,b", or "!a"
// for every value but a).
bool unsupported_value(const OptionSpec& s, const std::string& value) {
    if (s.unsupported_values.empty()) return false;
    if (s.unsupported_values[0] == '!') {
        for (const std::string& ok : split(s.unsupported_values.substr(1), ','))
            if (value == ok) return false;
        return true;
    }
    for (const std::string& no : split(s.unsupported_values, ','))
        if (value == no) return true;
    return false;
}

Status unknown_value(const OptionSpec& s, const std::string& value) {
    std::vector<std::string> valid = s.values ? s.values() : std::vector<std::string>{};
    return bad(s, value, "unknown value (valid: " + join(valid) + ")");
}

// "a,b,c" or "[a, b, c]" -> numbers in range.
Status parse_list(const OptionSpec& s, const std::string& text, OptionValue& v) {
    std::string t = trim(text);
    if (!t.empty() && t.front() == '[') t.erase(0, 1);
    if (!t.empty() && t.back() == ']') t.pop_back();
    std::string canon;
    if (!trim(t).empty()) {
        for (const std::string& item : split(t, ',')) {
            double x = 0;
            int64_t n = 0;
            const bool ok =
                s.type == OptType::IntList ? parse_int(item, &n) : parse_float(item, &x);
            if (!ok) {
                return bad(s, text,
                           "'" + item + "' is not " +
                               (s.type == OptType::IntList ? "an integer" : "a number"));
            }
            if (s.type == OptType::IntList) x = static_cast<double>(n);
            if (!in_range(s, x)) return bad(s, text, "'" + item + "' " + range_text(s));
            v.list.push_back(x);
            canon += (canon.empty() ? "" : ",") + number_text(x);
        }
    }
    if (v.list.empty() && s.type == OptType::FloatList)
        return bad(s, text, "expected comma-separated numbers");
    v.text = canon;
    return Status::Ok();
}

// "N" or "XxY".
Status parse_pair(const OptionSpec& s, const std::string& text, OptionValue& v) {
    const std::string t = trim(text);
    const size_t x = t.find('x');
    const std::string a = x == std::string::npos ? t : t.substr(0, x);
    const std::string b = x == std::string::npos ? t : t.substr(x + 1);
    double va = 0, vb = 0;
    if (!parse_float(a, &va) || !parse_float(b, &vb)) return bad(s, text, "expected N or NxM");
    if (!in_range(s, va) || !in_range(s, vb)) return bad(s, text, range_text(s));
    v.list = {va, vb};
    v.text = number_text(va) + "x" + number_text(vb);
    return Status::Ok();
}

const std::vector<OptionSpec>& build_schema() {
    static const std::vector<OptionSpec> schema = [] {
        std::vector<OptionSpec> out;
        add_frontend_options(out);
        add_model_options(out);
        add_device_options(out);
        add_generation_options(out);
        add_hires_options(out);
        add_upscale_options(out);
        add_output_options(out);
        add_cache_options(out);
        add_preview_options(out);
        add_planned_options(out);
        return out;
    }();
    return schema;
}

const std::unordered_map<std::string, int>& name_index() {
    static const std::unordered_map<std::string, int> index = [] {
        std::unordered_map<std::string, int> m;
        const std::vector<OptionSpec>& schema = build_schema();
        for (size_t i = 0; i < schema.size(); ++i) {
            const OptionSpec& s = schema[i];
            m.emplace(s.name, static_cast<int>(i));
            if (!s.short_name.empty()) m.emplace(s.short_name, static_cast<int>(i));
            if (!s.aliases.empty()) {
                for (const std::string& a : split(s.aliases, ','))
                    m.emplace(a, static_cast<int>(i));
            }
        }
        return m;
    }();
    return index;
}

}  // namespace

const char* type_name(OptType type) {
    switch (type) {
        case OptType::String:
            return "text";
        case OptType::Path:
            return "a path";
        case OptType::Int:
            return "an integer";
        case OptType::Float:
            return "a number";
        case OptType::Bool:
            return "a boolean";
        case OptType::Enum:
            return "one of a set";
        case OptType::FloatList:
            return "a list of numbers";
        case OptType::IntList:
            return "a list of integers";
        case OptType::Pair:
            return "N or NxM";
    }
    return "?";
}

const std::vector<OptionSpec>& option_schema() {
    return build_schema();
}

int option_index(const std::string& name) {
    std::string key = name;
    while (!key.empty() && key[0] == '-') key.erase(0, 1);
    const auto& m = name_index();
    auto it = m.find(key);
    return it == m.end() ? -1 : it->second;
}

const OptionSpec* find_option(const std::string& name) {
    const int i = option_index(name);
    return i < 0 ? nullptr : &build_schema()[static_cast<size_t>(i)];
}

Result<OptionValue> parse_option_value(const OptionSpec& s, const std::string& text) {
    if (s.support == Support::NotYet) {
        return Status::Error(s.flag_name() + " is not supported yet" +
                             (s.note.empty() ? std::string() : " (" + s.note + ")"));
    }
    OptionValue v;
    v.text = text;
    switch (s.type) {
        case OptType::String:
        case OptType::Path:
            break;
        case OptType::Int: {
            if (!parse_int(text, &v.i)) return bad(s, text, "not an integer");
            if (s.check) GGDIFF_TRY(s.check(v));  // may explain the range better
            if (!in_range(s, static_cast<double>(v.i))) return bad(s, text, range_text(s));
            v.f = static_cast<double>(v.i);
            v.text = std::to_string(v.i);
            break;
        }
        case OptType::Float: {
            if (!parse_float(text, &v.f)) return bad(s, text, "not a finite number");
            if (!in_range(s, v.f)) return bad(s, text, range_text(s));
            v.text = number_text(v.f);
            break;
        }
        case OptType::Bool: {
            const std::string t = lower(trim(text));
            if (t.empty() || t == "1" || t == "true" || t == "on" || t == "yes") {
                v.b = true;
            } else if (t == "0" || t == "false" || t == "off" || t == "no") {
                v.b = false;
            } else {
                return bad(s, text, "expected true or false (on/off, 1/0, yes/no)");
            }
            v.text = v.b ? "true" : "false";
            break;
        }
        case OptType::Enum: {
            if (s.bind) break;  // the binder parses (it knows the aliases)
            bool found = false;
            for (const std::string& name : s.values()) {
                if (lower(text) == lower(name)) {
                    v.text = name;
                    found = true;
                    break;
                }
            }
            if (!found && !unsupported_value(s, text)) return unknown_value(s, text);
            break;
        }
        case OptType::FloatList:
        case OptType::IntList:
            GGDIFF_TRY(parse_list(s, text, v));
            break;
        case OptType::Pair:
            GGDIFF_TRY(parse_pair(s, text, v));
            break;
    }
    if (unsupported_value(s, v.text)) {
        return Status::Error(s.flag_name() + " " + v.text + " is not supported yet");
    }
    if (s.check && s.type != OptType::Int) GGDIFF_TRY(s.check(v));
    return v;
}

Status set_option(ApiOptions& options, const std::string& name, const std::string& text) {
    const OptionSpec* s = find_option(name);
    if (!s) return Status::Error("unknown option \"" + name + "\"");
    auto v = parse_option_value(*s, text);
    if (!v.ok()) return v.status();
    if (s->bind) {
        Status st = s->bind(options, *v);
        if (!st.ok()) {
            if (s->type == OptType::Enum) {
                if (unsupported_value(*s, lower(text)))
                    return Status::Error(s->flag_name() + " " + text + " is not supported yet");
                return unknown_value(*s, text);
            }
            return st.message().rfind(s->flag_name(), 0) == 0
                       ? st
                       : Status::Error(s->flag_name() + ": " + st.message());
        }
    }
    auto& slot = options.values[s->name];
    if (!s->is(kRepeatable)) slot.clear();
    slot.push_back(std::move(*v));
    return Status::Ok();
}

const OptionValue* option_value(const ApiOptions& options, const std::string& name, int index) {
    const int i = option_index(name);
    if (i < 0) return nullptr;
    const OptionSpec& s = build_schema()[static_cast<size_t>(i)];
    auto it = options.values.find(s.name);
    if (it != options.values.end() && !it->second.empty()) {
        if (index < 0) return &it->second.back();
        return static_cast<size_t>(index) < it->second.size() ? &it->second[index] : nullptr;
    }
    if (index > 0) return nullptr;
    // The default, parsed once per option.
    static std::vector<OptionValue> defaults = [] {
        std::vector<OptionValue> d;
        for (const OptionSpec& spec : build_schema()) {
            OptionValue v;
            if (!spec.default_text.empty() && spec.support != Support::NotYet) {
                auto p = parse_option_value(spec, spec.default_text);
                if (p.ok()) v = *p;
            }
            v.text = v.text.empty() ? spec.default_text : v.text;
            d.push_back(v);
        }
        return d;
    }();
    return &defaults[static_cast<size_t>(i)];
}

}  // namespace ggdiff::api
