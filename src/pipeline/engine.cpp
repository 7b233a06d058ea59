#include "pipeline/engine.h"

#include <filesystem>

#include "core/log.h"
#include "devices/devices.h"
#include "io/model_info.h"
#include "pipeline/model_files.h"
#include "pipeline/placement_setup.h"
#include "pipeline/sd_engine.h"

namespace ggdiff {

Result<std::unique_ptr<Engine>> Engine::load(const ModelOptions& options) {
    // Placement flags are checked before any file is opened.
    auto spec = validate_placement(options);
    if (!spec.ok()) return spec.status();
    auto index = open_model_files(options);
    if (!index.ok()) return index.status();
    ModelInfo info = summarize(*index);
    if (info.family == "sd1" || info.family == "sd2") {
        auto engine = std::make_unique<SdEngine>();
        Status st = engine->init(options, std::move(*index));
        if (!st.ok()) return st;
        return std::unique_ptr<Engine>(std::move(engine));
    }
    if (info.family == "unknown") {
        return Status::Error(
            "cannot tell which model family these files hold (no SD1/SD2 UNet, "
            "text encoder and VAE found); ggdiff -M info lists what is in them");
    }
    return Status::Error(info.family + " models are not supported yet (SD1.x and SD2.x are)");
}

}  // namespace ggdiff
