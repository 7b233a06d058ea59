// The C API's model handle, shared by the src/api files (the options object and the
// error/string helpers are in c_api_internal.h).
#pragma once

#include <memory>

#include "api/c_api_internal.h"
#include "pipeline/engine.h"

struct ggdiff_model {
    std::unique_ptr<ggdiff::Engine> engine;
    ggdiff::ModelOptions files;  // what it was loaded from (for ggdiff_loaded_model_info)
    // The sound track of the item being handed to on_image (ggdiff_generated_audio).
    std::shared_ptr<const ggdiff::AudioTrack> audio;
};
