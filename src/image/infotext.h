// A1111 "infotext": the generation parameters text stored in images ("parameters" chunk) and
// returned by the A1111 API. Layout (as AUTOMATIC1111's create_infotext writes it):
//
//   <prompt, may span lines>
//   Negative prompt: <negative prompt, may span lines>      (only when non-empty)
//   Steps: 20, Sampler: Euler a, Schedule type: Karras, CFG scale: 7, Seed: 42, Size: 512x512, ...
//
// Values containing ',', ':' or a newline are written as JSON strings ("a, b").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"

namespace ggdiff {

struct GenerationInfo {
    std::string prompt;
    std::string negative_prompt;
    int steps = 0;                  // "Steps"
    std::string sampler;            // "Sampler", A1111 display name ("Euler a")
    std::string schedule;           // "Schedule type" ("Karras"); empty = omitted
    float cfg_scale = 0.0f;         // "CFG scale"
    std::optional<float> guidance;  // "Distilled CFG Scale" (Forge, FLUX)
    int64_t seed = 0;               // "Seed"
    int width = 0;                  // "Size: WIDTHxHEIGHT"
    int height = 0;
    std::string model_hash;                                  // "Model hash"; empty = omitted
    std::string model;                                       // "Model"; empty = omitted
    std::string vae;                                         // "VAE"; empty = omitted
    std::optional<float> denoising_strength;                 // "Denoising strength"
    std::optional<int> clip_skip;                            // "Clip skip"
    std::string rng;                                         // "RNG"; empty = omitted
    std::optional<float> eta;                                // "Eta"
    std::vector<std::pair<std::string, std::string>> extra;  // other keys, in order
    std::string version;  // "Version" ("ggdiff 0.1.0"), always last
};

// Emission order: Steps, Sampler, Schedule type, CFG scale, Distilled CFG Scale, Seed, Size,
// Model hash, Model, VAE, Denoising strength, Clip skip, RNG, Eta, extra..., Version.
// Numbers use the shortest form that reads back to the same float ("7", "7.5", "0.75").
// The whole text is stripped of leading/trailing whitespace, as A1111 does.
std::string format_infotext(const GenerationInfo& info);

// A number as the infotext writes it: the shortest form that reads back to the same float.
std::string infotext_float(float v);

// Parses like A1111's parse_generation_parameters: the last line holds the parameters when
// it has at least 3 "Key: value" pairs; lines before it are the prompt, up to a line
// starting with "Negative prompt:" after which they are the negative prompt (each line
// stripped). Quoted values are unquoted. Known keys fill their fields; others go to
// `extra` in order. Errors only for known numeric keys with malformed values.
Result<GenerationInfo> parse_infotext(const std::string& text);

// A1111-API-style JSON (the keys of its `info` object): prompt, negative_prompt, steps,
// sampler_name, cfg_scale, seed, width, height, and when set sd_model_name, sd_model_hash,
// sd_vae_name, denoising_strength, clip_skip, version; extra_generation_params holds
// "Schedule type", "Distilled CFG Scale", "RNG", "Eta" and the extra pairs.
nlohmann::json infotext_to_json(const GenerationInfo& info);

// `ggdiff -M metadata` output. Text: the raw parameters string plus a final newline.
std::string format_metadata_text(const std::string& parameters);
// JSON: infotext_to_json(parse_infotext(parameters)) plus "infotext" (the raw string),
// pretty-printed. `format` is "text" or "json"; anything else is an error naming it.
Result<std::string> format_metadata(const std::string& parameters, const std::string& format);

// The "Key: value" pairs of one parameters line, exactly as A1111's
//   re.findall(r'\s*(\w[\w \-/]+):\s*("(?:\\.|[^\\"])+"|[^,]*)(?:,|$)', line)
// finds them (values still quoted), in time linear in the line's length.
std::vector<std::pair<std::string, std::string>> infotext_find_params(const std::string& line);

// A1111's quoting of one value: unchanged unless it contains ',', ':' or '\n', then a JSON
// string literal (non-ASCII kept as is).
std::string infotext_quote(const std::string& value);

}  // namespace ggdiff
