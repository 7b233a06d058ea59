#include "image/infotext.h"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/log.h"
#include "core/safe_text.h"

namespace ggdiff {

namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

const char kNegativePrefix[] = "Negative prompt:";

// Python's str.strip() for the ASCII whitespace A1111 texts contain.
bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string strip(const std::string& s) {
    size_t b = 0, e = s.size();
    while (b < e && is_space(s[b])) ++b;
    while (e > b && is_space(s[e - 1])) --e;
    return s.substr(b, e - b);
}

// Python's \w for our purposes: ASCII letters, digits, '_' and any non-ASCII byte.
bool is_word(char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || u == '_' ||
           u >= 0x80;
}

bool is_key_char(char c) {
    return is_word(c) || c == ' ' || c == '-' || c == '/';
}

std::string format_float(float v) {
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
    if (r.ec != std::errc()) return string_format("%g", static_cast<double>(v));
    return std::string(buf, r.ptr);
}

// The JSON number for a float: the double of its shortest decimal form (7.1f -> 7.1).
double json_number(float v) {
    const std::string s = format_float(v);
    double d = v;
    std::from_chars(s.data(), s.data() + s.size(), d);
    return d;
}

// re.findall(r'\s*(\w[\w \-/]+):\s*("(?:\\.|[^\\"])+"|[^,]*)(?:,|$)', line), written out
// (std::regex recurses per character and overflows the stack on long quoted values), in
// linear time: a failed match skips every start position that would fail the same way.
}  // namespace

Pairs infotext_find_params(const std::string& s) {
    Pairs out;
    const size_t n = s.size();
    size_t i = 0;
    while (i < n) {
        size_t p = i;
        while (p < n && is_space(s[p])) ++p;
        size_t k = p;
        if (p < n && is_word(s[p])) {
            k = p + 1;
            while (k < n && is_key_char(s[k])) ++k;
        }
        if (k < p + 2 || k >= n || s[k] != ':') {
            // Every start in [i, p] skips to the same p; every start in (p, k) reads a key
            // that ends at the same k, which is not followed by ':' (or starts no key).
            i = k > p && (k >= n || s[k] != ':') ? k : p + 1;
            continue;
        }
        size_t v = k + 1;
        while (v < n && is_space(s[v])) ++v;
        size_t end = std::string::npos;  // end of the value
        if (v < n && s[v] == '"') {
            size_t q = v + 1, count = 0;
            while (q < n && s[q] != '"') {
                if (s[q] == '\\') {
                    if (q + 1 >= n || s[q + 1] == '\n') break;
                    ++q;
                }
                ++q, ++count;
            }
            if (q < n && s[q] == '"' && count > 0 && (q + 1 == n || s[q + 1] == ',')) {
                end = q + 1;
            }
        }
        if (end == std::string::npos) {
            end = v;
            while (end < n && s[end] != ',') ++end;
        }
        out.emplace_back(s.substr(p, k - p), s.substr(v, end - v));
        i = end < n ? end + 1 : n;
    }
    return out;
}

namespace {

std::string unquote(const std::string& v) {
    if (v.size() < 2 || v.front() != '"' || v.back() != '"') return v;
    const nlohmann::json j = nlohmann::json::parse(v, nullptr, /*allow_exceptions=*/false);
    if (!j.is_string()) return v;
    return j.get<std::string>();
}

template <class T>
bool parse_number(const std::string& s, T& out) {
    const char* b = s.data();
    const char* e = s.data() + s.size();
    if (b != e && *b == '+') ++b;
    const auto r = std::from_chars(b, e, out);
    return r.ec == std::errc() && r.ptr == e && b != e;
}

Status bad_value(const std::string& key, const std::string& value, const char* what) {
    return Status::Error("infotext: " + quote_name(key) + " is not " + what + ": " +
                         quote_name(escape_text(value, 80)));
}

template <class T>
Status set_number(const std::string& key, const std::string& value, T& out) {
    T v{};
    if (!parse_number(value, v)) {
        return bad_value(key, value, std::is_integral<T>::value ? "an integer" : "a number");
    }
    out = v;
    return Status::Ok();
}

template <class T>
Status set_optional(const std::string& key, const std::string& value, std::optional<T>& out) {
    T v{};
    GGDIFF_TRY(set_number(key, value, v));
    out = v;
    return Status::Ok();
}

Status set_size(const std::string& value, GenerationInfo& info) {
    const size_t x = value.find('x');
    int w = 0, h = 0;
    if (x == std::string::npos || !parse_number(value.substr(0, x), w) ||
        !parse_number(value.substr(x + 1), h) || value[0] == '+' || value[x + 1] == '+' || w < 0 ||
        h < 0) {
        return bad_value("Size", value, "WIDTHxHEIGHT");
    }
    info.width = w;
    info.height = h;
    return Status::Ok();
}

// Position of each key in info.extra, so that repeated keys update in place in O(1).
using ExtraIndex = std::unordered_map<std::string, size_t>;

Status apply_param(const std::string& key, const std::string& value, GenerationInfo& info,
                   ExtraIndex& extra_index) {
    if (key == "Steps") return set_number(key, value, info.steps);
    if (key == "Sampler") return info.sampler = value, Status::Ok();
    if (key == "Schedule type") return info.schedule = value, Status::Ok();
    if (key == "CFG scale") return set_number(key, value, info.cfg_scale);
    if (key == "Distilled CFG Scale") return set_optional(key, value, info.guidance);
    if (key == "Seed") return set_number(key, value, info.seed);
    if (key == "Size") return set_size(value, info);
    if (key == "Model hash") return info.model_hash = value, Status::Ok();
    if (key == "Model") return info.model = value, Status::Ok();
    if (key == "VAE") return info.vae = value, Status::Ok();
    if (key == "Denoising strength") return set_optional(key, value, info.denoising_strength);
    if (key == "Clip skip") return set_optional(key, value, info.clip_skip);
    if (key == "RNG") return info.rng = value, Status::Ok();
    if (key == "Eta") return set_optional(key, value, info.eta);
    if (key == "Version") return info.version = value, Status::Ok();
    const auto [it, fresh] = extra_index.emplace(key, info.extra.size());
    if (!fresh) return info.extra[it->second].second = value, Status::Ok();
    info.extra.emplace_back(key, value);
    return Status::Ok();
}

}  // namespace

std::string infotext_quote(const std::string& value) {
    if (value.find_first_of(",:\n") == std::string::npos) return value;
    return nlohmann::json(value).dump(-1, ' ', /*ensure_ascii=*/false,
                                      nlohmann::json::error_handler_t::replace);
}

std::string infotext_float(float v) {
    return format_float(v);
}

std::string format_infotext(const GenerationInfo& info) {
    Pairs params;
    params.emplace_back("Steps", std::to_string(info.steps));
    if (!info.sampler.empty()) params.emplace_back("Sampler", info.sampler);
    if (!info.schedule.empty()) params.emplace_back("Schedule type", info.schedule);
    params.emplace_back("CFG scale", format_float(info.cfg_scale));
    if (info.guidance) params.emplace_back("Distilled CFG Scale", format_float(*info.guidance));
    params.emplace_back("Seed", std::to_string(info.seed));
    params.emplace_back("Size", std::to_string(info.width) + "x" + std::to_string(info.height));
    if (!info.model_hash.empty()) params.emplace_back("Model hash", info.model_hash);
    if (!info.model.empty()) params.emplace_back("Model", info.model);
    if (!info.vae.empty()) params.emplace_back("VAE", info.vae);
    if (info.denoising_strength) {
        params.emplace_back("Denoising strength", format_float(*info.denoising_strength));
    }
    if (info.clip_skip) params.emplace_back("Clip skip", std::to_string(*info.clip_skip));
    if (!info.rng.empty()) params.emplace_back("RNG", info.rng);
    if (info.eta) params.emplace_back("Eta", format_float(*info.eta));
    for (const auto& kv : info.extra) params.push_back(kv);
    if (!info.version.empty()) params.emplace_back("Version", info.version);

    std::string line;
    for (const auto& kv : params) {
        if (!line.empty()) line += ", ";
        line += kv.first == kv.second ? kv.first : kv.first + ": " + infotext_quote(kv.second);
    }
    std::string text = info.prompt;
    if (!info.negative_prompt.empty()) text += "\nNegative prompt: " + info.negative_prompt;
    text += "\n" + line;
    return strip(text);
}

Result<GenerationInfo> parse_infotext(const std::string& text) {
    std::vector<std::string> lines;
    const std::string s = strip(text);
    for (size_t pos = 0;;) {
        const size_t nl = s.find('\n', pos);
        lines.push_back(s.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos));
        if (nl == std::string::npos) break;
        pos = nl + 1;
    }
    Pairs params = infotext_find_params(lines.back());
    if (params.size() >= 3) {
        lines.pop_back();
    } else {
        params.clear();
    }

    GenerationInfo info;
    bool negative = false;
    for (std::string line : lines) {
        line = strip(line);
        if (line.compare(0, sizeof kNegativePrefix - 1, kNegativePrefix) == 0) {
            negative = true;
            line = strip(line.substr(sizeof kNegativePrefix - 1));
        }
        std::string& target = negative ? info.negative_prompt : info.prompt;
        if (!target.empty()) target += "\n";
        target += line;
    }
    ExtraIndex extra_index;
    for (const auto& kv : params) {
        if (kv.second.empty()) continue;  // A1111 skips these (v[0] raises)
        GGDIFF_TRY(apply_param(kv.first, unquote(kv.second), info, extra_index));
    }
    return info;
}

nlohmann::json infotext_to_json(const GenerationInfo& info) {
    nlohmann::json j;
    j["prompt"] = info.prompt;
    j["negative_prompt"] = info.negative_prompt;
    j["steps"] = info.steps;
    j["sampler_name"] = info.sampler;
    j["cfg_scale"] = json_number(info.cfg_scale);
    j["seed"] = info.seed;
    j["width"] = info.width;
    j["height"] = info.height;
    if (!info.model.empty()) j["sd_model_name"] = info.model;
    if (!info.model_hash.empty()) j["sd_model_hash"] = info.model_hash;
    if (!info.vae.empty()) j["sd_vae_name"] = info.vae;
    if (info.denoising_strength) j["denoising_strength"] = json_number(*info.denoising_strength);
    if (info.clip_skip) j["clip_skip"] = *info.clip_skip;
    if (!info.version.empty()) j["version"] = info.version;
    nlohmann::json extra = nlohmann::json::object();
    if (!info.schedule.empty()) extra["Schedule type"] = info.schedule;
    if (info.guidance) extra["Distilled CFG Scale"] = json_number(*info.guidance);
    if (!info.rng.empty()) extra["RNG"] = info.rng;
    if (info.eta) extra["Eta"] = json_number(*info.eta);
    for (const auto& kv : info.extra) extra[kv.first] = kv.second;
    j["extra_generation_params"] = std::move(extra);
    return j;
}

std::string format_metadata_text(const std::string& parameters) {
    if (!parameters.empty() && parameters.back() == '\n') return parameters;
    return parameters + "\n";
}

Result<std::string> format_metadata(const std::string& parameters, const std::string& format) {
    if (format == "text") return format_metadata_text(parameters);
    if (format != "json") {
        return Status::Error("unknown metadata format " + quote_name(format) +
                             " (expected text or json)");
    }
    Result<GenerationInfo> info = parse_infotext(parameters);
    if (!info.ok()) return info.status();
    nlohmann::json j = infotext_to_json(*info);
    j["infotext"] = parameters;
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace ggdiff
