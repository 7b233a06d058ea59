// Small string helpers for tensor-name rewriting.
#pragma once

#include <string>

namespace ggdiff {

inline bool starts_with(const std::string& s, const std::string& p) {
    return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}

inline bool ends_with(const std::string& s, const std::string& p) {
    return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// Matches "<prefix><digits>.<rest>"; sets *index and *rest.
inline bool take_indexed(const std::string& s, const std::string& prefix, int* index,
                         std::string* rest) {
    if (!starts_with(s, prefix)) return false;
    size_t i = prefix.size();
    size_t j = i;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9' && j - i < 6) ++j;
    if (j == i || j >= s.size() || s[j] != '.') return false;
    *index = std::stoi(s.substr(i, j - i));
    *rest = s.substr(j + 1);
    return true;
}

// Replaces a leading `from` with `to`; false if s does not start with `from`.
inline bool replace_prefix(std::string* s, const std::string& from, const std::string& to) {
    if (!starts_with(*s, from)) return false;
    *s = to + s->substr(from.size());
    return true;
}

}  // namespace ggdiff
