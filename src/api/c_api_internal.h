// What the C API's source files share: the options object and error reporting.
#pragma once

#include <string>

#include "api/api_options.h"
#include "core/status.h"
#include "ggdiff.h"

struct ggdiff_options {
    ggdiff::ApiOptions opts;
};

namespace ggdiff::api {

const std::string& last_error();
// Records `message` as this thread's ggdiff_last_error() and returns 1.
int fail(const std::string& message);
// Returns GGDIFF_ERROR_INPUT for an error in what the caller asked for, else 1.
inline int fail(const Status& st) {
    const int rc = fail(st.message());
    return st.input_error() ? GGDIFF_ERROR_INPUT : rc;
}
// A malloc'd copy (for strings handed to the caller, who free()s them).
char* dup_string(const std::string& s);

}  // namespace ggdiff::api
