// The options object behind the C API: values set by name through the option schema
// (api/option_schema.h), kept typed in ApiOptions.
#pragma once

#include <string>

#include "api/option_schema.h"
#include "core/status.h"

namespace ggdiff {

using api::ApiOptions;

// Sets option `name` from its text value; the error names the option and the value.
Status set_api_option(ApiOptions& options, const std::string& name, const std::string& value);
// Whether `name` is an option the library reads (model loading or generation).
bool is_api_option(const std::string& name);

// Reads the files an option set refers to (the init and reference images) into the request,
// and picks a random seed when the seed is negative.
Status resolve_api_inputs(ApiOptions& options);

// The request the compute buffers are measured with before loading (--auto-fit,
// --fit-dry-run): the options' request plus PhotoMaker's ID images (--pm-id-images-dir), whose
// encoder runs only with them; unreadable ones are left out (generation reports them).
GenerateOptions measuring_request(const ApiOptions& options);

// Options that only work together, checked before any weight is read: --mask needs an
// init image (-i), --control-image needs a ControlNet (--control-net).
Status check_option_pairs(const ApiOptions& options);

// The model options as loading uses them (--offload-to-cpu folded into --params-backend).
ModelOptions effective_model_options(const ApiOptions& options);

}  // namespace ggdiff
