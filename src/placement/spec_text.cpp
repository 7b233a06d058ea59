#include "placement/spec_text.h"

#include <cctype>

#include "core/log.h"

namespace ggdiff::placement {
namespace {

std::string trim(const std::string& s) {
    size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
    return s.substr(b, e - b);
}

}  // namespace

std::string to_lower(const std::string& s) {
    std::string out = s;
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string fold_name(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '-' || c == '_') continue;
        out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    return out;
}

std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        const unsigned char u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(c);
        } else if (u < 0x20 || u == 0x7f) {
            out += string_format("\\x%02x", u);
        } else {
            out.push_back(c);
        }
    }
    out.push_back('"');
    return out;
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += sep;
        out += items[i];
    }
    return out;
}

std::string shell_quote(const std::string& s) {
    bool plain = !s.empty();
    for (char c : s) {
        if (!std::isalnum(static_cast<unsigned char>(c)) &&
            std::string("_.,:=+-/").find(c) == std::string::npos)
            plain = false;
    }
    if (plain) return s;
    std::string out = "'";
    for (char c : s) {
        if (c == '\'') {
            out += "'\\''";
        } else {
            out.push_back(c);
        }
    }
    return out + "'";
}

Result<std::vector<SpecEntry>> split_spec(const std::string& spec) {
    if (trim(spec).empty()) return Status::Error("empty spec");
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
        const size_t comma = spec.find(',', start);
        parts.push_back(spec.substr(start, comma == std::string::npos ? comma : comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    std::vector<SpecEntry> entries;
    for (const std::string& raw : parts) {
        const std::string part = trim(raw);
        if (part.empty()) return Status::Error("empty entry in " + quoted(spec));
        const size_t eq = part.find('=');
        SpecEntry e;
        if (eq == std::string::npos) {
            e.value = part;
        } else {
            e.key = trim(part.substr(0, eq));
            e.value = trim(part.substr(eq + 1));
            if (e.key.empty()) return Status::Error("missing name before '=' in " + quoted(part));
            if (e.value.empty()) return Status::Error("missing value after '=' in " + quoted(part));
            if (e.value.find('=') != std::string::npos)
                return Status::Error("more than one '=' in " + quoted(part));
        }
        entries.push_back(std::move(e));
    }
    if (entries.size() > 1) {
        for (const SpecEntry& e : entries) {
            if (e.key.empty())
                return Status::Error("entry " + quoted(e.value) +
                                     " has no name; in a list write NAME=VALUE (all=" + e.value +
                                     " for every one)");
        }
    }
    return entries;
}

Result<std::string> resolve_device_name(const std::string& name,
                                        const std::vector<std::string>& known) {
    const std::string lower = to_lower(name);
    for (const std::string& k : known) {
        if (to_lower(k) == lower) return k;
    }
    if (lower == "cpu") return std::string("CPU");
    return Status::Error("unknown device " + quoted(name) + " (known: " +
                         (known.empty() ? std::string("none") : join(known, ", ")) + ")");
}

}  // namespace ggdiff::placement
