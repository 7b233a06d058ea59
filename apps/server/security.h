// What every request passes before its route: the API key (Bearer, X-Api-Key, or Basic auth
// with the key as the password for browsers; /health is open), CORS for the configured
// origins only (preflights answered here), and request logging with -v.
#pragma once

#include <httplib.h>

#include "server_config.h"

namespace ggdiff::server {

// Installs the pre-routing checks and the error handler (JSON bodies for 404/413/...).
void install_request_guards(httplib::Server& server, const ServerConfig& config);

// Constant-time comparison of a presented key with the configured one.
bool key_matches(const std::string& presented, const std::string& key);

}  // namespace ggdiff::server
