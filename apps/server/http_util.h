// Responses in each API's own shape: JSON bodies, and errors as OpenAI ({"error": {message,
// type, param, code}}), A1111 ({"error", "detail"}) or sd-server ({"error"}) expect them;
// every route runs inside guarded() so that nothing a request does escapes as a crash.
#pragma once

#include <httplib.h>

#include <string>

#include <nlohmann/json.hpp>

#include "request_error.h"

namespace ggdiff::server {

enum class ApiStyle { openai, a1111, sdcpp };

// The style of the API a path belongs to (/v1/... openai, /sdapi/... a1111, else sdcpp).
ApiStyle style_of_path(const std::string& path);

void send_json(httplib::Response& res, int status, const nlohmann::json& body);
void send_error(httplib::Response& res, ApiStyle style, int status, const std::string& field,
                const std::string& message, const std::string& code = "");
void send_error(httplib::Response& res, ApiStyle style, const RequestError& error);

// Runs `fn`; RequestError becomes its status, a JSON type error a 400, anything else a 500
// (logged), each in `style`'s shape.
template <class F>
void guarded(httplib::Response& res, ApiStyle style, F&& fn) {
    try {
        fn();
    } catch (const RequestError& e) {
        send_error(res, style, e);
    } catch (const nlohmann::json::exception& e) {
        send_error(res, style, 400, "body", std::string("invalid request: ") + e.what());
    } catch (const std::bad_alloc&) {
        send_error(res, style, 503, "", "out of memory; try a smaller request", "server_busy");
    } catch (const std::exception& e) {
        send_error(res, style, 500, "", std::string("internal error: ") + e.what(), "server_error");
    }
}

// The reason phrase of a status ("Bad Request").
const char* status_phrase(int status);

}  // namespace ggdiff::server
