// The engine's option schema (ggdiff_option_count / ggdiff_option_info) as the server's
// routes use it: JSON values typed by the schema, and the per-request options a client may
// send (listed in /sdcpp/v1/capabilities). The command line's flags: server_config.h.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "ggdiff.h"

namespace ggdiff::server {

// By name, alias or short name; with json_spelling '_' may stand for '-' ("cfg_scale").
// nullopt when unknown.
std::optional<ggdiff_option_desc> engine_option(const std::string& name, bool json_spelling = true);

// A JSON value as the option's text (numbers for INT/FLOAT, true/false for BOOL, strings for
// ENUM/STRING, arrays of numbers for lists, "WxH" or [w, h] for pairs). Throws a 400 naming
// `field` for a value of the wrong type.
std::string option_text_from_json(const ggdiff_option_desc& desc, const nlohmann::json& value,
                                  const std::string& field);

// Throws a 400 naming `field` when engine option `option` is not supported yet (so that an
// upload for it is refused before it is decoded).
void require_supported(const std::string& option, const std::string& field);
// Whether the engine has `option` and it is not "not supported yet".
bool option_supported(const std::string& option);

// "true"/"false"/"on"/"off"/"1"/"0"/"yes"/"no" (what a BOOL option takes as a value).
bool is_bool_word(const std::string& text);

// The per-request options: name, type, default (as `defaults` has it: the command line's
// value or the schema's), range, values, help, support.
nlohmann::json request_options_json(const ggdiff_options* defaults);

// An option's current text in `options` (set or default); "" when unset or unknown.
std::string option_text(const ggdiff_options* options, const char* name);

}  // namespace ggdiff::server
