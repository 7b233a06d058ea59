#include "security.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "ggdiff.h"
#include "http_util.h"

namespace ggdiff::server {

namespace {

const char kAllowHeaders[] = "Authorization, X-Api-Key, Content-Type";
const char kExposeHeaders[] = "Retry-After, Location";

bool origin_allowed(const ServerConfig& c, const std::string& origin) {
    return std::find(c.cors_origins.begin(), c.cors_origins.end(), origin) !=
               c.cors_origins.end() ||
           std::find(c.cors_origins.begin(), c.cors_origins.end(), "*") != c.cors_origins.end();
}

bool authorized(const httplib::Request& req, const std::string& key) {
    const std::string x = req.get_header_value("X-Api-Key");
    if (!x.empty() && key_matches(x, key)) return true;
    const std::string auth = req.get_header_value("Authorization");
    if (auth.rfind("Bearer ", 0) == 0) return key_matches(auth.substr(7), key);
    if (auth.rfind("Basic ", 0) == 0) {
        // Browsers: any user name, the key as the password.
        const std::string text = auth.substr(6);
        unsigned char* bytes = nullptr;
        size_t size = 0;
        if (ggdiff_base64_decode(text.data(), text.size(), &bytes, &size) != 0) return false;
        const std::string creds(reinterpret_cast<const char*>(bytes), size);
        std::free(bytes);
        const size_t colon = creds.find(':');
        return colon != std::string::npos && key_matches(creds.substr(colon + 1), key);
    }
    return false;
}

}  // namespace

bool key_matches(const std::string& presented, const std::string& key) {
    // Compare every byte regardless of where the first difference is.
    unsigned diff = presented.size() == key.size() ? 0u : 1u;
    for (size_t i = 0; i < presented.size(); ++i) {
        diff |= static_cast<unsigned char>(presented[i]) ^
                static_cast<unsigned char>(key.empty() ? 0 : key[i % key.size()]);
    }
    return diff == 0;
}

void install_request_guards(httplib::Server& server, const ServerConfig& config) {
    server.set_pre_routing_handler([&config](const httplib::Request& req, httplib::Response& res) {
        if (config.verbose) {
            std::fprintf(stderr, "%s %s (%zu bytes)\n", req.method.c_str(), req.path.c_str(),
                         req.body.size());
        }
        const std::string origin = req.get_header_value("Origin");
        const bool cors = !origin.empty() && origin_allowed(config, origin);
        if (cors) {
            res.set_header("Access-Control-Allow-Origin", origin);
            res.set_header("Vary", "Origin");
            res.set_header("Access-Control-Expose-Headers", kExposeHeaders);
        }
        if (req.method == "OPTIONS") {
            // A CORS preflight: answered here, without the key (browsers send none).
            if (!cors) {
                send_error(
                    res, style_of_path(req.path), 403, "Origin",
                    origin.empty() ? "no Origin header" : "origin " + origin + " is not allowed");
                return httplib::Server::HandlerResponse::Handled;
            }
            res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
            res.set_header("Access-Control-Allow-Headers", kAllowHeaders);
            res.set_header("Access-Control-Max-Age", "600");
            res.status = 204;
            return httplib::Server::HandlerResponse::Handled;
        }
        if (!config.api_key.empty() && req.path != "/health" && !authorized(req, config.api_key)) {
            // Pages get a Basic challenge (the browser asks for the key); APIs a Bearer one.
            const bool page = req.path == "/" || req.path == "/index.html";
            res.set_header("WWW-Authenticate", page ? "Basic realm=\"ggdiff\", charset=\"UTF-8\""
                                                    : "Bearer realm=\"ggdiff\"");
            send_error(res, style_of_path(req.path), 401, "",
                       "missing or wrong API key (send 'Authorization: Bearer KEY' or "
                       "'X-Api-Key: KEY')");
            return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    // Bodies for what httplib answers itself (no route, body over the limit, bad multipart).
    server.set_error_handler([&config](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return;
        const ApiStyle style = style_of_path(req.path);
        switch (res.status) {
            case 404:
                send_error(res, style, 404, "", "no route " + req.method + " " + req.path);
                break;
            case 413:
                send_error(res, style, 413, "body",
                           "request body larger than the limit of " +
                               std::to_string(config.max_body_bytes >> 20) + " MiB");
                break;
            case 400:
                send_error(res, style, 400, "body",
                           "malformed request (headers, body framing or multipart form data)");
                break;
            default:
                send_error(res, style, res.status, "", status_phrase(res.status));
        }
    });
    server.set_exception_handler(
        [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
            std::string what = "unknown error";
            try {
                if (ep) std::rethrow_exception(ep);
            } catch (const std::exception& e) {
                what = e.what();
            } catch (...) {
            }
            send_error(res, style_of_path(req.path), 500, "", "internal error: " + what);
        });
}

}  // namespace ggdiff::server
