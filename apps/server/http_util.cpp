#include "http_util.h"

namespace ggdiff::server {

ApiStyle style_of_path(const std::string& path) {
    if (path.rfind("/v1/", 0) == 0) return ApiStyle::openai;
    if (path.rfind("/sdapi/", 0) == 0) return ApiStyle::a1111;
    return ApiStyle::sdcpp;
}

const char* status_phrase(int status) {
    switch (status) {
        case 400:
            return "Bad Request";
        case 401:
            return "Unauthorized";
        case 403:
            return "Forbidden";
        case 404:
            return "Not Found";
        case 405:
            return "Method Not Allowed";
        case 409:
            return "Conflict";
        case 410:
            return "Gone";
        case 413:
            return "Payload Too Large";
        case 429:
            return "Too Many Requests";
        case 500:
            return "Internal Server Error";
        case 503:
            return "Service Unavailable";
        default:
            return status < 400 ? "OK" : "Error";
    }
}

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
    res.status = status;
    res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                    "application/json");
}

namespace {

std::string openai_code(int status) {
    switch (status) {
        case 401:
            return "invalid_api_key";
        case 404:
            return "not_found";
        case 413:
            return "payload_too_large";
        case 429:
            return "rate_limit_exceeded";
        case 503:
            return "server_busy";
        default:
            return status >= 500 ? "server_error" : "invalid_value";
    }
}

}  // namespace

void send_error(httplib::Response& res, ApiStyle style, int status, const std::string& field,
                const std::string& message, const std::string& code) {
    const std::string text =
        field.empty() || message.rfind(field + ":", 0) == 0 ? message : field + ": " + message;
    nlohmann::json body;
    switch (style) {
        case ApiStyle::openai: {
            std::string type = status >= 500 ? "server_error" : "invalid_request_error";
            if (status == 401) type = "authentication_error";
            if (status == 429) type = "rate_limit_error";
            body["error"] = {
                {"message", text},
                {"type", type},
                {"param", field.empty() ? nlohmann::json(nullptr) : nlohmann::json(field)},
                {"code", code.empty() ? openai_code(status) : code}};
            break;
        }
        case ApiStyle::a1111:
            body = {{"error", status_phrase(status)}, {"detail", text}};
            if (!field.empty()) body["field"] = field;
            break;
        case ApiStyle::sdcpp:
            body = {{"error", text}};
            if (!field.empty()) body["field"] = field;
            if (!code.empty()) body["code"] = code;
            break;
    }
    send_json(res, status, body);
}

void send_error(httplib::Response& res, ApiStyle style, const RequestError& e) {
    if (e.retry_after_s > 0) res.set_header("Retry-After", std::to_string(e.retry_after_s));
    // The exception's what() already carries "field: ".
    send_error(res, style, e.status(), e.field(), e.what());
}

}  // namespace ggdiff::server
