// The named options behind the C API (and every front end that uses it): one table
// from option name (long CLI flag without dashes) to the field it sets.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "pipeline/options.h"

namespace ggdiff {

struct ApiOptions {
    ModelOptions model;
    GenerateOptions gen;
    std::string rpc_servers;
    std::string init_image_path;
};

// Sets option `name` from its text value; the error names the option and the value.
Status set_api_option(ApiOptions& options, const std::string& name, const std::string& value);
bool is_api_option(const std::string& name);
std::vector<std::string> api_option_names();

// Reads the files an option set refers to (the init image) into the request.
Status resolve_api_inputs(ApiOptions& options);

}  // namespace ggdiff
