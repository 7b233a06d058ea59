// Tokenizing shared by the placement flag parsers: "KEY=VALUE,KEY=VALUE" or a bare "VALUE",
// name folding and device-name lookup. Every error names the offending token.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace ggdiff::placement {

// ASCII lower case.
std::string to_lower(const std::string& s);
// Lower case with '-' and '_' removed: "Control_Net" -> "controlnet".
std::string fold_name(const std::string& s);
// Quoted for messages: "X" with '"' and control characters escaped.
std::string quoted(const std::string& s);
// "a, b, c"
std::string join(const std::vector<std::string>& items, const std::string& sep);

// `s` as one POSIX shell word: unchanged when made of [A-Za-z0-9_.,:=+-], else in
// single quotes.
std::string shell_quote(const std::string& s);

// One comma-separated entry of a spec. `key` is empty for a bare value.
struct SpecEntry {
    std::string key;    // as written (trimmed)
    std::string value;  // as written (trimmed)
};

// Splits `spec` on ',' then each entry on the first '='. Rejects an empty spec, empty
// entries, an empty key or value, a second '=' and a bare value that is not the only
// entry ("CUDA0,vae=CPU" must be written "all=CUDA0,vae=CPU").
Result<std::vector<SpecEntry>> split_spec(const std::string& spec);

// Matches `name` case-insensitively against `known` and returns the canonical spelling.
// "cpu" is always accepted (as "CPU" when no known device is spelled otherwise).
// Error: unknown device "X" (known: A, B).
Result<std::string> resolve_device_name(const std::string& name,
                                        const std::vector<std::string>& known);

}  // namespace ggdiff::placement
