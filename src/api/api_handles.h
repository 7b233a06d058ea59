// The C API's opaque handles and its error/string helpers, shared by the src/api files.
#pragma once

#include <memory>
#include <string>

#include "api/api_options.h"
#include "core/status.h"
#include "pipeline/engine.h"

struct ggdiff_options {
    ggdiff::ApiOptions opts;
};

struct ggdiff_model {
    std::unique_ptr<ggdiff::Engine> engine;
    ggdiff::ModelOptions files;  // what it was loaded from (for ggdiff_loaded_model_info)
};

namespace ggdiff::api {

// Records `message` as this thread's ggdiff_last_error() and returns 1.
int fail(const std::string& message);
inline int fail(const Status& st) {
    return fail(st.message());
}

// A malloc'd copy (the C API hands strings to callers who free() them); nullptr when out of
// memory.
char* dup_string(const std::string& s);

}  // namespace ggdiff::api
