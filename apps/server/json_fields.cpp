#include "json_fields.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "request_error.h"

namespace ggdiff::server {

namespace {

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string number_text(double v) {
    nlohmann::json j = v;
    return j.dump();
}

// Deepest nesting of arrays/objects in JSON text (strings skipped), stopping early past
// `limit`: deep documents are refused before parsing, so that nothing later (printing an
// echo of the request, say) recurses that deep.
int nesting_depth(const std::string& text, int limit) {
    int depth = 0, deepest = 0;
    bool in_string = false, escaped = false;
    for (char c : text) {
        if (in_string) {
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            deepest = std::max(deepest, ++depth);
            if (deepest > limit) return deepest;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return deepest;
}

constexpr int kMaxJsonDepth = 32;

}  // namespace

std::string json_type_phrase(const nlohmann::json& v) {
    if (v.is_null()) return "null";
    if (v.is_boolean()) return "a boolean";
    if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
    if (v.is_number()) return "a number";
    if (v.is_string()) return "a string";
    if (v.is_array()) return "an array";
    return "an object";
}

nlohmann::json parse_json_object(const std::string& body) {
    if (body.empty()) throw bad_field("body", "empty request body (expected a JSON object)");
    if (nesting_depth(body, kMaxJsonDepth) > kMaxJsonDepth) {
        throw bad_field("body",
                        "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(body);
    } catch (const nlohmann::json::parse_error& e) {
        throw bad_field("body", "malformed JSON at byte " + std::to_string(e.byte));
    } catch (const nlohmann::json::exception&) {
        throw bad_field("body", "malformed JSON");
    }
    if (!j.is_object()) {
        throw bad_field("body", "expected a JSON object, got " + json_type_phrase(j));
    }
    return j;
}

Fields::Fields(const nlohmann::json& object, std::string prefix)
    : object_(&object), prefix_(std::move(prefix)) {}

std::string Fields::path(const std::string& key) const {
    return prefix_.empty() ? key : prefix_ + "." + key;
}

const nlohmann::json* Fields::get(const std::string& key) const {
    auto it = object_->find(key);
    if (it == object_->end() || it->is_null()) return nullptr;
    return &*it;
}

bool Fields::has(const std::string& key) const {
    return get(key) != nullptr;
}

std::optional<int64_t> Fields::integer(const std::string& key, int64_t min, int64_t max) const {
    const nlohmann::json* v = get(key);
    if (!v) return std::nullopt;
    int64_t x = 0;
    if (v->is_number_integer()) {
        x = v->get<int64_t>();
    } else if (v->is_number_unsigned()) {
        const uint64_t u = v->get<uint64_t>();
        if (u > static_cast<uint64_t>(INT64_MAX)) {
            throw bad_field(path(key), "must be at most " + std::to_string(max));
        }
        x = static_cast<int64_t>(u);
    } else if (v->is_number_float()) {
        const double d = v->get<double>();
        if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e15) {
            throw bad_field(path(key), "expected an integer, got " + number_text(d));
        }
        x = static_cast<int64_t>(d);
    } else {
        throw bad_field(path(key), "expected an integer, got " + json_type_phrase(*v));
    }
    if (x < min) throw bad_field(path(key), "must be at least " + std::to_string(min));
    if (x > max) throw bad_field(path(key), "must be at most " + std::to_string(max));
    return x;
}

std::optional<double> Fields::number(const std::string& key, double min, double max) const {
    const nlohmann::json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) {
        throw bad_field(path(key), "expected a number, got " + json_type_phrase(*v));
    }
    const double d = v->get<double>();
    if (!std::isfinite(d)) throw bad_field(path(key), "must be a finite number");
    if (d < min) throw bad_field(path(key), "must be at least " + number_text(min));
    if (d > max) throw bad_field(path(key), "must be at most " + number_text(max));
    return d;
}

std::optional<bool> Fields::boolean(const std::string& key) const {
    const nlohmann::json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) {
        throw bad_field(path(key), "expected true or false, got " + json_type_phrase(*v));
    }
    return v->get<bool>();
}

std::optional<bool> Fields::flag(const std::string& key) const {
    const nlohmann::json* v = get(key);
    if (!v) return std::nullopt;
    if (v->is_boolean()) return v->get<bool>();
    if (v->is_number_integer() || v->is_number_unsigned()) {
        const int64_t x = v->get<int64_t>();
        if (x == 0 || x == 1) return x == 1;
    }
    throw bad_field(path(key), "expected true or false, got " + json_type_phrase(*v));
}

std::optional<std::string> Fields::string(const std::string& key, size_t max_bytes) const {
    const nlohmann::json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) {
        throw bad_field(path(key), "expected a string, got " + json_type_phrase(*v));
    }
    const std::string& s = v->get_ref<const std::string&>();
    if (s.size() > max_bytes) {
        throw RequestError(413, path(key),
                           "longer than the limit of " + std::to_string(max_bytes) + " bytes");
    }
    return s;
}

std::optional<Fields> Fields::object(const std::string& key) const {
    const nlohmann::json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_object()) {
        throw bad_field(path(key), "expected an object, got " + json_type_phrase(*v));
    }
    return Fields(*v, path(key));
}

std::vector<nlohmann::json> Fields::array(const std::string& key, size_t max_items) const {
    const nlohmann::json* v = get(key);
    if (!v) return {};
    if (!v->is_array()) {
        throw bad_field(path(key), "expected an array, got " + json_type_phrase(*v));
    }
    if (v->size() > max_items) {
        throw bad_field(path(key), "at most " + std::to_string(max_items) +
                                       (max_items == 1 ? " item is" : " items are") +
                                       " supported, got " + std::to_string(v->size()));
    }
    return {v->begin(), v->end()};
}

std::optional<std::string> Fields::one_of(const std::string& key,
                                          const std::vector<std::string>& allowed) const {
    std::optional<std::string> s = string(key, 256);
    if (!s) return std::nullopt;
    for (const std::string& a : allowed)
        if (lower(a) == lower(*s)) return a;
    std::string list;
    for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
    throw bad_field(path(key), "'" + *s + "' is not one of " + list);
}

}  // namespace ggdiff::server
