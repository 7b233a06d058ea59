// What goes wrong with a request, as a value every route turns into its API's error shape:
// the HTTP status, the field at fault (when one is) and a message that names it.
#pragma once

#include <stdexcept>
#include <string>

namespace ggdiff::server {

class RequestError : public std::runtime_error {
  public:
    RequestError(int status, std::string field, const std::string& message)
        : std::runtime_error(field.empty() ? message : field + ": " + message),
          status_(status),
          field_(std::move(field)) {}

    int status() const { return status_; }
    const std::string& field() const { return field_; }  // "" when no single field

    // Extra response headers (Retry-After for 429 and 503).
    int retry_after_s = 0;

  private:
    int status_;
    std::string field_;
};

// 400 naming `field`.
inline RequestError bad_field(const std::string& field, const std::string& message) {
    return RequestError(400, field, message);
}

// 400 for a feature this build does not have: "FIELD: WHAT is not supported yet".
inline RequestError not_supported(const std::string& field, const std::string& what) {
    return RequestError(400, field, what + " is not supported yet");
}

}  // namespace ggdiff::server
